/** SQL for escrows. */
import type { Db } from "../../db/client.ts";
import type { EscrowOutcome, EscrowRow, EscrowStatus } from "./escrow.rules.ts";

export interface NewEscrow {
  reference: string;
  merchantId: string;
  chainId: number;
  amount: bigint;
  depositor: string;
  depositorWalletId: string;
  beneficiary: string;
  description: string | null;
  webhookUrl: string | null;
  expiresAt: Date;
  txHash: string;
  now: Date;
}

/** The escrow's row (null when it exists already: another process completed its creation). */
export async function insert(sql: Db, e: NewEscrow): Promise<EscrowRow | null> {
  const [row] = await sql<EscrowRow[]>`
    insert into escrows (reference, merchant_id, chain_id, status, amount, depositor,
                         depositor_wallet_id, beneficiary, description, webhook_url, expires_at,
                         tx_hash, created_at, updated_at)
    values (${e.reference}, ${e.merchantId}, ${e.chainId}, 'ACTIVE', ${e.amount}, ${e.depositor},
            ${e.depositorWalletId}, ${e.beneficiary}, ${e.description}, ${e.webhookUrl},
            ${e.expiresAt}, ${e.txHash}, ${e.now}, ${e.now})
    on conflict (reference) do nothing
    returning *`;
  return row ?? null;
}

/** One of the merchant's escrows on one chain (the credential's environment). */
export async function findForMerchant(
  sql: Db,
  merchantId: string,
  chainId: number,
  reference: string,
): Promise<EscrowRow | null> {
  const [row] = await sql<EscrowRow[]>`
    select * from escrows
    where merchant_id = ${merchantId} and chain_id = ${chainId} and reference = ${reference}`;
  return row ?? null;
}

export async function findByReference(sql: Db, reference: string): Promise<EscrowRow | null> {
  const [row] = await sql<EscrowRow[]>`select * from escrows where reference = ${reference}`;
  return row ?? null;
}

/** The row locked for a state change (in the caller's transaction). */
export async function lockByReference(sql: Db, reference: string): Promise<EscrowRow | null> {
  const [row] = await sql<EscrowRow[]>`
    select * from escrows where reference = ${reference} for update`;
  return row ?? null;
}

export async function listForMerchant(
  sql: Db,
  merchantId: string,
  chainId: number,
  opts: { status?: EscrowStatus; limit: number },
): Promise<EscrowRow[]> {
  return await sql<EscrowRow[]>`
    select * from escrows where merchant_id = ${merchantId} and chain_id = ${chainId}
    ${opts.status ? sql`and status = ${opts.status}` : sql``}
    order by seq desc limit ${opts.limit}`;
}

export async function markReleased(sql: Db, id: string, txHash: string, now: Date) {
  await sql`update escrows set status = 'RELEASED', release_tx_hash = ${txHash},
    released_at = ${now}, updated_at = ${now} where id = ${id}`;
}

export async function markConfirmed(sql: Db, id: string, txHash: string, now: Date) {
  await sql`update escrows set confirmed_at = ${now}, confirm_tx_hash = ${txHash},
    updated_at = ${now} where id = ${id}`;
}

export async function markDisputed(
  sql: Db,
  id: string,
  d: { reason: string | null; by: string; txHash: string; now: Date },
) {
  await sql`update escrows set status = 'DISPUTED', dispute_reason = ${d.reason},
    disputed_by = ${d.by}, dispute_tx_hash = ${d.txHash}, disputed_at = ${d.now},
    updated_at = ${d.now} where id = ${id}`;
}

export async function markResolved(
  sql: Db,
  id: string,
  r: { outcome: EscrowOutcome; txHash: string; now: Date },
) {
  const status = r.outcome === "released" ? "RELEASED" : "REFUNDED";
  await sql`update escrows set status = ${status}, resolution = ${r.outcome},
    resolve_tx_hash = ${r.txHash}, resolved_at = ${r.now}, updated_at = ${r.now}
    where id = ${id}`;
}

export async function markRefunded(sql: Db, id: string, txHash: string, now: Date) {
  await sql`update escrows set status = 'REFUNDED', refund_tx_hash = ${txHash},
    refunded_at = ${now}, updated_at = ${now} where id = ${id}`;
}

/** ACTIVE escrows past expiry (the refund sweep). */
export async function dueForRefund(sql: Db, now: Date, limit: number): Promise<string[]> {
  const rows = await sql<{ reference: string }[]>`
    select reference from escrows where status = 'ACTIVE' and expires_at <= ${now}
    order by expires_at limit ${limit}`;
  return rows.map((r) => r.reference);
}

/** A page of open escrows (ACTIVE or DISPUTED) after `afterSeq`, in creation order (catch-up). */
export async function openPage(
  sql: Db,
  afterSeq: bigint,
  limit: number,
): Promise<
  Array<
    Pick<EscrowRow, "reference" | "chainId" | "status" | "confirmedAt"> & {
      seq: bigint;
    }
  >
