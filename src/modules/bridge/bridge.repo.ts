/** SQL for bridge_transfers. Each step's update is conditional on the status it moves from. */
import type { Db } from "../../db/client.ts";
import type { BridgeStatus } from "./bridge.rules.ts";

export interface BridgeRow {
  id: string;
  reference: string;
  direction: "inbound" | "outbound";
  consumerId: string | null;
  walletId: string | null;
  fromChain: string;
  toChain: string;
  sourceDomain: number;
  destinationDomain: number;
  amount: bigint;
  sender: string;
  recipient: string;
  paymentReference: string | null;
  status: BridgeStatus;
  burnTxHash: string | null;
  burnedAt: Date | null;
  message: string | null;
  attestation: string | null;
  nonce: string | null;
  attestedAt: Date | null;
  attestationAttempts: number;
  attestationState: string | null;
  nextAttestationAt: Date | null;
  mintTxHash: string | null;
  mintedAmount: bigint | null;
  mintedAt: Date | null;
  error: string | null;
  failedAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface NewTransfer {
  reference: string;
  direction: "inbound" | "outbound";
  consumerId: string | null;
  walletId: string | null;
  fromChain: string;
  toChain: string;
  sourceDomain: number;
  destinationDomain: number;
  amount: bigint;
  sender: string;
  recipient: string;
  paymentReference: string | null;
  now: Date;
}

export async function insert(sql: Db, t: NewTransfer): Promise<BridgeRow> {
  const row = await insertIfAbsent(sql, t);
  if (!row) throw new Error(`bridge transfer ${t.reference} already exists`);
  return row;
}

/** Inserts unless the reference exists (a retried request): null when it was already there. */
export async function insertIfAbsent(sql: Db, t: NewTransfer): Promise<BridgeRow | null> {
  const [row] = await sql<BridgeRow[]>`
    insert into bridge_transfers (reference, direction, consumer_id, wallet_id, from_chain,
      to_chain, source_domain, destination_domain, amount, sender, recipient, payment_reference,
      status, created_at, updated_at)
    values (${t.reference}, ${t.direction}, ${t.consumerId}, ${t.walletId}, ${t.fromChain},
      ${t.toChain}, ${t.sourceDomain}, ${t.destinationDomain}, ${t.amount}, ${t.sender},
      ${t.recipient}, ${t.paymentReference}, 'pending', ${t.now}, ${t.now})
    on conflict (reference) do nothing
    returning *`;
  return row ?? null;
}

export async function find(sql: Db, reference: string): Promise<BridgeRow | null> {
  const [row] = await sql<BridgeRow[]>`
    select * from bridge_transfers where reference = ${reference}`;
  return row ?? null;
}

export async function listForConsumer(
  sql: Db,
  consumerId: string,
  limit = 20,
): Promise<BridgeRow[]> {
  return await sql<BridgeRow[]>`
    select * from bridge_transfers where consumer_id = ${consumerId}
    order by created_at desc limit ${limit}`;
}

export async function listOpen(sql: Db, limit = 500): Promise<BridgeRow[]> {
  return await sql<BridgeRow[]>`
    select * from bridge_transfers where status in ('pending', 'burned', 'attested')
    order by created_at limit ${limit}`;
}

/** Open transfers nothing touched since `before` (a step job lost with its worker). */
export async function listStale(sql: Db, before: Date, limit = 500): Promise<BridgeRow[]> {
  return await sql<BridgeRow[]>`
    select * from bridge_transfers where status in ('pending', 'burned', 'attested')
      and updated_at < ${before}
      and (next_attestation_at is null or next_attestation_at < ${before})
    order by created_at limit ${limit}`;
}

export async function markBurned(
  sql: Db,
  reference: string,
  f: { txHash: string; now: Date },
): Promise<boolean> {
  const rows = await sql`
    update bridge_transfers set status = 'burned', burn_tx_hash = ${f.txHash},
      burned_at = ${f.now}, updated_at = ${f.now}
    where reference = ${reference} and status = 'pending' returning 1`;
  return rows.length === 1;
}

export async function recordAttestationWait(
  sql: Db,
  reference: string,
  f: { state: string; nextAt: Date; now: Date },
): Promise<void> {
  await sql`
    update bridge_transfers set attestation_attempts = attestation_attempts + 1,
      attestation_state = ${f.state}, next_attestation_at = ${f.nextAt}, updated_at = ${f.now}
    where reference = ${reference} and status = 'burned'`;
}

export async function markAttested(
  sql: Db,
  reference: string,
  f: { message: string; attestation: string; nonce: string; now: Date },
): Promise<boolean> {
  const rows = await sql`
    update bridge_transfers set status = 'attested', message = ${f.message},
      attestation = ${f.attestation}, nonce = ${f.nonce}, attested_at = ${f.now},
      attestation_attempts = attestation_attempts + 1, attestation_state = 'complete',
      next_attestation_at = null, updated_at = ${f.now}
    where reference = ${reference} and status = 'burned' returning 1`;
  return rows.length === 1;
}

export async function markMinted(
  sql: Db,
  reference: string,
  f: { txHash: string; amount: bigint; now: Date },
): Promise<boolean> {
  const rows = await sql`
    update bridge_transfers set status = 'minted', mint_tx_hash = ${f.txHash},
      minted_amount = ${f.amount}, minted_at = ${f.now}, updated_at = ${f.now}
    where reference = ${reference} and status = 'attested' returning 1`;
  return rows.length === 1;
}

export async function markFailed(
  sql: Db,
  reference: string,
  f: { error: string; now: Date },
): Promise<boolean> {
  const rows = await sql`
    update bridge_transfers set status = 'failed', error = ${f.error}, failed_at = ${f.now},
      updated_at = ${f.now}
    where reference = ${reference} and status in ('pending', 'burned', 'attested') returning 1`;
  return rows.length === 1;
}
