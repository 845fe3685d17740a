/** SQL for bridge_transfers. Each step's update is conditional on the status it moves from. */
import type { Db } from "../../db/client.ts";
import type { BridgeStatus, TransferSpeed } from "./bridge.rules.ts";

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
  transferSpeed: TransferSpeed;
  /** Null on rows from before fees: the amount itself (`burnAmountOf`). */
  burnAmount: bigint | null;
  maxFee: bigint;
  feeExecuted: bigint | null;
  finalityExecuted: number | null;
  feeCollected: bigint | null;
  burnMode: BurnMode;
  /** `payer_authorization`: the shopper's signed EIP-3009 authorization, until it is relayed. */
  payerAuthorization: PayerAuthorization | null;
}

/** Who burns: our sender, our relayer with the shopper's signature, or the shopper's wallet. */
export type BurnMode = "service" | "payer_authorization" | "payer_wallet";

/** Kept as JSON: decimal strings for the numbers. */
export interface PayerAuthorization {
  from: string;
  validAfter: string;
  validBefore: string;
  nonce: string;
  signature: string;
}

/** What the transfer burns on the source chain. */
export const burnAmountOf = (t: BridgeRow): bigint => t.burnAmount ?? t.amount;

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
  transferSpeed: TransferSpeed;
  burnAmount: bigint;
  maxFee: bigint;
  now: Date;
  /** Default `service`. */
  burnMode?: BurnMode;
  payerAuthorization?: PayerAuthorization;
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
      transfer_speed, burn_amount, max_fee, status, created_at, updated_at, burn_mode,
      payer_authorization)
    values (${t.reference}, ${t.direction}, ${t.consumerId}, ${t.walletId}, ${t.fromChain},
      ${t.toChain}, ${t.sourceDomain}, ${t.destinationDomain}, ${t.amount}, ${t.sender},
      ${t.recipient}, ${t.paymentReference}, ${t.transferSpeed}, ${t.burnAmount}, ${t.maxFee},
      'pending', ${t.now}, ${t.now}, ${t.burnMode ?? "service"},
      ${t.payerAuthorization ? sql.json(t.payerAuthorization as never) : null})
    on conflict (reference) do nothing
    returning *`;
  return row ?? null;
}

/**
 * A burn the shopper's wallet made and reported, recorded as `burned`. Null when that burn is
 * already recorded (a repeated or concurrent report): the caller reads the first.
 */
export async function insertReportedBurn(
  sql: Db,
  t: NewTransfer & { burnTxHash: string },
): Promise<BridgeRow | null> {
  const [row] = await sql<BridgeRow[]>`
    insert into bridge_transfers (reference, direction, from_chain, to_chain, source_domain,
      destination_domain, amount, sender, recipient, payment_reference, transfer_speed,
      burn_amount, max_fee, status, burn_tx_hash, burned_at, created_at, updated_at, burn_mode)
    values (${t.reference}, 'inbound', ${t.fromChain}, ${t.toChain}, ${t.sourceDomain},
      ${t.destinationDomain}, ${t.amount}, ${t.sender}, ${t.recipient}, ${t.paymentReference},
      ${t.transferSpeed}, ${t.burnAmount}, ${t.maxFee}, 'burned', ${t.burnTxHash}, ${t.now},
      ${t.now}, ${t.now}, 'payer_wallet')
    on conflict (from_chain, burn_tx_hash) where burn_mode = 'payer_wallet' do nothing
    returning *`;
  return row ?? null;
}

/** The transfer that recorded this burn on `fromChain`, whoever burned. */
export async function findByBurn(
  sql: Db,
  fromChain: string,
  burnTxHash: string,
): Promise<BridgeRow | null> {
  const [row] = await sql<BridgeRow[]>`
    select * from bridge_transfers
    where from_chain = ${fromChain} and burn_tx_hash = ${burnTxHash}
    order by created_at limit 1`;
  return row ?? null;
}

/** The transfer a shopper's authorization (`from`, `nonce`) started for a payment, if any. */
export async function findByAuthorization(
  sql: Db,
  paymentReference: string,
  from: string,
  nonce: string,
): Promise<BridgeRow | null> {
  const [row] = await sql<BridgeRow[]>`
    select * from bridge_transfers
    where payment_reference = ${paymentReference} and burn_mode = 'payer_authorization'
      and payer_authorization ->> 'from' = ${from}
      and payer_authorization ->> 'nonce' = ${nonce}
    order by created_at desc limit 1`;
  return row ?? null;
}

/** The transfers under way for a payment (a shopper's own burns included). */
export async function openForPayment(sql: Db, paymentReference: string): Promise<BridgeRow[]> {
  return await sql<BridgeRow[]>`
    select * from bridge_transfers
    where payment_reference = ${paymentReference} and status in ('pending', 'burned', 'attested')
    order by created_at`;
}

/**
 * What the wallet `sender` still has to burn on `fromChain`: the burn amounts of its transfers
 * accepted and not yet burned (`pending`, burned by our sender from that wallet).
 */
export async function pendingBurns(sql: Db, fromChain: string, sender: string): Promise<bigint> {
  const [row] = await sql<{ total: string }[]>`
    select coalesce(sum(coalesce(burn_amount, amount)), 0)::text as total
    from bridge_transfers
    where status = 'pending' and from_chain = ${fromChain} and sender = ${sender.toLowerCase()}
      and burn_mode = 'service'`;
  return BigInt(row.total);
}

export async function find(sql: Db, reference: string): Promise<BridgeRow | null> {
  const [row] = await sql<BridgeRow[]>`
    select * from bridge_transfers where reference = ${reference}`;
  return row ?? null;
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
  f: {
    message: string;
    attestation: string;
    nonce: string;
    feeExecuted: bigint;
    finalityExecuted: number;
    now: Date;
  },
): Promise<boolean> {
  const rows = await sql`
    update bridge_transfers set status = 'attested', message = ${f.message},
      attestation = ${f.attestation}, nonce = ${f.nonce}, attested_at = ${f.now},
      fee_executed = ${f.feeExecuted}, finality_executed = ${f.finalityExecuted},
      attestation_attempts = attestation_attempts + 1, attestation_state = 'complete',
      next_attestation_at = null, updated_at = ${f.now}
    where reference = ${reference} and status = 'burned' returning 1`;
  return rows.length === 1;
}

export async function markMinted(
  sql: Db,
  reference: string,
  f: { txHash: string; amount: bigint; fee: bigint | null; now: Date },
): Promise<boolean> {
  const rows = await sql`
    update bridge_transfers set status = 'minted', mint_tx_hash = ${f.txHash},
      minted_amount = ${f.amount}, fee_collected = ${f.fee}, minted_at = ${f.now},
      updated_at = ${f.now}
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