> {
  return await sql`
    select reference, chain_id, status, confirmed_at, seq from escrows
    where status in ('ACTIVE', 'DISPUTED') and seq > ${afterSeq}
    order by seq limit ${limit}`;
}

/** Records a dispute's reason before its transaction is sent (kept once per reason hash). */
export async function recordDisputeReason(
  sql: Db,
  r: { reference: string; reasonHash: string; reason: string; now: Date },
) {
  await sql`insert into escrow_dispute_reasons (reference, reason_hash, reason, created_at)
    values (${r.reference}, ${r.reasonHash.toLowerCase()}, ${r.reason}, ${r.now})
    on conflict do nothing`;
}

/** The reason recorded for a dispute of this escrow whose hash is `reasonHash`, if any. */
export async function disputeReason(
  sql: Db,
  reference: string,
  reasonHash: string,
): Promise<string | null> {
  const [row] = await sql<{ reason: string }[]>`
    select reason from escrow_dispute_reasons
    where reference = ${reference} and reason_hash = ${reasonHash.toLowerCase()}`;
  return row?.reason ?? null;
}

/** A creation's intent: every term of the escrow, recorded before its transaction is signed. */
export interface CreateIntent {
  reference: string;
  merchantId: string;
  chainId: number;
  amount: bigint;
  depositor: string;
  depositorWalletId: string;
  beneficiary: string;
  description: string | null;
  webhookUrl: string | null;
  expiresAt: Date;
  status: "pending" | "completed" | "abandoned";
  createdAt: Date;
}

export async function insertCreate(
  sql: Db,
  c: Omit<CreateIntent, "status">,
): Promise<void> {
  await sql`
    insert into escrow_creates (reference, merchant_id, chain_id, amount, depositor,
      depositor_wallet_id, beneficiary, description, webhook_url, expires_at, status, created_at,
      updated_at)
    values (${c.reference}, ${c.merchantId}, ${c.chainId}, ${c.amount}, ${c.depositor},
      ${c.depositorWalletId}, ${c.beneficiary}, ${c.description}, ${c.webhookUrl},
      ${c.expiresAt}, 'pending', ${c.createdAt}, ${c.createdAt})`;
}

const CREATE = `reference, merchant_id, chain_id, amount, depositor, depositor_wallet_id,
  beneficiary, description, webhook_url, expires_at, status, created_at`;

export async function findCreate(sql: Db, reference: string): Promise<CreateIntent | null> {
  const [row] = await sql<CreateIntent[]>`
    select ${sql.unsafe(CREATE)} from escrow_creates where reference = ${reference}`;
  return row ?? null;
}

/** Pending creations, oldest first (of one depositor wallet, when given). */
export async function pendingCreates(
  sql: Db,
  opts: { depositorWalletId?: string; limit: number },
): Promise<CreateIntent[]> {
  return await sql<CreateIntent[]>`
    select ${sql.unsafe(CREATE)} from escrow_creates where status = 'pending'
    ${opts.depositorWalletId ? sql`and depositor_wallet_id = ${opts.depositorWalletId}` : sql``}
    order by created_at, reference limit ${opts.limit}`;
}

/** Ends a pending creation; false when it was not pending any more. */
export async function endCreate(
  sql: Db,
  reference: string,
  status: "completed" | "abandoned",
  error: string | null,
  now: Date,
): Promise<boolean> {
  const rows = await sql`
    update escrow_creates set status = ${status}, error = ${error}, updated_at = ${now}
    where reference = ${reference} and status = 'pending' returning reference`;
  return rows.length === 1;
}

/** Marks a creation completed whatever it was (its transaction was mined after all). */
export async function completeCreate(sql: Db, reference: string, now: Date): Promise<void> {
  await sql`
    update escrow_creates set status = 'completed', error = null, updated_at = ${now}
    where reference = ${reference} and status <> 'completed'`;
}

/**
 * The reference a create request key names (migration 0028): `reference` when the key is new,
 * else the one recorded first.
 */
export async function claimCreateRequest(
  sql: Db,
  r: { merchantId: string; keyHash: string; reference: string },
): Promise<string> {
  await sql`
    insert into escrow_create_requests (merchant_id, key_hash, reference)
    values (${r.merchantId}, ${r.keyHash}, ${r.reference})
    on conflict (merchant_id, key_hash) do nothing`;
  const [row] = await sql<{ reference: string }[]>`
    select reference from escrow_create_requests
    where merchant_id = ${r.merchantId} and key_hash = ${r.keyHash}`;
  return row.reference;
}

/** Points a request key at a new reference after its first attempt was abandoned. */
export async function moveCreateRequest(
  sql: Db,
  r: { merchantId: string; keyHash: string; from: string; to: string },
): Promise<void> {
  await sql`
    update escrow_create_requests set reference = ${r.to}
    where merchant_id = ${r.merchantId} and key_hash = ${r.keyHash} and reference = ${r.from}`;
}
