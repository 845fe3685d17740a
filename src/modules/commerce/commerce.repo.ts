/** SQL for ERC-8183 jobs. */
import type { Db } from "../../db/client.ts";
import type { JobRow, JobStatus } from "./commerce.rules.ts";

export interface NewJob {
  chainId: number;
  contractAddress: string;
  jobId: string;
  merchantId: string;
  client: string;
  clientWalletId: string;
  provider: string;
  evaluator: string;
  budget: bigint;
  description: string;
  expiresAt: Date;
  createTxHash: string;
  budgetTxHash: string;
  now: Date;
}

export async function insert(sql: Db, j: NewJob): Promise<JobRow> {
  const [row] = await sql<JobRow[]>`
    insert into commerce_jobs (chain_id, contract_address, job_id, merchant_id, client,
      client_wallet_id, provider, evaluator, budget, description, expires_at, status,
      create_tx_hash, budget_tx_hash, created_at, updated_at)
    values (${j.chainId}, ${j.contractAddress}, ${j.jobId}, ${j.merchantId}, ${j.client},
      ${j.clientWalletId}, ${j.provider}, ${j.evaluator}, ${j.budget}, ${j.description},
      ${j.expiresAt}, 'OPEN', ${j.createTxHash}, ${j.budgetTxHash}, ${j.now}, ${j.now})
    on conflict (chain_id, contract_address, job_id) do nothing
    returning *`;
  // A retried create whose first attempt already recorded the job finds that row.
  return row ?? (await find(sql, j))!;
}

export async function find(
  sql: Db,
  key: { chainId: number; contractAddress: string; jobId: string },
): Promise<JobRow | null> {
  const [row] = await sql<JobRow[]>`
    select * from commerce_jobs where chain_id = ${key.chainId}
      and contract_address = ${key.contractAddress} and job_id = ${key.jobId}`;
  return row ?? null;
}

export interface JobChange {
  status: JobStatus;
  approveTxHash?: string | null;
  fundTxHash?: string;
  submitTxHash?: string;
  deliverableData?: string;
  deliverableHash?: string;
  completeTxHash?: string;
  rejectTxHash?: string;
  refundTxHash?: string;
  reason?: string;
  reasonHash?: string;
}

const COLUMNS: Record<Exclude<keyof JobChange, "status">, string> = {
  approveTxHash: "approve_tx_hash",
  fundTxHash: "fund_tx_hash",
  submitTxHash: "submit_tx_hash",
  deliverableData: "deliverable_data",
  deliverableHash: "deliverable_hash",
  completeTxHash: "complete_tx_hash",
  rejectTxHash: "reject_tx_hash",
  refundTxHash: "refund_tx_hash",
  reason: "reason",
  reasonHash: "reason_hash",
};

function columns(change: JobChange): Record<string, unknown> {
  const values: Record<string, unknown> = { status: change.status };
  for (const [k, column] of Object.entries(COLUMNS)) {
    const v = change[k as keyof typeof COLUMNS];
    if (v !== undefined) values[column] = v;
  }
  return values;
}

/**
 * Moves the row forward to what the chain holds, if it is still in `from` (a concurrent writer
 * that got there first wins; a row never moves back).
 */
export async function catchUp(
  sql: Db,
  id: string,
  from: JobStatus,
  change: JobChange,
  now: Date,
): Promise<boolean> {
  const values = { ...columns(change), updated_at: now };
  const rows = await sql`
    update commerce_jobs set ${sql(values)} where id = ${id} and status = ${from} returning id`;
  return rows.length === 1;
}

const pendingCleared = (sql: Db, intent: string) =>
  sql`, pending_action = case when pending_intent = ${intent}
      then null else pending_action end,
    pending_change = case when pending_intent = ${intent} then null else pending_change end,
    pending_at = case when pending_intent = ${intent} then null else pending_at end,
    pending_intent = case when pending_intent = ${intent} then null else pending_intent end`;

export interface PendingAction {
  action: "fund" | "submit" | "complete" | "reject" | "refund";
  intent: string;
  /** The text the row takes once the action is mined (the chain holds only hashes). */
  change: Partial<JobChange>;
}

/** Records the action about to be sent (one statement, before its first transaction). */
export async function markPending(sql: Db, id: string, p: PendingAction) {
  await sql`
    update commerce_jobs set pending_action = ${p.action}, pending_intent = ${p.intent},
      pending_change = ${sql.json(p.change as never)}, pending_at = clock_timestamp()
    where id = ${id}`;
}

/** Forgets the pending action `intent` (refused before anything was sent, or settled). */
export async function clearPending(sql: Db, id: string, intent: string) {
  await sql`
    update commerce_jobs set pending_action = null, pending_intent = null,
      pending_change = null, pending_at = null
    where id = ${id} and pending_intent = ${intent}`;
}

/**
 * The mined action's row change, from one of `from`: status, text and hashes in one statement
 * with the pending action cleared. A row already moved on (a catch-up got there first, or `from`
 * is empty) keeps its status and gets only the fields it lacks. Returns the row as it now is.
 */
export async function applyAction(
  sql: Db,
  id: string,
  from: JobStatus[],
  change: JobChange,
  intent: string,
  now: Date,
): Promise<JobRow> {
  if (from.length > 0) {
    const values = { ...columns(change), updated_at: now };
    const [moved] = await sql<JobRow[]>`
      update commerce_jobs set ${sql(values)}, pending_action = null, pending_intent = null,
        pending_change = null, pending_at = null
      where id = ${id} and status in ${sql(from)} returning *`;
    if (moved) return moved;
  }
  let set = sql`updated_at = ${now}`;
  for (const [k, column] of Object.entries(COLUMNS)) {
    const v = change[k as keyof JobChange];
    if (v === undefined || v === null) continue;
    set = sql`${set}, ${sql(column)} = coalesce(${sql(column)}, ${v})`;
  }
  const [row] = await sql<JobRow[]>`
    update commerce_jobs set ${set} ${pendingCleared(sql, intent)}
    where id = ${id} returning *`;
  return row;
}

/** Jobs whose pending action was recorded over `olderThanMs` ago (the database's clock). */
export async function pendingSince(
  sql: Db,
  olderThanMs: number,
  limit: number,
): Promise<JobRow[]> {
  return await sql<JobRow[]>`
    select * from commerce_jobs where pending_action is not null
      and pending_at <= clock_timestamp() - make_interval(secs => ${olderThanMs / 1000})
    order by pending_at limit ${limit}`;
}

/** Jobs on a chain where the merchant created the job or one of `addresses` is a party. */
export async function listForParties(
  sql: Db,
  opts: { chainIds: number[]; merchantId: string; addresses: string[]; limit: number },
): Promise<JobRow[]> {
  if (opts.chainIds.length === 0) return [];
  return await sql<JobRow[]>`
    select * from commerce_jobs where chain_id in ${sql(opts.chainIds)}
      and (merchant_id = ${opts.merchantId}
        or client = any(${opts.addresses}) or provider = any(${opts.addresses})
        or evaluator = any(${opts.addresses}))
    order by seq desc limit ${opts.limit}`;
}
