/** SQL for payments and unmatched settlements. */
import type { Db } from "../../db/client.ts";
import type { PaymentKind, PaymentRow, PaymentStatus } from "./payments.rules.ts";
import { statusIn } from "../../db/by-id.ts";

export interface NewPayment {
  reference: string;
  merchantId: string;
  kind: PaymentKind;
  amount: bigint;
  currency: string;
  description: string | null;
  chainId: number;
  payTo: string;
  webhookUrl: string | null;
  metadata: unknown;
  expiresAt: Date;
  now: Date;
}

export async function insertPayment(sql: Db, p: NewPayment): Promise<PaymentRow> {
  const [row] = await sql<PaymentRow[]>`
    insert into payments (reference, merchant_id, kind, amount, currency, description, chain_id, pay_to,
                          status, webhook_url, metadata, expires_at, created_at, updated_at)
    values (${p.reference}, ${p.merchantId}, ${p.kind}, ${p.amount}, ${p.currency}, ${p.description},
            ${p.chainId}, ${p.payTo}, 'PENDING', ${p.webhookUrl},
            ${
    p.metadata === undefined || p.metadata === null ? null : sql.json(p.metadata as never)
  },
            ${p.expiresAt}, ${p.now}, ${p.now})
    returning *`;
  return row;
}

// A known cross-table read (docs/decisions.md, "Tidy-core"): the public checkout page shows the
// merchant's business name with the payment, read in the same query on every page view.
const WITH_MERCHANT = (sql: Db) =>
  sql`select p.*, m.business_name as merchant_name from payments p join merchants m on m.id = p.merchant_id`;

export async function findById(sql: Db, id: string): Promise<PaymentRow | null> {
  const [row] = await sql<PaymentRow[]>`select * from payments where id = ${id}`;
  return row ?? null;
}

export async function findByReference(sql: Db, reference: string): Promise<PaymentRow | null> {
  const [row] = await sql<PaymentRow[]>`${WITH_MERCHANT(sql)} where p.reference = ${reference}`;
  return row ?? null;
}

export async function lockByReference(sql: Db, reference: string): Promise<PaymentRow | null> {
  const [row] = await sql<
    PaymentRow[]
  >`select * from payments where reference = ${reference} for update`;
  return row ?? null;
}

export async function findForMerchant(
  sql: Db,
  merchantId: string,
  reference: string,
  chainIds: number[],
): Promise<PaymentRow | null> {
  const [row] = await sql<PaymentRow[]>`
    ${WITH_MERCHANT(sql)}
    where p.merchant_id = ${merchantId} and p.reference = ${reference} and p.chain_id = any(${chainIds})`;
  return row ?? null;
}

export interface PageQuery {
  /** Statuses are as of now: PENDING past its deadline counts as EXPIRED. */
  now: Date;
  merchantId: string;
  chainIds: number[];
  status?: PaymentStatus;
  kind?: PaymentKind;
  reference?: string;
  /** Keyset: rows strictly older than this (created_at, id). */
  before?: { createdAt: Date; id: string };
  limit: number;
}

export async function listForMerchant(sql: Db, q: PageQuery): Promise<PaymentRow[]> {
  return await sql<PaymentRow[]>`
    ${WITH_MERCHANT(sql)}
    where p.merchant_id = ${q.merchantId} and p.chain_id = any(${q.chainIds})
      ${statusFilter(sql, q.status, q.now)}
      ${q.kind ? sql`and p.kind = ${q.kind}` : sql``}
      ${
    q.reference
      ? sql`and p.reference ilike ${"%" + q.reference.replace(/[%_\\]/g, "\\$&") + "%"}`
      : sql``
  }
      ${
    q.before ? sql`and (p.created_at, p.id) < (${q.before.createdAt}, ${q.before.id}::uuid)` : sql``
  }
    order by p.created_at desc, p.id desc
    limit ${q.limit}`;
}

