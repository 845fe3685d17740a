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

/**
 * What the payer has in flight, not yet spent on chain but already promised: its PENDING
 * attempts and its gateway-balance charges not yet settled (x402.batched.repo.ts).
 */
export async function pendingAmount(sql: Db, chainId: number, payer: string): Promise<bigint> {
  const [row] = await sql<{ total: bigint }[]>`
    select (
      (select coalesce(sum(amount), 0) from x402_payments
        where chain_id = ${chainId} and payer = ${payer} and status = 'PENDING') +
      (select coalesce(sum(amount), 0) from x402_gateway_charges
        where chain_id = ${chainId} and payer = ${payer} and status in ('reserved', 'pending'))
    )::bigint as total`;
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

/**
 * A PENDING gateway attempt (POST /api/x402/pay) and its hold on the payer's mirrored vault
 * balance (x402_gateway_accounts, shared with the batched charges), in ONE statement: "no_funds"
 * when the mirror (read no earlier than `freshAfter`) has no room, "used" when (payer, nonce) is
 * in flight or spent (the unique index undoes the hold with the insert).
 */
export async function claimGatewayAttempt(
  sql: Db,
  a: NewAttempt,
  freshAfter: Date,
): Promise<X402PaymentRecord | "no_funds" | "used"> {
  try {
    const [row] = await sql<X402PaymentRecord[]>`
      with acct as (
        update x402_gateway_accounts set held = held + ${a.amount}
        where chain_id = ${a.chainId} and payer = ${a.payer}
          and held + ${a.amount} <= balance and synced_at >= ${freshAfter}
          and (withdrawing_until is null or withdrawing_until < ${a.now})
        returning 1
      )
      insert into x402_payments (listing_id, listing_slug, merchant_id, scheme, chain_id, payer,
                                 payee, amount, nonce, valid_after, valid_before, agent_id,
                                 status, created_at)
      select ${a.listingId}, ${a.listingSlug}, ${a.merchantId}, ${a.scheme}, ${a.chainId},
             ${a.payer}, ${a.payee}, ${a.amount}, ${a.nonce}, ${a.validAfter}, ${a.validBefore},
             ${a.agentId}, 'PENDING', ${a.now}
      from acct
      returning ${PAYMENT_COLUMNS(sql)}`;
    return row ?? "no_funds";
  } catch (e) {
    if ((e as { code?: string }).code === "23505") return "used";
    throw e;
  }
}

/**
 * Removes a PENDING attempt that never reached its upstream (its proof turned out used on chain)
 * and gives its hold on the payer's mirror back, in one statement: as if it had never been
 * claimed. An attempt no longer PENDING is left alone.
 */
export async function dropAttempt(sql: Db, id: string): Promise<void> {
  await sql`
    with gone as (
      delete from x402_payments where id = ${id} and status = 'PENDING'
      returning chain_id, payer, amount, scheme
    )
    update x402_gateway_accounts a set held = greatest(a.held - gone.amount, 0)
    from gone
    where gone.scheme = 'gateway' and a.chain_id = gone.chain_id and a.payer = gone.payer`;
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
  // A gateway attempt leaving PENDING gives its hold on the payer's mirror back; settled, it
  // also lowers the mirrored balance (a mirror read after the settlement is then low: safe, and
  // re-read at the next refusal).
  const [row] = await sql<X402PaymentRecord[]>`
    with prev as (
      select id, status as was from x402_payments where id = ${id} for update
    ), upd as (
      update x402_payments p set status = ${f.status}, error = ${f.error ?? null},
        upstream_status = ${f.upstreamStatus ?? null}, tx_hash = ${f.txHash ?? null},
        settled_at = ${f.status === "SUCCESS" ? f.now : null}
      from prev where p.id = prev.id
      returning p.*, prev.was
    ), mirror as (
      update x402_gateway_accounts a set held = greatest(a.held - upd.amount, 0),
        balance = case when ${f.status} = 'SUCCESS' then greatest(a.balance - upd.amount, 0)
          else a.balance end
      from upd
      where upd.was = 'PENDING' and upd.scheme = 'gateway' and a.chain_id = upd.chain_id
        and a.payer = upd.payer
      returning 1
    )
    select ${PAYMENT_COLUMNS(sql)} from upd`;
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
