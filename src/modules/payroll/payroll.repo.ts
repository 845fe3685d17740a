/** Payroll's SQL. Amounts are bigint base units; addresses lower case. */
import type { Db } from "../../db/client.ts";
import type { BatchRow, BatchStatus, RecipientRow } from "./payroll.types.ts";

const BATCH = `id, merchant_id, batch_ref, profile, chain_id, payer_sca, payer_wallet_kind,
  payer_wallet_id, total_amount, recipient_count, success_count, failed_count,
  pending_signature_count, status, webhook_url, description, request_hash, created_at,
  completed_at`;
const RECIPIENT = `batch_id, idx, recipient_sca, amount, label, memo, chunk, status, tx_hash, error,
  request_id, sign_tx_hash`;

export interface NewRecipient {
  idx: number;
  recipientSca: string;
  amount: bigint;
  label: string | null;
  memo: string | null;
  chunk: number | null;
  status: "PENDING" | "FAILED";
  error: string | null;
}

export async function insertBatch(
  sql: Db,
  b:
    & Omit<
      BatchRow,
      "successCount" | "pendingSignatureCount" | "status" | "completedAt"
    >
    & { requestKeyHash: string | null },
  recipients: NewRecipient[],
): Promise<BatchRow> {
  const [row] = await sql<BatchRow[]>`
    insert into payroll_batches (id, merchant_id, batch_ref, profile, chain_id, payer_sca,
      payer_wallet_kind, payer_wallet_id, total_amount, recipient_count, failed_count, status,
      webhook_url, description, request_key_hash, request_hash, created_at)
    values (${b.id}, ${b.merchantId}, ${b.batchRef}, ${b.profile}, ${b.chainId}, ${b.payerSca},
      ${b.payerWalletKind}, ${b.payerWalletId}, ${b.totalAmount}, ${b.recipientCount},
      ${b.failedCount}, 'PROCESSING', ${b.webhookUrl}, ${b.description}, ${b.requestKeyHash},
      ${b.requestHash}, ${b.createdAt})
    returning ${sql.unsafe(BATCH)}`;
  // One statement for up to 5,000 rows: arrays unnested server-side (no parameter limit).
  await sql`
    insert into payroll_recipients (batch_id, idx, recipient_sca, amount, label, memo, chunk, status,
      error, updated_at)
    select ${row.id}, * , ${b.createdAt}::timestamptz from unnest(
      ${recipients.map((r) => r.idx)}::int[],
      ${recipients.map((r) => r.recipientSca)}::text[],
      ${recipients.map((r) => r.amount.toString())}::bigint[],
      ${recipients.map((r) => r.label)}::text[],
      ${recipients.map((r) => r.memo)}::text[],
      ${recipients.map((r) => r.chunk)}::int[],
      ${recipients.map((r) => r.status)}::text[],
      ${recipients.map((r) => r.error)}::text[])`;
  return row;
}

/** One of the merchant's batches on one chain (the credential's environment). */
export async function findByRef(
  sql: Db,
  merchantId: string,
  chainId: number,
  batchRef: string,
): Promise<BatchRow | null> {
  const [row] = await sql<BatchRow[]>`
    select ${sql.unsafe(BATCH)} from payroll_batches
    where merchant_id = ${merchantId} and chain_id = ${chainId} and batch_ref = ${batchRef}`;
  return row ?? null;
}

export async function findById(sql: Db, id: string): Promise<BatchRow | null> {
  const [row] = await sql<BatchRow[]>`
    select ${sql.unsafe(BATCH)} from payroll_batches where id = ${id}`;
  return row ?? null;
}

export async function findByRequestKey(
  sql: Db,
  merchantId: string,
  chainId: number,
  keyHash: string,
): Promise<BatchRow | null> {
  const [row] = await sql<BatchRow[]>`
    select ${sql.unsafe(BATCH)} from payroll_batches
    where merchant_id = ${merchantId} and chain_id = ${chainId} and request_key_hash = ${keyHash}`;
  return row ?? null;
}

export async function recipients(
  sql: Db,
  batchId: string,
  limit?: number,
): Promise<RecipientRow[]> {
  return await sql<RecipientRow[]>`
    select ${sql.unsafe(RECIPIENT)} from payroll_recipients
    where batch_id = ${batchId} order by idx
    ${limit === undefined ? sql`` : sql`limit ${limit}`}`;
}

/** Recipients still to send on chain, in order. */
export async function pending(sql: Db, batchId: string): Promise<RecipientRow[]> {
  return await sql<RecipientRow[]>`
    select ${sql.unsafe(RECIPIENT)} from payroll_recipients
    where batch_id = ${batchId} and status = 'PENDING' order by idx`;
}

/** Records a chunk's outcomes for recipients still PENDING; the batch's counts follow. */
export async function recordChunk(
  sql: Db,
  batchId: string,
  txHash: string,
  outcomes: { idx: number; ok: boolean }[],
  failedError: string,
  now: Date,
): Promise<{ success: number; failed: number }> {
  const rows = await sql<{ status: string }[]>`
    update payroll_recipients r
    set status = case when u.ok then 'SUCCESS' else 'FAILED' end,
      tx_hash = ${txHash},
      error = case when u.ok then null else ${failedError} end,
      updated_at = ${now}
    from unnest(${outcomes.map((o) => o.idx)}::int[], ${
    outcomes.map((o) => (o.ok ? "t" : "f"))
  }::text[]::bool[])
      as u(idx, ok)
    where r.batch_id = ${batchId} and r.idx = u.idx and r.status = 'PENDING'
    returning r.status`;
  const success = rows.filter((r) => r.status === "SUCCESS").length;
  const failed = rows.length - success;
  await sql`
    update payroll_batches set success_count = success_count + ${success},
      failed_count = failed_count + ${failed}
    where id = ${batchId}`;
  return { success, failed };
}

