/** SQL for x402 batch-settlement channels and their charges (claims: x402.channels.claims.repo.ts). */
import type { Db, Sql } from "../../db/client.ts";
import type { ChannelTerms } from "./x402.channels.rules.ts";
import { countClaimed } from "./x402.totals.repo.ts";

export interface ChannelRow extends ChannelTerms {
  channelId: `0x${string}`;
  chainId: number;
  merchantId: string | null;
  charged: bigint;
  signedMax: bigint;
  signature: `0x${string}` | null;
  balance: bigint;
  claimed: bigint;
  withdrawRequestedAt: bigint;
  refundNonce: bigint;
  syncedAt: Date | null;
  pendingId: string | null;
  lastRequestAt: Date | null;
}

export interface OnChainState {
  balance: bigint;
  totalClaimed: bigint;
  withdrawRequestedAt: number;
  refundNonce: bigint;
}

const COLUMNS = (sql: Db) =>
  sql`channel_id, chain_id, merchant_id, payer, payer_authorizer, receiver, receiver_authorizer,
      token, withdraw_delay, salt, charged, signed_max, signature, balance, claimed,
      withdraw_requested_at, refund_nonce, synced_at, pending_id, last_request_at`;

/**
 * Takes a known channel for one request: "busy" while another request holds it, null when we
 * have no record of it. One statement; nothing is locked beyond it.
 */
export async function hold(sql: Db, c: {
  channelId: string;
  pendingId: string;
  until: Date;
  now: Date;
}): Promise<ChannelRow | "busy" | null> {
  const [row] = await sql<ChannelRow[]>`
    update x402_channels set pending_id = ${c.pendingId}, pending_until = ${c.until}
    where channel_id = ${c.channelId} and (pending_until is null or pending_until < ${c.now})
    returning ${COLUMNS(sql)}`;
  if (row) return row;
  const [known] = await sql`select 1 from x402_channels where channel_id = ${c.channelId}`;
  return known ? "busy" : null;
}

/** A channel's first record, held by the request that opens it; null if another was first. */
export async function open(sql: Db, c: {
  channelId: string;
  chainId: number;
  merchantId: string | null;
  terms: ChannelTerms;
  pendingId: string;
  until: Date;
  now: Date;
}): Promise<ChannelRow | null> {
  const t = c.terms;
  const [row] = await sql<ChannelRow[]>`
    insert into x402_channels (channel_id, chain_id, merchant_id, payer, payer_authorizer,
      receiver, receiver_authorizer, token, withdraw_delay, salt, pending_id, pending_until,
      created_at)
    values (${c.channelId}, ${c.chainId}, ${c.merchantId}, ${t.payer}, ${t.payerAuthorizer},
      ${t.receiver}, ${t.receiverAuthorizer}, ${t.token}, ${t.withdrawDelay}, ${t.salt},
      ${c.pendingId}, ${c.until}, ${c.now})
    on conflict (channel_id) do nothing
    returning ${COLUMNS(sql)}`;
  return row ?? null;
}

/** Gives the channel back (nothing charged). */
export async function release(sql: Db, channelId: string, pendingId: string): Promise<void> {
  await sql`
    update x402_channels set pending_id = null, pending_until = null
    where channel_id = ${channelId} and pending_id = ${pendingId}`;
}

/**
 * The contract's state, as read. What was claimed on chain is charged at least (a server that
 * lost its record starts from there, as the scheme says).
 */
export async function mirror(
  sql: Db,
  channelId: string,
  s: OnChainState,
  now: Date,
): Promise<ChannelRow> {
  const [read] = await sql<(ChannelRow & { counted: bigint })[]>`
    update x402_channels set balance = ${s.balance}, claimed = ${s.totalClaimed},
      withdraw_requested_at = ${s.withdrawRequestedAt}, refund_nonce = ${s.refundNonce},
      charged = greatest(charged, ${s.totalClaimed}),
      signed_max = greatest(signed_max, ${s.totalClaimed}), synced_at = ${now}
    where channel_id = ${channelId}
    returning ${COLUMNS(sql)}, counted`;
  if (!read) return read;
  const { counted, ...row } = read;
  // The chain may have claimed past what was counted (a claim whose record was lost, another
  // server's): those calls are settled too.
  if (row.claimed > counted) await countClaimed(sql, [channelId]);
  return row;
}

