/** SQL for x402 listings and paid-call attempts. */
import type { Db, Sql } from "../../db/client.ts";
import { statusIn } from "../../db/by-id.ts";
import { ownerGone } from "../../db/liveness.ts";
import { claimNonces, fitsInRoom, openCharges } from "./x402.batched.repo.ts";
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
  /** The process holding it during its upstream call (src/db/liveness.ts), if known. */
  owner: string | null;
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
      (select coalesce(sum(amount), 0) from ${openCharges(sql, chainId)} where payer = ${payer})
    )::bigint as total`;
  return row.total;
}

/** A PENDING attempt, or null when this (payer, nonce) is already in flight or spent. */
export async function claimAttempt(sql: Db, a: NewAttempt): Promise<X402PaymentRecord | null> {
  const [row] = await sql<X402PaymentRecord[]>`
    insert into x402_payments (listing_id, listing_slug, merchant_id, scheme, chain_id, payer,
                               payee, amount, nonce, valid_after, valid_before, agent_id, status,
                               created_at, owner)
    values (${a.listingId}, ${a.listingSlug}, ${a.merchantId}, ${a.scheme}, ${a.chainId},
            ${a.payer}, ${a.payee}, ${a.amount}, ${a.nonce}, ${a.validAfter}, ${a.validBefore},
            ${a.agentId}, 'PENDING', ${a.now}, ${a.owner}::uuid)
    on conflict (chain_id, scheme, payer, nonce) where status <> 'FAILED' do nothing
    returning ${PAYMENT_COLUMNS(sql)}`;
  return row ?? null;
}

/** USDC the payer's `exact` payments in flight (claimed, not settled or failed) will move. */
export async function exactInFlight(sql: Db, chainId: number, payer: string): Promise<bigint> {
  const [row] = await sql<{ total: bigint }[]>`
    select coalesce(sum(amount), 0)::bigint as total from x402_payments
    where chain_id = ${chainId} and scheme = 'exact' and payer = ${payer} and status = 'PENDING'`;
  return BigInt(row.total);
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
        returning chain_id, payer
      ), claimed as (
        -- The vault's nonce, shared with the batched charges: taken there (or here) already,
        -- the unique violation undoes this statement's hold and attempt.
        insert into x402_vault_nonces (chain_id, payer, nonce)
        select chain_id, payer, ${a.nonce} from acct
      )
      insert into x402_payments (listing_id, listing_slug, merchant_id, scheme, chain_id, payer,
                                 payee, amount, nonce, valid_after, valid_before, agent_id,
                                 status, created_at, owner)
      select ${a.listingId}, ${a.listingSlug}, ${a.merchantId}, ${a.scheme}, ${a.chainId},
             ${a.payer}, ${a.payee}, ${a.amount}, ${a.nonce}, ${a.validAfter}, ${a.validBefore},
             ${a.agentId}, 'PENDING', ${a.now}, ${a.owner}::uuid
      from acct
      returning ${PAYMENT_COLUMNS(sql)}`;
    return row ?? "no_funds";
  } catch (e) {
    if ((e as { code?: string }).code === "23505") return "used";
    throw e;
  }
}

/**
 * Several gateway attempts claimed in ONE statement (the pay path's group commit:
 * x402.service.ts `claim`), each as `claimGatewayAttempt` would: the payers' mirror rows are
 * locked in (chain, payer) byte order (no deadlock with another group, a batched reservation or a
 * settlement), a payer's attempts fit while their running total, in arrival order, stays within
 * its room (one after an attempt that did not fit is refused too: never an overspend), those
 * that fit are inserted PENDING under the ids given (a (payer, nonce) in flight or spent, or
 * repeated in the group, is skipped by the unique index) and each payer's hold grows by what was
 * inserted. Returns, per id, the attempt, or "used"; an id not in the answer did not fit
 * ("no_funds").
 */