/** External payer: every PENDING recipient becomes a signature request. */
export async function requestSignatures(sql: Db, batchId: string, now: Date): Promise<number> {
  const rows = await sql`
    update payroll_recipients set status = 'PENDING_SIGNATURE', request_id = gen_random_uuid(),
      updated_at = ${now}
    where batch_id = ${batchId} and status = 'PENDING'
    returning idx`;
  await sql`
    update payroll_batches set pending_signature_count = pending_signature_count + ${rows.length}
    where id = ${batchId}`;
  return rows.length;
}

/** Locks the batch row for the rest of the transaction. */
export async function lockBatch(sql: Db, batchId: string): Promise<void> {
  await sql`select id from payroll_batches where id = ${batchId} for update`;
}

/** The batch's counts from its recipients (the source of truth for the end state). */
export async function counts(sql: Db, batchId: string) {
  const [c] = await sql<
    { success: number; failed: number; pendingSignature: number; pending: number }[]
  >`
    select count(*) filter (where status = 'SUCCESS')::int as success,
      count(*) filter (where status = 'FAILED')::int as failed,
      count(*) filter (where status = 'PENDING_SIGNATURE')::int as pending_signature,
      count(*) filter (where status = 'PENDING')::int as pending
    from payroll_recipients where batch_id = ${batchId}`;
  return c;
}

/** Moves the batch to `status` once: null when it is already there (or terminal). */
export async function finish(
  sql: Db,
  batchId: string,
  status: BatchStatus,
  now: Date,
): Promise<BatchRow | null> {
  const terminal = status !== "AWAITING_SIGNATURES";
  const [row] = await sql<BatchRow[]>`
    update payroll_batches set status = ${status},
      completed_at = ${terminal ? now : null}
    where id = ${batchId} and status in ('PROCESSING', 'AWAITING_SIGNATURES')
      and status <> ${status}
    returning ${sql.unsafe(BATCH)}`;
  return row ?? null;
}

export interface SignRequestRow extends RecipientRow {
  batchRef: string;
  profile: string;
  chainId: number;
  payerSca: string;
  merchantId: string;
  createdAt: Date;
}

const SIGN =
  `r.batch_id, r.idx, r.recipient_sca, r.amount, r.label, r.memo, r.chunk, r.status, r.tx_hash,
  r.error, r.request_id, r.sign_tx_hash, b.batch_ref, b.profile, b.chain_id, b.payer_sca,
  b.merchant_id, b.created_at`;

export async function pendingSignRequests(
  sql: Db,
  merchantId: string,
  chainId: number,
  limit = 500,
): Promise<SignRequestRow[]> {
  return await sql<SignRequestRow[]>`
    select ${sql.unsafe(SIGN)} from payroll_recipients r
    join payroll_batches b on b.id = r.batch_id
    where b.merchant_id = ${merchantId} and b.chain_id = ${chainId}
      and r.status = 'PENDING_SIGNATURE'
    order by b.seq, r.idx limit ${limit}`;
}

export async function findSignRequest(
  sql: Db,
  merchantId: string,
  chainId: number,
  requestId: string,
): Promise<SignRequestRow | null> {
  const [row] = await sql<SignRequestRow[]>`
    select ${sql.unsafe(SIGN)} from payroll_recipients r
    join payroll_batches b on b.id = r.batch_id
    where b.merchant_id = ${merchantId} and b.chain_id = ${chainId}
      and r.request_id = ${requestId}`;
  return row ?? null;
}

/** The signature request a transaction already paid, if any. */
export async function signTxUsedBy(sql: Db, txHash: string): Promise<string | null> {
  const [row] = await sql<{ requestId: string }[]>`
    select request_id from payroll_recipients where sign_tx_hash = ${txHash}`;
  return row?.requestId ?? null;
}

/** Marks a signature request paid by `txHash`; null when it was not pending any more. */
export async function completeSignRequest(
  sql: Db,
  requestId: string,
  txHash: string,
  now: Date,
): Promise<RecipientRow | null> {
  const [row] = await sql<RecipientRow[]>`
    update payroll_recipients set status = 'SUCCESS', tx_hash = ${txHash},
      sign_tx_hash = ${txHash}, updated_at = ${now}
    where request_id = ${requestId} and status = 'PENDING_SIGNATURE'
    returning ${sql.unsafe(RECIPIENT)}`;
  if (!row) return null;
  await sql`
    update payroll_batches set success_count = success_count + 1,
      pending_signature_count = pending_signature_count - 1
    where id = ${row.batchId}`;
  return row;
}

/** The merchant's batches on one chain, newest first. */
export async function listBatches(
  sql: Db,
  merchantId: string,
  chainId: number,
  limit = 20,
): Promise<BatchRow[]> {
  return await sql<BatchRow[]>`
    select ${sql.unsafe(BATCH)} from payroll_batches
    where merchant_id = ${merchantId} and chain_id = ${chainId} order by seq desc limit ${limit}`;
}

/** PROCESSING batches on these chains, oldest first (a worker's start and the sweep resume them). */
export async function processing(
  sql: Db,
  chainIds: number[],
  limit = 500,
): Promise<{ id: string }[]> {
  return await sql<{ id: string }[]>`
    select id from payroll_batches where status = 'PROCESSING' and chain_id = any(${chainIds})
    order by created_at, seq limit ${limit}`;
}