/**
 * Charges a served call under the request's hold, with the voucher that covers it, and gives the
 * channel back (kept, with `keepHold`, for a voucher claimed before the answer); records the
 * call. Null when the hold was lost (nothing charged).
 */
export async function charge(sql: Sql, c: {
  channelId: string;
  pendingId: string;
  price: bigint;
  maxClaimable: bigint;
  signature: string;
  listingId: string | null;
  merchantId: string | null;
  upstreamStatus: number | null;
  now: Date;
  keepHold?: boolean;
}): Promise<ChannelRow | null> {
  const pendingId = c.keepHold ? c.pendingId : null;
  const until = c.keepHold ? sql`pending_until` : null;
  const [row] = await sql<ChannelRow[]>`
    with charged as (
      update x402_channels set charged = charged + ${c.price}, signed_max = ${c.maxClaimable},
        signature = ${c.signature}, pending_id = ${pendingId}, pending_until = ${until},
        last_request_at = ${c.now}, stuck = null
      where channel_id = ${c.channelId} and pending_id = ${c.pendingId}
        and charged + ${c.price} <= ${c.maxClaimable}
      returning ${COLUMNS(sql)}
    ), call as (
      insert into x402_channel_charges (channel_id, listing_id, merchant_id, amount, cumulative,
        upstream_status, created_at)
      select channel_id, ${c.listingId}, ${c.merchantId}, ${c.price}, charged,
        ${c.upstreamStatus}, ${c.now}
      from charged
    )
    select * from charged`;
  return row ?? null;
}

/**
 * Takes back a charge whose voucher the chain refused before its call was answered: the
 * channel's total and voucher return to what they were, the call's record goes. Under the hold
 * the charge was made under, while it is still the channel's latest (`cumulative`).
 */
export async function uncharge(sql: Db, c: {
  channelId: string;
  pendingId: string;
  price: bigint;
  cumulative: bigint;
  previous: { signedMax: bigint; signature: string | null };
}): Promise<boolean> {
  const rows = await sql`
    with back as (
      update x402_channels set charged = charged - ${c.price},
        signed_max = ${c.previous.signedMax}, signature = ${c.previous.signature}
      where channel_id = ${c.channelId} and charged = ${c.cumulative}
        and pending_id = ${c.pendingId}
      returning channel_id
    )
    delete from x402_channel_charges g using back
    where g.channel_id = back.channel_id and g.cumulative = ${c.cumulative}
    returning g.id`;
  return rows.length > 0;
}

/** The channel's record (created on first sight), for the facilitator, which holds nothing. */
export async function record(sql: Db, c: {
  channelId: string;
  chainId: number;
  merchantId: string | null;
  terms: ChannelTerms;
  now: Date;
}): Promise<ChannelRow> {
  const t = c.terms;
  const [row] = await sql<ChannelRow[]>`
    insert into x402_channels as ch (channel_id, chain_id, merchant_id, payer, payer_authorizer,
      receiver, receiver_authorizer, token, withdraw_delay, salt, created_at)
    values (${c.channelId}, ${c.chainId}, ${c.merchantId}, ${t.payer}, ${t.payerAuthorizer},
      ${t.receiver}, ${t.receiverAuthorizer}, ${t.token}, ${t.withdrawDelay}, ${t.salt}, ${c.now})
    on conflict (channel_id) do update set merchant_id = coalesce(ch.merchant_id, excluded.merchant_id)
    returning ${COLUMNS(sql)}`;
  return row;
}

/**
 * A voucher a seller's server sent to the facilitator's /settle: charged by `price` when it
 * covers exactly the channel's charges plus it (one statement: a concurrent duplicate finds the
 * total moved and is refused), and, with `pendingId`, only under that hold (kept). Null when it
 * does not.
 */
