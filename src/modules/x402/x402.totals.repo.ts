/**
 * SQL for a listing's totals of calls paid on the gateway balance and through batch-settlement
 * channels (x402_listing_totals, migration 0036): added to as they settle, off the paid path, and
 * read by the dashboard beside the exact and spec flows' attempts (x402_payments).
 */
import type { Db, Sql } from "../../db/client.ts";

export interface ListingDelta {
  listingId: string;
  calls: number;
  failed: number;
  revenue: bigint;
}

/** Deltas summed per listing. */
export function merge(ds: ListingDelta[]): ListingDelta[] {
  const by = new Map<string, ListingDelta>();
  for (const d of ds) {
    const e = by.get(d.listingId);
    if (!e) by.set(d.listingId, { ...d });
    else {
      e.calls += d.calls;
      e.failed += d.failed;
      e.revenue += d.revenue;
    }
  }
  return [...by.values()];
}

/**
 * Adds to the listings' totals, in the caller's transaction. Rows are written in listing order,
 * so two transactions adding to the same listings wait for each other instead of deadlocking.
 */
export async function addToListings(tx: Db, ds: ListingDelta[]): Promise<void> {
  if (!ds.length) return;
  const sorted = [...ds].sort((a, b) => a.listingId < b.listingId ? -1 : 1);
  await tx`
    insert into x402_listing_totals as t (listing_id, calls, failed, revenue)
    select * from unnest(${sorted.map((d) => d.listingId)}::uuid[],
      ${sorted.map((d) => d.calls)}::bigint[], ${sorted.map((d) => d.failed)}::bigint[],
      ${sorted.map((d) => d.revenue.toString())}::bigint[])
    order by 1
    on conflict (listing_id) do update set calls = t.calls + excluded.calls,
      failed = t.failed + excluded.failed, revenue = t.revenue + excluded.revenue`;
}

/**
 * The calls a channel's claimed total now covers and that were not counted yet, added to their
 * listings, in one statement: the channels' rows are locked (in channel order) and `counted`
 * moves to `claimed`, so whoever raised `claimed` (a confirmed claim, or a read of the chain)
 * and however many count at once, each call is counted once.
 */
export async function countClaimed(sql: Db, channelIds: string[]): Promise<void> {
  if (!channelIds.length) return;
  await sql`
    with ch as materialized (
      select channel_id, counted, claimed from x402_channels
      where channel_id = any(${channelIds}::text[]) and claimed > counted
      order by channel_id
      for no key update
    ), moved as (
      update x402_channels c set counted = ch.claimed from ch where c.channel_id = ch.channel_id
    ), covered as (
      select g.listing_id, count(*) as calls, sum(g.amount) as revenue
      from ch join x402_channel_charges g on g.channel_id = ch.channel_id
        and g.cumulative > ch.counted and g.cumulative <= ch.claimed
      where g.listing_id is not null
      group by g.listing_id
    )
    insert into x402_listing_totals as t (listing_id, calls, failed, revenue)
    select listing_id, calls, 0, revenue from covered order by listing_id
    on conflict (listing_id) do update set calls = t.calls + excluded.calls,
      revenue = t.revenue + excluded.revenue`;
}

export interface ListingTotals {
  listingId: string;
  calls: bigint;
  failed: bigint;
  revenue: bigint;
}

export async function listingTotals(sql: Db, listingIds: string[]): Promise<ListingTotals[]> {
  if (!listingIds.length) return [];
  return await sql<ListingTotals[]>`
    select listing_id, calls, failed, revenue from x402_listing_totals
    where listing_id = any(${listingIds}::uuid[])`;
}

/**
 * Catches up the batches a process of an earlier release confirmed without counting (migration
 * 0038): each confirmed batch not yet counted adds its settled and refused charges, marked
 * counted in the same transaction (locked first: a second catcher-up skips it). How many.
 */
export async function catchUpBatches(sql: Sql, chainId: number): Promise<number> {
  let n = 0;
  for (;;) {
    const done = await sql.begin(async (tx) => {
      const [b] = await tx<{ id: string }[]>`
        select id from x402_gateway_batches
        where chain_id = ${chainId} and status = 'confirmed' and not counted
        limit 1 for update skip locked`;
      if (!b) return false;
      const rows = await tx<ListingDelta[]>`
        select listing_id,
          count(*) filter (where status = 'settled')::int as calls,
          count(*) filter (where status = 'failed')::int as failed,
          coalesce(sum(amount) filter (where status = 'settled'), 0)::bigint as revenue
        from x402_gateway_charges where batch_id = ${b.id} and listing_id is not null
        group by listing_id`;
      await addToListings(tx, rows);
      await tx`update x402_gateway_batches set counted = true where id = ${b.id}`;
      return true;
    });
    if (!done) return n;
    n++;
  }
}

/** The same for channels claimed past their count (`countClaimed`). How many. */
export async function catchUpChannels(sql: Db, chainId: number): Promise<number> {
  const channels = await sql<{ channelId: string }[]>`
    select channel_id from x402_channels where chain_id = ${chainId} and claimed > counted
    limit 1000`;
  await countClaimed(sql, channels.map((c) => c.channelId));
  return channels.length;
}
