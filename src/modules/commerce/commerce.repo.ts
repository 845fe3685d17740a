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
  opts: { lock?: boolean } = {},
): Promise<JobRow | null> {
  const [row] = await sql<JobRow[]>`
    select * from commerce_jobs where chain_id = ${key.chainId}
      and contract_address = ${key.contractAddress} and job_id = ${key.jobId}
    ${opts.lock ? sql`for update` : sql``}`;
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

export async function update(sql: Db, id: string, change: JobChange, now: Date) {
  const values: Record<string, unknown> = { status: change.status, updated_at: now };
  for (const [k, column] of Object.entries(COLUMNS)) {
    const v = change[k as keyof typeof COLUMNS];
    if (v !== undefined) values[column] = v;
  }
  await sql`update commerce_jobs set ${sql(values)} where id = ${id}`;
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