export async function chargeVoucher(sql: Db, c: {
  channelId: string;
  price: bigint;
  maxClaimable: bigint;
  signature: string;
  merchantId: string | null;
  pendingId?: string | null;
  now: Date;
}): Promise<ChannelRow | null> {
  const held = c.pendingId ? sql`and pending_id = ${c.pendingId}` : sql``;
  const [row] = await sql<ChannelRow[]>`
    with charged as (
      update x402_channels set charged = charged + ${c.price}, signed_max = ${c.maxClaimable},
        signature = ${c.signature}, last_request_at = ${c.now}, stuck = null
      where channel_id = ${c.channelId} and charged + ${c.price} = ${c.maxClaimable}
        and withdraw_requested_at = 0 ${held}
      returning ${COLUMNS(sql)}
    ), call as (
      insert into x402_channel_charges (channel_id, merchant_id, amount, cumulative, created_at)
      select channel_id, ${c.merchantId}, ${c.price}, charged, ${c.now} from charged
    )
    select * from charged`;
  return row ?? null;
}

/**
 * A claim row a seller's server asked us to collect: the channel owes at least `total`, covered
 * by the newer of its voucher and ours.
 */
export async function recordClaimable(sql: Db, c: {
  channelId: string;
  chainId: number;
  merchantId: string;
  terms: ChannelTerms;
  maxClaimable: bigint;
  signature: string;
  total: bigint;
  now: Date;
}): Promise<void> {
  await record(sql, c);
  await sql`
    update x402_channels set charged = greatest(charged, ${c.total}),
      signature = case when ${c.maxClaimable} >= signed_max then ${c.signature} else signature end,
      signed_max = greatest(signed_max, ${c.maxClaimable}),
      last_request_at = coalesce(last_request_at, ${c.now})
    where channel_id = ${c.channelId}`;
}

export async function find(sql: Db, channelId: string): Promise<ChannelRow | null> {
  const [row] = await sql<ChannelRow[]>`
    select ${COLUMNS(sql)} from x402_channels where channel_id = ${channelId}`;
  return row ?? null;
}

// ---- what the claim job reads and marks --------------------------------------------------------
/**
 * Channels owing a claim that our receiver authorizer (`authorizer`) signs for: charged beyond
 * what is claimed, with balance left to claim and the voucher that covers it.
 */
export async function claimable(
  sql: Db,
  chainId: number,
  authorizer: string,
  limit: number,
): Promise<ChannelRow[]> {
  return await sql<ChannelRow[]>`
    select ${COLUMNS(sql)} from x402_channels
    where chain_id = ${chainId} and charged > claimed and claimed < balance and stuck is null
      and receiver_authorizer = ${authorizer} and signature is not null
    order by withdraw_requested_at = 0, last_request_at nulls first
    limit ${limit}`;
}

/** The contract refused the channel's voucher: the claim job leaves it until a new one comes. */
export async function markStuck(sql: Db, channelId: string, reason: string): Promise<void> {
  await sql`
    update x402_channels set stuck = ${reason.slice(0, 300)} where channel_id = ${channelId}`;
}

export interface ChargeRecord {
  id: bigint;
  channelId: string;
  listingId: string | null;
  amount: bigint;
  cumulative: bigint;
  createdAt: Date;
  /** The claim transaction that collected it; null while pending. */
  txHash: string | null;
}

/** A channel's charges, newest first, each with the claim that settled it (pending: null). */
export async function charges(sql: Db, channelId: string, limit = 100): Promise<ChargeRecord[]> {
  return await sql<ChargeRecord[]>`
    select g.id, g.channel_id, g.listing_id, g.amount, g.cumulative, g.created_at,
      (select c.tx_hash from x402_channel_claim_rows r
        join x402_channel_claims c on c.id = r.claim_id and c.status = 'confirmed'
        where r.channel_id = g.channel_id and r.total_claimed >= g.cumulative
        order by c.finished_at limit 1) as tx_hash
    from x402_channel_charges g where g.channel_id = ${channelId}
    order by g.id desc limit ${limit}`;
}