export async function markSettled(
  sql: Db,
  id: string,
  f: { payer: string; txHash: string; now: Date; late: boolean },
): Promise<void> {
  await sql`
    update payments set status = 'SUCCESS', payer = ${f.payer}, chain_tx_hash = ${f.txHash},
      settled_at = ${f.now}, settled_after_expiry = ${f.late}, failure_reason = null,
      updated_at = ${f.now}
    where id = ${id}`;
}

export async function expireDue(sql: Db, now: Date, limit = 1000): Promise<number> {
  const rows = await sql`
    update payments set status = 'EXPIRED', updated_at = ${now}
    where id in (
      select id from payments where status = 'PENDING' and expires_at <= ${now}
      order by expires_at limit ${limit} for update skip locked
    ) returning 1`;
  return rows.length;
}

export async function recordSubmitted(
  sql: Db,
  id: string,
  txHash: string,
  now: Date,
): Promise<boolean> {
  const rows = await sql`
    update payments set submitted_tx_hash = ${txHash}, updated_at = ${now}
    where id = ${id} and ${statusIn(sql, "status", ["PENDING"])} returning 1`;
  return rows.length === 1;
}

/**
 * A reported transaction for this payment reverted: its reason is kept for the page and the
 * dashboard, and the payment stays PENDING (anyone can make such a transaction).
 */
export async function recordRevertedAttempt(
  sql: Db,
  id: string,
  reason: string,
  now: Date,
): Promise<boolean> {
  const rows = await sql`
    update payments set failure_reason = ${reason}, updated_at = ${now}
    where id = ${id} and ${statusIn(sql, "status", ["PENDING"])} returning 1`;
  return rows.length === 1;
}

export async function insertUnmatched(
  sql: Db,
  u: {
    chainId: number;
    txHash: string;
    logIndex: number;
    reference: string;
    payer: string;
    payTo: string;
    amount: bigint;
    reason: string;
    blockNumber: bigint;
  },
): Promise<void> {
  await sql`
    insert into unmatched_settlements (chain_id, tx_hash, log_index, reference, payer, pay_to, amount, reason, block_number)
    values (${u.chainId}, ${u.txHash}, ${u.logIndex}, ${u.reference}, ${u.payer}, ${u.payTo}, ${u.amount},
            ${u.reason}, ${u.blockNumber})
    on conflict do nothing`;
}

/** Daily settled volume over a window, for the dashboard chart. */
export async function dailyVolume(
  sql: Db,
  merchantId: string,
  since: Date,
  chainIds: number[],
): Promise<{ day: Date; volume: bigint; count: number }[]> {
  return await sql<{ day: Date; volume: bigint; count: number }[]>`
    select date_trunc('day', settled_at, 'UTC') as day, sum(amount)::bigint as volume,
           count(*)::int as count
    from payments
    where merchant_id = ${merchantId} and status = 'SUCCESS' and settled_at >= ${since}
      and chain_id = any(${chainIds})
    group by 1 order by 1`;
}

function statusFilter(sql: Db, status: PaymentStatus | undefined, now: Date) {
  if (!status) return sql``;
  if (status === "PENDING") return sql`and p.status = 'PENDING' and p.expires_at > ${now}`;
  if (status === "EXPIRED") {
    return sql`and (p.status = 'EXPIRED' or (p.status = 'PENDING' and p.expires_at <= ${now}))`;
  }
  return sql`and p.status = ${status}`;
}

/**
 * Whether a cross-chain transfer for this payment is under way (bridge_transfers, the bridge
 * module's table, read here by key only: the one question checkout asks of it before it offers a
 * same-chain payment, so the two ways to pay never both go through).
 */
export async function bridgeUnderWay(sql: Db, reference: string): Promise<boolean> {
  const [row] = await sql<{ under: boolean }[]>`
    select exists(
      select 1 from bridge_transfers
      where payment_reference = ${reference} and status in ('pending', 'burned', 'attested')
    ) as under`;
  return row.under;
}