export async function claimGatewayAttempts(
  sql: Db,
  as: (NewAttempt & { id: string })[],
  freshAfter: Date,
  now: Date,
): Promise<Map<string, X402PaymentRecord | "used">> {
  const input = JSON.stringify(as.map((a, ord) => ({
    ord,
    id: a.id,
    listing_id: a.listingId,
    listing_slug: a.listingSlug,
    merchant_id: a.merchantId,
    scheme: a.scheme,
    chain_id: a.chainId,
    payer: a.payer,
    payee: a.payee,
    amount: a.amount.toString(),
    nonce: a.nonce,
    valid_after: a.validAfter.toString(),
    valid_before: a.validBefore.toString(),
    agent_id: a.agentId,
    created_at: a.now.toISOString(),
    owner: a.owner,
  })));
  const rows = await sql<(X402PaymentRecord & { claimId: string; claimed: boolean })[]>`
    with inp as (
      select * from json_to_recordset(${input}::text::json) as i(ord int, id uuid,
        listing_id uuid, listing_slug text, merchant_id uuid, scheme text, chain_id int,
        payer text, payee text, amount bigint, nonce text, valid_after bigint,
        valid_before bigint, agent_id text, created_at timestamptz, owner uuid)
    ), ${fitsInRoom(sql, freshAfter, now)}, ${claimNonces(sql, "fits")}, ins as (
      insert into x402_payments (id, listing_id, listing_slug, merchant_id, scheme, chain_id,
                                 payer, payee, amount, nonce, valid_after, valid_before, agent_id,
                                 status, created_at, owner)
      select f.id, f.listing_id, f.listing_slug, f.merchant_id, f.scheme, f.chain_id, f.payer,
             f.payee, f.amount, f.nonce, f.valid_after, f.valid_before, f.agent_id, 'PENDING',
             f.created_at, f.owner
      from fits f join claimed n
        on n.chain_id = f.chain_id and n.payer = f.payer and n.nonce = f.nonce
      on conflict (chain_id, scheme, payer, nonce) where status <> 'FAILED' do nothing
      returning *
    ), hold as (
      update x402_gateway_accounts a set held = a.held + s.total
      from (select chain_id, payer, sum(amount) as total from ins group by chain_id, payer) s
      where a.chain_id = s.chain_id and a.payer = s.payer
      returning 1
    )
    select f.id as claim_id, ins.id is not null as claimed, ins.id, ins.listing_id,
      ins.listing_slug, ins.merchant_id, ins.scheme, ins.chain_id, ins.payer, ins.payee,
      ins.amount, ins.nonce, ins.agent_id, ins.status, ins.error, ins.upstream_status,
      ins.tx_hash, ins.created_at, ins.settled_at
    from fits f left join ins on ins.id = f.id`;
  return new Map(rows.map(({ claimId, claimed, ...row }) => [
    claimId,
    claimed ? row as X402PaymentRecord : "used",
  ]));
}

/**
 * Removes a PENDING attempt that never reached its upstream (its proof turned out used on chain)
 * and gives its hold on the payer's mirror back, in one statement: as if it had never been
 * claimed. An attempt no longer PENDING is left alone.
 */
export async function dropAttempt(sql: Db, id: string): Promise<void> {
  await sql`
    with gone as (
      delete from x402_payments where id = ${id} and ${statusIn(sql, "status", ["PENDING"])}
      returning chain_id, payer, amount, scheme, nonce
    ), freed as (
      delete from x402_vault_nonces n using gone
      where gone.scheme = 'gateway' and n.chain_id = gone.chain_id and n.payer = gone.payer
        and n.nonce = gone.nonce
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
    ), freed as (
      -- FAILED frees the (payer, nonce) for another try, here or on the batched path.
      delete from x402_vault_nonces n using upd
      where ${f.status} = 'FAILED' and upd.was <> 'FAILED' and upd.scheme = 'gateway'
        and n.chain_id = upd.chain_id and n.payer = upd.payer and n.nonce = upd.nonce
    )
    select ${PAYMENT_COLUMNS(sql)} from upd`;
  return row;
}

/**
 * Several PENDING attempts settled (SUCCESS with their transaction) in ONE statement: the pay
 * path's group commit (x402.service.ts `settleAttempt`), as `finishAttempt` for each, their holds
 * given back and their amounts taken off the payers' mirrors. The mirror rows are locked first,
 * in (chain, payer) byte order as every multi-payer statement does (no deadlock with another
 * group or a batched reservation). An attempt no longer PENDING keeps its mirror as it is.
 * Prepared, its plan is cached while the tables may be small: the attempts are found by their
 * key (`id = any(array(…))`) and each payer's mirror by its own (a lateral lookup), and it runs
 * on the paid path's connection, which plans no table scan (x402.service.ts), so the cached plan
 * reads only the group's rows however the tables grow (tests/integration/by-id-plans.test.ts).
 * Joined to the group on the pool, its cached plan scanned every attempt ever made, twice per
 * statement: 19–22 ms at 20,000.
 *
 * It commits without waiting for its WAL flush (as the batched path's writes do): a kill -9 of
 * the service loses nothing, and should PostgreSQL itself crash before the flush, the attempts
 * are PENDING again and the reconcile sweep (x402.reconcile.ts) settles them from the chain,
 * where their payments are.
 */
