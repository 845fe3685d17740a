/** SQL for x402 listings and paid-call attempts. */
import type { Db, Sql } from "../../db/client.ts";
import type { Address, X402PaymentRecord, X402PaymentStatus, X402Scheme } from "./x402.types.ts";
import type { HttpMethod } from "./x402.rules.ts";

export interface ListingRow {
  id: string;
  merchantId: string;
  slug: string;
  upstreamUrl: string;
  price: bigint;
  methods: HttpMethod[];
  description: string | null;
  seller: Address;
  chainId: number;
  createdAt: Date;
}

export interface NewListing {
  merchantId: string;
  slug: string;
  upstreamUrl: string;
  price: bigint;
  methods: HttpMethod[];
  description: string | null;
  seller: string;
  chainId: number;
  now: Date;
}

const LISTING_COLUMNS = (sql: Db) =>
  sql`id, merchant_id, slug, upstream_url, price, methods, description, seller, chain_id,
      created_at`;

/** The new listing, or null when the slug is taken. */
export async function insertListing(sql: Db, l: NewListing): Promise<ListingRow | null> {
  const [row] = await sql<ListingRow[]>`
    insert into x402_listings (merchant_id, slug, upstream_url, price, methods, description,
                               seller, chain_id, created_at)
    values (${l.merchantId}, ${l.slug}, ${l.upstreamUrl}, ${l.price}, ${l.methods},
            ${l.description}, ${l.seller}, ${l.chainId}, ${l.now})
    on conflict (slug) do nothing
    returning ${LISTING_COLUMNS(sql)}`;
  return row ?? null;
}

export async function findListing(sql: Db, slug: string): Promise<ListingRow | null> {
  const [row] = await sql<ListingRow[]>`
    select ${LISTING_COLUMNS(sql)} from x402_listings where slug = ${slug}`;
  return row ?? null;
}

export async function listListings(
  sql: Db,
  opts: { merchantId?: string; limit: number },
): Promise<ListingRow[]> {
  return await sql<ListingRow[]>`
    select ${LISTING_COLUMNS(sql)} from x402_listings
    ${opts.merchantId ? sql`where merchant_id = ${opts.merchantId}` : sql``}
    order by seq desc limit ${opts.limit}`;
}

/** Whether one of the merchant's listings pays `seller`. */
export async function isSellerOf(sql: Db, merchantId: string, seller: string): Promise<boolean> {
  const [row] = await sql<{ yes: boolean }[]>`
    select exists(select 1 from x402_listings where merchant_id = ${merchantId}
                  and seller = ${seller}) as yes`;
  return row.yes;
}

export interface ListingStats {
  listingId: string;
  calls: number;
  failed: number;
  revenue: bigint;
}

export async function listingStats(sql: Db, listingIds: string[]): Promise<ListingStats[]> {
  if (listingIds.length === 0) return [];
  return await sql<ListingStats[]>`
    select listing_id,
           count(*) filter (where status = 'SUCCESS')::int as calls,
           count(*) filter (where status = 'FAILED')::int as failed,
           coalesce(sum(amount) filter (where status = 'SUCCESS'), 0)::bigint as revenue
    from x402_payments where listing_id in ${sql(listingIds)}
    group by listing_id`;
}

export interface NewAttempt {
  listingId: string | null;
  listingSlug: string | null;
  merchantId: string | null;
  scheme: X402Scheme;
  chainId: number;
  payer: string;
  payee: string;
  amount: bigint;
  nonce: string;
  validAfter: bigint;
  validBefore: bigint;
  agentId: string | null;
  now: Date;
}

const PAYMENT_COLUMNS = (sql: Db) =>
  sql`id, listing_id, listing_slug, merchant_id, scheme, chain_id, payer, payee, amount, nonce,
      agent_id, status, error, upstream_status, tx_hash, created_at, settled_at`;

/** What the payer has in flight (PENDING attempts): not yet spent on chain, already promised. */
export async function pendingAmount(sql: Db, chainId: number, payer: string): Promise<bigint> {
  const [row] = await sql<{ total: bigint }[]>`
    select coalesce(sum(amount), 0)::bigint as total from x402_payments
    where chain_id = ${chainId} and payer = ${payer} and status = 'PENDING'`;
  return row.total;
}