export async function settleAttempts(
  sql: Db,
  items: { id: string; upstreamStatus: number | null; txHash: string }[],
  now: Date,
): Promise<X402PaymentRecord[]> {
  const input = JSON.stringify(items.map((i) => ({
    id: i.id,
    upstream_status: i.upstreamStatus,
    tx_hash: i.txHash,
  })));
  return await sql<X402PaymentRecord[]>`
    with inp as (
      select * from json_to_recordset(${input}::text::json)
        as i(id uuid, upstream_status int, tx_hash text)
    ), prev as (
      select p.id, p.status as was, p.scheme, p.chain_id, p.payer, p.amount
      from x402_payments p where p.id = any(array(select id from inp))
      order by p.id for update of p
    ), acct as (
      select a.chain_id, a.payer
      from (
        select chain_id, payer from prev where was = 'PENDING' and scheme = 'gateway'
        group by chain_id, payer order by chain_id, payer collate "C"
      ) k
      cross join lateral (
        select a.chain_id, a.payer from x402_gateway_accounts a
        where a.chain_id = k.chain_id and a.payer = k.payer
        for no key update of a
      ) a
    ), upd as (
      update x402_payments p set status = 'SUCCESS', error = null,
        upstream_status = inp.upstream_status, tx_hash = inp.tx_hash, settled_at = ${now}
      from prev join inp on inp.id = prev.id
      where p.id = prev.id and p.id = any(array(select id from inp))
      returning p.*
    ), mirror as (
      update x402_gateway_accounts a set held = greatest(a.held - s.amount, 0),
        balance = greatest(a.balance - s.amount, 0)
      from (
        select prev.chain_id, prev.payer, sum(prev.amount) as amount
        from prev join acct on acct.chain_id = prev.chain_id and acct.payer = prev.payer
        where prev.was = 'PENDING' and prev.scheme = 'gateway'
        group by prev.chain_id, prev.payer
      ) s
      where a.chain_id = s.chain_id and a.payer = s.payer
      returning 1
    )
    select ${PAYMENT_COLUMNS(sql)} from upd,
      (select set_config('synchronous_commit', 'off', true)) as async_commit`;
}

/**
 * PENDING attempts abandoned by a crash or a settlement timeout: their process is gone
 * (src/db/liveness.ts), or they were created before `before`.
 */
export async function stalePending(
  sql: Db,
  before: Date,
  limit: number,
): Promise<X402PaymentRecord[]> {
  return await sql<X402PaymentRecord[]>`
    select ${PAYMENT_COLUMNS(sql)} from x402_payments p
    where status = 'PENDING' and (created_at < ${before} or ${ownerGone(sql, "p.owner")})
    order by seq limit ${limit}`;
}

/** The PENDING attempt holding this (payer, nonce), when the process that took it is gone. */
export async function pendingOfGoneOwner(
  sql: Db,
  k: { chainId: number; scheme: X402Scheme; payer: string; nonce: string },
): Promise<X402PaymentRecord | null> {
  const [row] = await sql<X402PaymentRecord[]>`
    select ${PAYMENT_COLUMNS(sql)} from x402_payments p
    where chain_id = ${k.chainId} and scheme = ${k.scheme} and payer = ${k.payer}
      and nonce = ${k.nonce} and status = 'PENDING' and ${ownerGone(sql, "p.owner")}`;
  return row ?? null;
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

/** A paid call as the dashboard lists it, whichever way it was paid. */
export interface RecentCall {
  createdAt: Date;
  listingSlug: string | null;
  scheme: string;
  payer: string;
  amount: bigint;
  status: "PENDING" | "SUCCESS" | "FAILED";
  agentId: string | null;
  txHash: string | null;
}

/**
 * The merchant's latest paid calls of every kind, newest first: the exact and spec flows'
 * attempts, the calls charged on the gateway balance (`batched`: pending until their batch is
 * mined; an upstream failure, released, charged nothing) and the batch-settlement channels' calls
 * (`batch-settlement`: pending until a claim passes them). Each part is read through its own
 * index, `limit` of each at most. Before, only the first kind was listed: a seller paid on the
 * gateway balance or on channels read "No paid calls yet." (an outside audit, 2026-12-01).
 */
export async function recentCalls(
  sql: Db,
  merchantId: string,
  limit: number,
): Promise<RecentCall[]> {
  return await sql<RecentCall[]>`
    select * from (
      (select created_at, listing_slug, scheme, payer, amount, status, agent_id, tx_hash
      from x402_payments where merchant_id = ${merchantId}
      order by seq desc limit ${limit})
      union all
      (select created_at, listing_slug, 'batched', payer, amount,
        case status when 'settled' then 'SUCCESS' when 'pending' then 'PENDING' else 'FAILED' end,
        agent_id, tx_hash
      from x402_gateway_charges where merchant_id = ${merchantId} and status <> 'reserved'
      order by created_at desc limit ${limit})
      union all
      (select g.created_at, l.slug, 'batch-settlement', ch.payer, g.amount,
        case when g.cumulative <= ch.claimed then 'SUCCESS' else 'PENDING' end, null, null
      from x402_listings l
      join x402_channel_charges g on g.listing_id = l.id
      join x402_channels ch on ch.channel_id = g.channel_id
      where l.merchant_id = ${merchantId}
      order by g.id desc limit ${limit})
    ) calls order by created_at desc limit ${limit}`;
}

export type { Sql };