/** A PENDING attempt, or null when this (payer, nonce) is already in flight or spent. */
export async function claimAttempt(sql: Db, a: NewAttempt): Promise<X402PaymentRecord | null> {
  const [row] = await sql<X402PaymentRecord[]>`
    insert into x402_payments (listing_id, listing_slug, merchant_id, scheme, chain_id, payer,
                               payee, amount, nonce, valid_after, valid_before, agent_id, status,
                               created_at)
    values (${a.listingId}, ${a.listingSlug}, ${a.merchantId}, ${a.scheme}, ${a.chainId},
            ${a.payer}, ${a.payee}, ${a.amount}, ${a.nonce}, ${a.validAfter}, ${a.validBefore},
            ${a.agentId}, 'PENDING', ${a.now})
    on conflict (chain_id, scheme, payer, nonce) where status <> 'FAILED' do nothing
    returning ${PAYMENT_COLUMNS(sql)}`;
  return row ?? null;
}

export async function finishAttempt(
  sql: Db,
  id: string,
  f: {
    status: Exclude<X402PaymentStatus, "PENDING">;
    error?: string | null;
    upstreamStatus?: number | null;
    txHash?: string | null;
    now: Date;
  },
): Promise<X402PaymentRecord> {
  const [row] = await sql<X402PaymentRecord[]>`
    update x402_payments set status = ${f.status}, error = ${f.error ?? null},
      upstream_status = ${f.upstreamStatus ?? null}, tx_hash = ${f.txHash ?? null},
      settled_at = ${f.status === "SUCCESS" ? f.now : null}
    where id = ${id}
    returning ${PAYMENT_COLUMNS(sql)}`;
  return row;
}

/** PENDING attempts created before `before`: abandoned by a crash or a settlement timeout. */
export async function stalePending(
  sql: Db,
  before: Date,
  limit: number,
): Promise<X402PaymentRecord[]> {
  return await sql<X402PaymentRecord[]>`
    select ${PAYMENT_COLUMNS(sql)} from x402_payments
    where status = 'PENDING' and created_at < ${before}
    order by seq limit ${limit}`;
}

/** A settled attempt of this (payer, nonce), if any. */
export async function findSettled(
  sql: Db,
  k: { chainId: number; scheme: X402Scheme; payer: string; nonce: string },
): Promise<X402PaymentRecord | null> {
  const [row] = await sql<X402PaymentRecord[]>`
    select ${PAYMENT_COLUMNS(sql)} from x402_payments
    where chain_id = ${k.chainId} and scheme = ${k.scheme} and payer = ${k.payer}
      and nonce = ${k.nonce} and status = 'SUCCESS'`;
  return row ?? null;
}

export async function paymentsByAgent(
  sql: Db,
  agentId: string,
  limit: number,
): Promise<X402PaymentRecord[]> {
  return await sql<X402PaymentRecord[]>`
    select ${PAYMENT_COLUMNS(sql)} from x402_payments where agent_id = ${agentId}
    order by seq desc limit ${limit}`;
}

export async function agentTotals(sql: Db, agentId: string) {
  const [row] = await sql<
    { count: number; settledCount: number; failedCount: number; settledAmount: bigint }[]
  >`
    select count(*)::int as count,
           count(*) filter (where status = 'SUCCESS')::int as settled_count,
           count(*) filter (where status = 'FAILED')::int as failed_count,
           coalesce(sum(amount) filter (where status = 'SUCCESS'), 0)::bigint as settled_amount
    from x402_payments where agent_id = ${agentId}`;
  return row;
}

export async function paymentsForMerchant(
  sql: Db,
  merchantId: string,
  limit: number,
): Promise<X402PaymentRecord[]> {
  return await sql<X402PaymentRecord[]>`
    select ${PAYMENT_COLUMNS(sql)} from x402_payments where merchant_id = ${merchantId}
    order by seq desc limit ${limit}`;
}

export type { Sql };
