/**
 * SQL for paid calls accepted on the gateway balance and settled in batches: the mirror of each
 * payer's vault balance (x402_gateway_accounts), the charges, the queue of charges not yet in a
 * batch (x402_gateway_unbatched), and the settlement batches.
 *
 * A charge is inserted once and then moved in place (served; settled or failed: heap-only
 * updates, migration 0031): no index covers its state, so what is open is found through the
 * queue and the pending batches' lists (`openCharges`), never by a scan of every charge.
 */
import type { Db, Sql } from "../../db/client.ts";
import { planned, statusIn } from "../../db/by-id.ts";
import { ownerGone } from "../../db/liveness.ts";
import { addToListings, type ListingDelta, merge } from "./x402.totals.repo.ts";

export type ChargeStatus = "reserved" | "pending" | "settled" | "failed" | "released";

export interface ChargeRow {
  id: string;
  chainId: number;
  listingId: string | null;
  listingSlug: string | null;
  merchantId: string | null;
  payer: string;
  payee: string;
  amount: bigint;
  nonce: string;
  validAfter: bigint;
  validBefore: bigint;
  domain: "gateway" | "batched";
  signature: string;
  agentId: string | null;
  status: ChargeStatus;
  batchId: string | null;
  txHash: string | null;
  upstreamStatus: number | null;
  error: string | null;
  createdAt: Date;
  servedAt: Date | null;
  settledAt: Date | null;
}

export interface NewCharge {
  id: string;
  chainId: number;
  listingId: string | null;
  listingSlug: string | null;
  merchantId: string | null;
  payer: string;
  payee: string;
  amount: bigint;
  nonce: string;
  validAfter: bigint;
  validBefore: bigint;
  domain: "gateway" | "batched";
  signature: string;
  agentId: string | null;
  /** The process holding it during its upstream call (src/db/liveness.ts), if known. */
  owner: string | null;
  now: Date;
}

export type Reservation = "reserved" | "no_funds" | "used";

/**
 * Joined into the paid path's two writes (the reservation, the "served" mark): that statement's
 * own transaction commits without waiting for its WAL flush (`synchronous_commit` off for it
 * alone). It is visible to every other session at once, as any commit, so holds and nonces
 * serialise exactly as before, and a kill -9 of the service loses nothing; only a crash of
 * PostgreSQL itself within ~0.6 s (3 × wal_writer_delay) may lose the newest of these rows:
 * calls served and not charged, never a charge without its call or twice (docs/decisions.md).
 * Settlement writes commit synchronously, which flushes every earlier row they read.
 */
const asyncCommit = (sql: Db) =>
  sql`(select set_config('synchronous_commit', 'off', true)) as async_commit`;

/**
 * One reservation: `reserveMany` with a group of one (the statement's lock, fit, insert and hold
 * as for a group).
 */
export async function reserve(sql: Db, c: NewCharge, freshAfter: Date): Promise<Reservation> {
  return (await reserveMany(sql, [c], freshAfter, c.now)).get(c.id) ?? "no_funds";
}

/**
 * Several reservations in ONE statement (the paid path's group commit: x402.batched.mirror.ts).
 * The payers' mirror rows are locked in a fixed order (chain, payer in byte order: no deadlock
 * with another group, nor with a settlement's confirmation, which updates them in that order
 * too); under READ COMMITTED the lock returns each row as the last committer left it, so `room`
 * counts every reservation committed before. A payer's charges fit while their running total,
 * in arrival order, stays within its room (a charge after one that did not fit is refused too:
 * never an overspend). The charges that fit are inserted, a used nonce skipped by the unique
 * index, each goes into the queue of charges not yet batched, and each payer's hold grows by
 * what was inserted, all in this statement's transaction.
 * Returns, per charge id, whether it was reserved or its nonce was used; a charge not in the
 * answer did not fit (`no_funds`). The charges must not repeat a (chain, payer, nonce).
 */
export async function reserveMany(
  sql: Db,
  cs: NewCharge[],
  freshAfter: Date,
  now: Date,
): Promise<Map<string, Exclude<Reservation, "no_funds">>> {
  return await reserveAndServe(sql, cs, [], freshAfter, now);
}

/** A served mark: the upstream answered `upstreamStatus` (reserved → pending). */
export interface Served {
  id: string;
  upstreamStatus: number;
}

/**
 * `reserveMany` and `serveMany` in ONE statement and transaction: the paid path's group commit
 * writes the reservations of calls arriving and the served marks of calls answered together
 * (x402.batched.mirror.ts). They touch different charges (a call is served only once its
 * reservation is committed); the marks are written whether or not any reservation fits. Prepared:
 * on the paid path's connection (`NO_TABLE_SCANS`) its plan finds the marked charges and the
 * payers' mirrors by key however the tables grew since it was made.
 */
export async function reserveAndServe(
  sql: Db,
  cs: NewCharge[],
  served: Served[],
  freshAfter: Date,
  now: Date,
): Promise<Map<string, Exclude<Reservation, "no_funds">>> {
  // One JSON parameter, not fifteen arrays: postgres.js serializes an array parameter with a
  // serializer it learns per connection, and a connection's first statement can race that.
  const input = JSON.stringify(cs.map((c, ord) => ({
    ord,
    id: c.id,
    chain_id: c.chainId,
    listing_id: c.listingId,
    listing_slug: c.listingSlug,
    merchant_id: c.merchantId,
    payer: c.payer,
    payee: c.payee,
    amount: c.amount.toString(),
    nonce: c.nonce,
    valid_after: c.validAfter.toString(),
    valid_before: c.validBefore.toString(),
    domain: c.domain,
    signature: c.signature,
    agent_id: c.agentId,
    created_at: c.now.toISOString(),
    owner: c.owner,
  })));
  const marks = served.length
    ? sql`, served as (
      update x402_gateway_charges c set status = 'pending', upstream_status = s.status,
        served_at = ${now}
      from unnest(${served.map((i) => i.id)}::uuid[], ${served.map((i) => i.upstreamStatus)}::int[])
        as s(id, status)
      where c.id = s.id and ${statusIn(sql, "c.status", ["reserved"])}
    )`
    : sql``;
  const rows = await sql<{ id: string; reserved: boolean }[]>`
    with inp as (
      select * from json_to_recordset(${input}::text::json) as i(ord int, id uuid,
        chain_id int, listing_id uuid, listing_slug text, merchant_id uuid, payer text,
        payee text, amount bigint, nonce text, valid_after bigint, valid_before bigint,
        domain text, signature text, agent_id text, created_at timestamptz, owner uuid)
    ), ${fitsInRoom(sql, freshAfter, now)}, ${claimNonces(sql, "fits")}, ins as (
      insert into x402_gateway_charges (id, chain_id, listing_id, listing_slug, merchant_id,
        payer, payee, amount, nonce, valid_after, valid_before, domain, signature, agent_id,
        status, created_at, owner)
      select f.id, f.chain_id, f.listing_id, f.listing_slug, f.merchant_id, f.payer, f.payee,
        f.amount, f.nonce, f.valid_after, f.valid_before, f.domain, f.signature, f.agent_id,
        'reserved', f.created_at, f.owner
      from fits f join claimed n
        on n.chain_id = f.chain_id and n.payer = f.payer and n.nonce = f.nonce
      on conflict (chain_id, payer, nonce, free_tag) do nothing
      returning id, chain_id, payer, amount
    ), queued as (
      insert into x402_gateway_unbatched (chain_id, charge_id) select chain_id, id from ins
    ), hold as (
      update x402_gateway_accounts a set held = a.held + s.total
      from (select chain_id, payer, sum(amount) as total from ins group by chain_id, payer) s
      where a.chain_id = s.chain_id and a.payer = s.payer
      returning 1
    )${marks}
    select f.id, ins.id is not null as reserved
    from fits f left join ins on ins.id = f.id, ${asyncCommit(sql)}`;
  return new Map(rows.map((r) => [r.id, r.reserved ? "reserved" : "used"]));
}

/**
 * The CTEs `acct` and `fits` of a group reservation on the payers' mirrors (`reserveMany` here,
 * x402.repo.ts `claimGatewayAttempts`), over a CTE `inp` with `ord`, `chain_id`, `payer` and
 * `amount`: the payers' mirror rows read no earlier than `freshAfter` and with no withdrawal in
 * flight, locked in (chain, payer) byte order (no deadlock with another group, nor with a
 * settlement's confirmation, which updates them in that order too), and the items whose running
 * total per payer, in arrival order, stays within the payer's room (`balance - held`). Each
 * payer's row is looked up by its key, one lateral lookup per payer of the group, in that order:
 * a join of the group with the table let a cached plan read every payer's row per statement
 * (a whole index scan, then a hash join: tests/integration/by-id-plans.test.ts).
 */
export const fitsInRoom = (sql: Db, freshAfter: Date, now: Date) =>
  sql`acct as (
      select a.chain_id, a.payer, a.room
      from (
        select chain_id, payer from inp group by chain_id, payer
        order by chain_id, payer collate "C"
      ) k
      cross join lateral (
        select a.chain_id, a.payer, a.balance - a.held as room from x402_gateway_accounts a
        where a.chain_id = k.chain_id and a.payer = k.payer
          and a.synced_at >= ${freshAfter}
          and (a.withdrawing_until is null or a.withdrawing_until < ${now})
        for no key update of a
      ) a
    ), fits as (
      select c.* from (
        select inp.*, sum(inp.amount) over (partition by inp.chain_id, inp.payer
          order by inp.ord) as running
        from inp
      ) c join acct on acct.chain_id = c.chain_id and acct.payer = c.payer
      where c.running <= acct.room
    )`;

/**
 * The CTE `claimed`: the vault nonces of the CTE `from` (with `chain_id`, `payer`, `nonce`)
 * claimed for this statement in x402_vault_nonces, shared by both paths that spend the vault (a
 * batched charge, a `POST /api/x402/pay` gateway attempt), so one (payer, nonce) is taken once
 * whichever path takes it: a nonce another statement claimed is not returned (one still
 * uncommitted is waited for). Only the claimed rows may then be inserted.
 */
export const claimNonces = (sql: Db, from: string) =>
  sql`claimed as (
      insert into x402_vault_nonces (chain_id, payer, nonce)
      select chain_id, payer, nonce from ${sql(from)}
      on conflict do nothing
      returning chain_id, payer, nonce
    )`;

/** Whether this (payer, nonce) already has a charge that was not released. */
export async function nonceTaken(
  sql: Db,
  chainId: number,
  payer: string,
  nonce: string,
): Promise<boolean> {
  const [row] = await sql<{ yes: boolean }[]>`
    select exists(select 1 from x402_gateway_charges where chain_id = ${chainId}
      and payer = ${payer} and nonce = ${nonce} and free_tag = '') as yes`;
  return row.yes;
}

/**
 * The mirror re-read from the chain: `available` at `block`. A settlement of ours recorded after
 * that block already lowered the balance it saw, so an older read never overwrites a newer one.
 */
export async function sync(
  sql: Db,
  a: { chainId: number; payer: string; available: bigint; block: bigint; now: Date },
): Promise<void> {
  await sql`
    insert into x402_gateway_accounts (chain_id, payer, balance, synced_block, synced_at)
    values (${a.chainId}, ${a.payer}, ${a.available}, ${a.block}, ${a.now})
    on conflict (chain_id, payer) do update set
      balance = case when x402_gateway_accounts.synced_block <= excluded.synced_block
        then excluded.balance else x402_gateway_accounts.balance end,
      synced_block = greatest(x402_gateway_accounts.synced_block, excluded.synced_block),
      synced_at = excluded.synced_at`;
}

export interface Account {
  balance: bigint;
  held: bigint;
  syncedAt: Date;
}

export async function account(sql: Db, chainId: number, payer: string): Promise<Account | null> {
  const [row] = await sql<Account[]>`
    select balance, held, synced_at from x402_gateway_accounts
    where chain_id = ${chainId} and payer = ${payer}`;
  return row ?? null;
}

/** The upstream answered: the charge is owed (reserved → pending). */
export async function serve(sql: Db, id: string, upstreamStatus: number, now: Date) {
  await sql`
    update x402_gateway_charges set status = 'pending', upstream_status = ${upstreamStatus},
      served_at = ${now}
    where id = ${id} and ${statusIn(sql, "status", ["reserved"])}`;
}

/** Several upstream answers at once (reserved → pending), one statement. */
export async function serveMany(
  sql: Db,
  items: { id: string; upstreamStatus: number }[],
  now: Date,
): Promise<void> {
  await planned(sql`
    update x402_gateway_charges c set status = 'pending', upstream_status = s.status,
      served_at = ${now}
    from unnest(${items.map((i) => i.id)}::uuid[], ${items.map((i) => i.upstreamStatus)}::int[])
      as s(id, status), ${asyncCommit(sql)}
    where c.id = s.id and ${statusIn(sql, "c.status", ["reserved"])}`);
}

/**
 * The upstream failed (or the call was abandoned): nothing charged, the hold is given back, and
 * the (payer, nonce) is free again. Its queue entry is dropped by the next batch built.
 */
export async function release(
  sql: Db,
  id: string,
  f: { error: string; upstreamStatus: number | null; now: Date },
): Promise<boolean> {
  const rows = await sql`
    with c as (
      update x402_gateway_charges set status = 'released', error = ${f.error.slice(0, 500)},
        upstream_status = ${f.upstreamStatus}, settled_at = ${f.now}, free_tag = id::text
      where id = ${id} and ${statusIn(sql, "status", ["reserved"])}
      returning chain_id, payer, amount, nonce
    ), freed as (
      delete from x402_vault_nonces n using c
      where n.chain_id = c.chain_id and n.payer = c.payer and n.nonce = c.nonce
    )
    update x402_gateway_accounts a set held = a.held - c.amount
    from c where a.chain_id = c.chain_id and a.payer = c.payer
    returning 1`;
  return rows.length > 0;
}

/**
 * Reservations whose process died during the upstream call: its liveness claim is gone
 * (src/db/liveness.ts), or, with no owner recorded, the reservation is older than `before`.
 */
export async function staleReserved(sql: Db, chainId: number, before: Date): Promise<string[]> {
  const rows = await sql<{ id: string }[]>`
    select c.id from x402_gateway_unbatched q join x402_gateway_charges c on c.id = q.charge_id
    where q.chain_id = ${chainId} and c.status = 'reserved'
      and (c.created_at < ${before} or ${ownerGone(sql, "c.owner")})
    order by q.seq limit 1000`;
  return rows.map((r) => r.id);
}

export interface BatchRow {
  id: string;
  chainId: number;
  status: "pending" | "confirmed" | "failed";
  size: number;
  settled: number;
  /** The charges it carries, in the order its transaction lists them. */
  chargeIds: string[];
  txHash: string | null;
  blockNumber: bigint | null;
  gasUsed: bigint | null;
  error: string | null;
  createdAt: Date;
  finishedAt: Date | null;
}

/**
 * A new batch with up to `max` of the oldest pending charges of the queue, in one transaction:
 * written before anything is signed. 0 when nothing is owed. The batch takes the queue's entries
 * by deleting them (a second builder, another process, that read the same head waits for this
 * delete and finds them gone, so each entry goes into one batch), lists the charges (the order
 * `batchCharges` reads them in; a charge names its batch once it is settled or failed in it) and
 * counts them per merchant. Entries of released charges met on the way are dropped; reserved ones
 * (their upstream in flight) stay for a later batch. Fewer than `min` owed (default 1): no batch.
 */
export async function createBatch(
  sql: Sql,
  b: { id: string; chainId: number; max: number; now: Date; min?: number },
): Promise<number> {
  return await sql.begin(async (tx) => {
    for (;;) {
      // The head of the queue past the reservations in flight: pending charges, and released
      // ones whose entries are dropped on the way (a head of released ones alone: the next one).
      const head = await planned(
        tx<{ seq: string; chargeId: string; status: ChargeStatus; listingId: string | null }[]>`
        select q.seq, q.charge_id, c.status, c.listing_id from x402_gateway_unbatched q
        join x402_gateway_charges c on c.id = q.charge_id
        where q.chain_id = ${b.chainId} and c.status <> 'reserved'
        order by q.seq limit ${b.max}`,
      );
      // A released charge (its upstream failed) counts as its listing's failure once, by whoever
      // drops its entry.
      const failures = (dropped: Set<string>) =>
        addToListings(
          tx,
          merge(
            head.filter((h) => h.status === "released" && h.listingId && dropped.has(String(h.seq)))
              .map((h) => ({ listingId: h.listingId!, calls: 0, failed: 1, revenue: 0n })),
          ),
        );
      const owed = head.filter((h) => h.status === "pending").length;
      if (!owed || owed < (b.min ?? 1)) {
        const released = head.filter((h) => h.status !== "pending").map((h) => String(h.seq));
        if (released.length) {
          const dropped = await tx<{ seq: string }[]>`
            delete from x402_gateway_unbatched where seq = any(${released}::bigint[])
            returning seq`;
          await failures(new Set(dropped.map((d) => String(d.seq))));
        }
        if (owed || head.length < b.max) return 0;
        continue;
      }
      const dropped = await planned(tx<{ seq: string; chargeId: string }[]>`
        delete from x402_gateway_unbatched
        where seq = any(${head.map((h) => String(h.seq))}::bigint[])
        returning seq, charge_id`);
      await failures(new Set(dropped.map((d) => String(d.seq))));
      const taken = new Set(dropped.map((t) => t.chargeId));
      const ids = head.filter((h) => h.status === "pending" && taken.has(h.chargeId))
        .map((h) => h.chargeId);
      if (!ids.length) return 0;
      await writeBatch(tx, { ...b, ids });
      return ids.length;
    }
  });
}

/**
 * A reserved charge served (reserved → pending) and written into a batch of its own, taken out of
 * the queue of unbatched charges, in one transaction: no round can batch it meanwhile (a round
 * passes over reserved charges). For a charge settled before its call is answered
 * (x402.batched.settle.ts `settleNow`). False when the charge was no longer reserved.
 */
export async function serveInBatch(
  sql: Sql,
  b: { id: string; chainId: number; chargeId: string; upstreamStatus: number; now: Date },
): Promise<boolean> {
  return await sql.begin(async (tx) => {
    const served = await tx`
      update x402_gateway_charges set status = 'pending', upstream_status = ${b.upstreamStatus},
        served_at = ${b.now}
      where id = ${b.chargeId} and ${statusIn(tx, "status", ["reserved"])}
      returning 1`;
    if (!served.length) return false;
    await tx`delete from x402_gateway_unbatched
      where chain_id = ${b.chainId} and charge_id = ${b.chargeId}`;
    await writeBatch(tx, { ...b, ids: [b.chargeId] });
    return true;
  });
}

/** A pending batch of `ids` (in that order) and its count of charges per merchant. */
async function writeBatch(
  tx: Db,
  b: { id: string; chainId: number; ids: string[]; now: Date },
): Promise<void> {
  await planned(tx`
    with listed as (
      select merchant_id from x402_gateway_charges where id = any(${b.ids}::uuid[])
    ), batch as (
      insert into x402_gateway_batches (id, chain_id, status, size, charge_ids, created_at)
      values (${b.id}, ${b.chainId}, 'pending', ${b.ids.length}, ${b.ids}::uuid[], ${b.now})
    )
    insert into x402_gateway_batch_merchants (batch_id, merchant_id, payments, created_at)
    select ${b.id}, merchant_id, count(*), ${b.now} from listed
    where merchant_id is not null group by merchant_id`);
}

export async function pendingBatches(sql: Db, chainId: number): Promise<BatchRow[]> {
  return await sql<BatchRow[]>`
    select * from x402_gateway_batches where chain_id = ${chainId} and status = 'pending'
    order by created_at`;
}

/** What a settlement transaction needs of a charge. */
export type SettlingCharge = Pick<
  ChargeRow,
  | "id"
  | "payer"
  | "payee"
  | "amount"
  | "nonce"
  | "validAfter"
  | "validBefore"
  | "domain"
  | "signature"
>;

/**
 * The batch's charges still pending, in the order the batch lists them: only what its
 * transaction needs (500 whole rows, with their three timestamps, were ~2 ms more to read).
 */
export async function batchCharges(sql: Db, batchId: string): Promise<SettlingCharge[]> {
  return await planned(sql<SettlingCharge[]>`
    select c.id, c.payer, c.payee, c.amount, c.nonce, c.valid_after, c.valid_before, c.domain,
      c.signature
    from x402_gateway_batches b
    cross join unnest(b.charge_ids) with ordinality as i(id, ord)
    join x402_gateway_charges c on c.id = i.id
    where b.id = ${batchId} and c.status = 'pending'
    order by i.ord`);
}

/**
 * The batch's transaction was mined: the charges it paid are settled (their holds and the
 * payers' mirrored balances lowered, unless the mirror was read after `block`), the others
 * (refused by the vault) are failed, in one transaction. Idempotent: only pending charges move.
 */
export async function confirmBatch(sql: Sql, b: {
  id: string;
  txHash: string;
  block: bigint;
  gasUsed: bigint | null;
  paid: { id: string; txHash: string; block: bigint }[];
  refused: { id: string; reason: string }[];
  now: Date;
}): Promise<number> {
  return await sql.begin(async (tx) => {
    let settled = 0;
    // What the batch adds to its listings' calls, failures and revenue (x402.totals.repo.ts).
    const totals: ListingDelta[] = [];
    // What each payer's hold and mirrored balance lose, applied below in one pass.
    const per = new Map<
      string,
      { chainId: number; payer: string; held: bigint; spent: bigint; block: bigint }
    >();
    const lower = (m: { chainId: number; payer: string; amount: bigint }, spent: boolean) => {
      const k = `${m.chainId}:${m.payer}`;
      const e = per.get(k) ??
        { chainId: m.chainId, payer: m.payer, held: 0n, spent: 0n, block: b.block };
      e.held += m.amount;
      if (spent) e.spent += m.amount;
      per.set(k, e);
      return e;
    };
    if (b.paid.length) {
      const ids = b.paid.map((p) => p.id);
      const hashes = b.paid.map((p) => p.txHash);
      const blocks = b.paid.map((p) => p.block.toString());
      // Summed per payer (and listing) here, not per charge: a batch's few payers come back,
      // not its 500 rows.
      const moved = await planned(
        tx<
          {
            chainId: number;
            payer: string;
            listingId: string | null;
            amount: bigint;
            block: bigint;
            n: number;
          }[]
        >`
        with moved as (
          update x402_gateway_charges c set status = 'settled', tx_hash = p.tx_hash,
            settled_at = ${b.now}, batch_id = ${b.id}
          from unnest(${ids}::uuid[], ${hashes}::text[], ${blocks}::bigint[])
            as p(id, tx_hash, block)
          where c.id = p.id and ${statusIn(tx, "c.status", ["pending"])}
          returning c.chain_id, c.payer, c.listing_id, c.amount, p.block
        )
        select chain_id, payer, listing_id, sum(amount)::bigint as amount, min(block) as block,
          count(*)::int as n
        from moved group by chain_id, payer, listing_id`,
      );
      for (const m of moved) {
        settled += m.n;
        const e = lower(m, true);
        e.block = m.block < e.block ? m.block : e.block;
        if (m.listingId) {
          totals.push({ listingId: m.listingId, calls: m.n, failed: 0, revenue: m.amount });
        }
      }
    }
    for (const r of b.refused) {
      const [c] = await tx<
        { chainId: number; payer: string; listingId: string | null; amount: bigint }[]
      >`
        update x402_gateway_charges set status = 'failed', error = ${r.reason.slice(0, 500)},
          settled_at = ${b.now}, batch_id = ${b.id}
        where id = ${r.id} and ${statusIn(tx, "status", ["pending"])}
        returning chain_id, payer, listing_id, amount`;
      if (!c) continue;
      lower(c, false);
      if (c.listingId) {
        totals.push({ listingId: c.listingId, calls: 0, failed: 1, revenue: 0n });
      }
    }
    await addToListings(tx, merge(totals));
    await tx`update x402_gateway_batches set counted = true where id = ${b.id}`;
    // Every payer in one statement, its rows locked in the order reservations lock them (chain,
    // then payer in byte order): no deadlock with a group of reservations (reserveMany) waiting
    // on the same rows, and the reservations wait for one statement, not one per payer.
    const es = [...per.values()];
    if (es.length) {
      const input = JSON.stringify(es.map((e) => ({
        chain_id: e.chainId,
        payer: e.payer,
        held: e.held.toString(),
        spent: e.spent.toString(),
        block: e.block.toString(),
      })));
      await planned(tx`
        with s as (
          select * from json_to_recordset(${input}::text::json)
            as s(chain_id int, payer text, held bigint, spent bigint, block bigint)
        ), locked as materialized (
          select a.chain_id, a.payer from x402_gateway_accounts a
          join s on s.chain_id = a.chain_id and s.payer = a.payer
          order by a.chain_id, a.payer collate "C"
          for no key update of a
        )
        update x402_gateway_accounts a set held = a.held - s.held,
          balance = case when a.synced_block < s.block
            then greatest(a.balance - s.spent, 0) else a.balance end
        from s join locked l on l.chain_id = s.chain_id and l.payer = s.payer
        where a.chain_id = s.chain_id and a.payer = s.payer`);
    }
    await tx`
      update x402_gateway_batches set status = 'confirmed', tx_hash = ${b.txHash},
        block_number = ${b.block}, gas_used = ${b.gasUsed}, settled = ${settled},
        finished_at = ${b.now}
      where id = ${b.id} and ${statusIn(tx, "status", ["pending"])}`;
    return settled;
  });
}

/**
 * A batch whose transaction reverted or was never sent: its charges still pending go back into
 * the queue (at its tail) for the next one, and it no longer counts for its merchants.
 */
export async function failBatch(sql: Sql, id: string, error: string, now: Date): Promise<void> {
  await sql.begin(async (tx) => {
    const [failed] = await tx<{ chargeIds: string[] }[]>`
      update x402_gateway_batches set status = 'failed', error = ${error.slice(0, 500)},
        finished_at = ${now}
      where id = ${id} and ${statusIn(tx, "status", ["pending"])}
      returning charge_ids`;
    if (!failed) return;
    await planned(tx`
      insert into x402_gateway_unbatched (chain_id, charge_id)
      select chain_id, id from x402_gateway_charges
      where id = any(${failed.chargeIds}::uuid[]) and status = 'pending'
      order by created_at, id`);
    await tx`delete from x402_gateway_batch_merchants where batch_id = ${id}`;
  });
}

/**
 * The charges not yet settled nor released, as the FROM item `open` (every column of
 * x402_gateway_charges): those in the queue (reserved, or pending) and those in a pending batch,
 * on one chain or all. Read through the queue and the batches' lists: what is open, not every
 * charge ever taken.
 */
export const openCharges = (sql: Db, chainId?: number) => {
  const onChain = (col: string) =>
    chainId === undefined ? sql`` : sql`and ${sql.unsafe(col)} = ${chainId}`;
  return sql`(
    select c.* from x402_gateway_unbatched q join x402_gateway_charges c on c.id = q.charge_id
    where c.status in ('reserved', 'pending') ${onChain("q.chain_id")}
    union all
    select c.* from x402_gateway_batches b cross join unnest(b.charge_ids) as i(id)
    join x402_gateway_charges c on c.id = i.id
    where b.status = 'pending' and c.status = 'pending'
      ${onChain("b.chain_id")}
  ) open`;
};

/** What the payer's unsettled gateway-balance charges hold (reserved or pending). */
export async function unsettled(sql: Db, chainId: number, payer: string): Promise<bigint> {
  const [row] = await sql<{ total: bigint }[]>`
    select coalesce(sum(amount), 0)::bigint as total from ${openCharges(sql, chainId)}
    where payer = ${payer}`;
  return row.total;
}

/**
 * Marks a withdrawal of ours in flight for the payer: reservations are refused until `until`.
 * `owner` (the marking process's liveness id) and `intent` (the withdrawal's intent key) let
 * another process clear the mark of a process that died (`clearLapsedWithdrawal`).
 */
export async function markWithdrawing(
  sql: Db,
  chainId: number,
  payer: string,
  until: Date | null,
  { stale = false, owner = null, intent = null }: {
    stale?: boolean;
    owner?: string | null;
    intent?: string | null;
  } = {},
): Promise<void> {
  // An upsert: a payer with no mirror yet gets one (balance 0, never read), so a reservation
  // reading the chain meanwhile cannot slip in before the mark. `stale`: as if never read.
  await sql`
    insert into x402_gateway_accounts (chain_id, payer, balance, synced_block, synced_at,
      withdrawing_until, withdrawing_owner, withdrawing_intent)
    values (${chainId}, ${payer}, 0, 0, 'epoch', ${until}, ${owner}::uuid, ${intent})
    on conflict (chain_id, payer) do update set withdrawing_until = excluded.withdrawing_until,
      withdrawing_owner = excluded.withdrawing_owner,
      withdrawing_intent = excluded.withdrawing_intent,
      synced_at = case when ${stale} then 'epoch'::timestamptz
        else x402_gateway_accounts.synced_at end`;
}

/** A withdrawal mark still in force whose marking process is gone (src/db/liveness.ts). */
export async function lapsedWithdrawal(
  sql: Db,
  chainId: number,
  payer: string,
  now: Date,
): Promise<{ owner: string; intent: string } | null> {
  const [row] = await sql<{ owner: string; intent: string }[]>`
    select a.withdrawing_owner as owner, a.withdrawing_intent as intent
    from x402_gateway_accounts a
    where a.chain_id = ${chainId} and a.payer = ${payer} and a.withdrawing_until >= ${now}
      and a.withdrawing_intent is not null and ${ownerGone(sql, "a.withdrawing_owner")}`;
  return row ?? null;
}

/**
 * Clears a dead process's withdrawal mark (still that process's), the mirror marked never read:
 * the next reservation reads the chain first. False when the mark changed meanwhile.
 */
export async function clearWithdrawal(
  sql: Db,
  chainId: number,
  payer: string,
  owner: string,
): Promise<boolean> {
  const rows = await sql`
    update x402_gateway_accounts a set withdrawing_until = null, withdrawing_owner = null,
      withdrawing_intent = null, synced_at = 'epoch'
    where a.chain_id = ${chainId} and a.payer = ${payer} and a.withdrawing_owner = ${owner}::uuid
      and ${ownerGone(sql, "a.withdrawing_owner")}
    returning 1`;
  return rows.length > 0;
}

/** Served charges waiting for a batch. */
export async function countUnbatched(sql: Db, chainId: number): Promise<number> {
  const [row] = await sql<{ n: number }[]>`
    select count(*)::int as n from x402_gateway_unbatched q
    join x402_gateway_charges c on c.id = q.charge_id
    where q.chain_id = ${chainId} and c.status = 'pending'`;
  return row.n;
}

export async function findCharge(sql: Db, id: string): Promise<ChargeRow | null> {
  const [row] = await sql<ChargeRow[]>`select * from x402_gateway_charges where id = ${id}`;
  return row ?? null;
}

/**
 * An address's pending amounts in base units, on both kinds of deferred settlement: owed to it
 * (served gateway charges and channel charges not yet claimed) and promised by it (its gateway
 * charges reserved or pending).
 */
export async function openUnits(sql: Db, chainId: number, address: string) {
  const [row] = await sql<{ incoming: bigint; outgoing: bigint }[]>`
    select
      (select coalesce(sum(amount), 0) from ${openCharges(sql, chainId)}
        where payee = ${address} and status = 'pending') +
      (select coalesce(sum(least(c.charged, c.balance) - c.claimed), 0) from x402_channels c
        where c.chain_id = ${chainId} and c.receiver = ${address} and c.charged > c.claimed)
        as incoming,
      (select coalesce(sum(amount), 0) from ${openCharges(sql, chainId)} where payer = ${address})
        as outgoing`;
  return { incoming: BigInt(row.incoming), outgoing: BigInt(row.outgoing) };
}

/** A merchant's pending charges (both kinds), its latest charges, and the batches that carry them. */
export async function merchantOpen(sql: Db, merchantId: string) {
  const [pending, charges, batches] = await Promise.all([
    sql<{ kind: "gateway" | "channel"; count: number; amount: bigint }[]>`
      select 'gateway' as kind, count(*)::int as count, coalesce(sum(amount), 0)::bigint as amount
      from ${openCharges(sql)} where merchant_id = ${merchantId} and status = 'pending'
      union all
      select 'channel', count(*)::int, coalesce(sum(g.amount), 0)::bigint
      from x402_channel_charges g join x402_channels c using (channel_id)
      where g.merchant_id = ${merchantId} and g.cumulative > c.claimed`,
    sql<
      {
        createdAt: Date;
        listingSlug: string | null;
        payer: string;
        amount: bigint;
        status: string;
        txHash: string | null;
      }[]
    >`
      select created_at, listing_slug, payer, amount, status, tx_hash from x402_gateway_charges
      where merchant_id = ${merchantId} and status <> 'reserved'
      order by created_at desc limit 20`,
    sql<
      {
        kind: "gateway batch" | "channel claim";
        createdAt: Date;
        status: string;
        payments: number;
        txHash: string | null;
      }[]
    >`
      select x.kind, x.created_at, x.status, x.tx_hash,
        -- A claim collects many sellers' channels: its payments here are this merchant's only
        -- (the calls on its rows' channels above what earlier confirmed claims reached). Its
        -- total told each seller the others' business (an outside audit, 2026-12-01).
        case when x.kind = 'gateway batch' then x.payments else (
          select count(*)::int from x402_channel_claim_rows r
          join x402_channel_charges g on g.channel_id = r.channel_id
            and g.cumulative <= r.total_claimed
            and g.cumulative > coalesce((
              select max(r2.total_claimed) from x402_channel_claim_rows r2
              join x402_channel_claims k2 on k2.id = r2.claim_id
              where r2.channel_id = r.channel_id and k2.status = 'confirmed'
                and r2.total_claimed < r.total_claimed), 0)
          where r.claim_id = x.id and g.merchant_id = ${merchantId}
        ) end as payments
      from (
        (select 'gateway batch' as kind, b.id, b.created_at, b.status, m.payments, b.tx_hash
        from x402_gateway_batch_merchants m join x402_gateway_batches b on b.id = m.batch_id
        where m.merchant_id = ${merchantId}
        order by m.created_at desc limit 10)
        union all
        select 'channel claim', k.id, k.created_at, k.status, k.charges, k.tx_hash
        from x402_channel_claims k
        where k.kind in ('claim', 'voucher') and exists (
          select 1 from x402_channel_claim_rows r join x402_channels ch using (channel_id)
          where r.claim_id = k.id and ch.merchant_id = ${merchantId})
      ) x order by x.created_at desc limit 10`,
  ]);
  return { pending, charges, batches };
}

/** For /metrics: charges waiting per kind, the oldest one's age, the latest batches' size. */
export async function settlementStats(sql: Db) {
  const [row] = await sql<
    {
      gatewayPending: number;
      channelPending: number;
      oldestSeconds: number | null;
      lastBatchSize: number | null;
      lastLagSeconds: number | null;
    }[]
  >`
    select
      (select count(*)::int from ${openCharges(sql)} where status = 'pending')
        as gateway_pending,
      (select count(*)::int from x402_channel_charges g join x402_channels c using (channel_id)
        where g.cumulative > c.claimed) as channel_pending,
      (select extract(epoch from now() - min(served_at))::float8 from ${openCharges(sql)}
        where status = 'pending') as oldest_seconds,
      (select size from x402_gateway_batches where status = 'confirmed'
        order by finished_at desc limit 1) as last_batch_size,
      (select extract(epoch from max(c.settled_at - c.served_at))::float8
        from (select charge_ids, id from x402_gateway_batches where status = 'confirmed'
          order by finished_at desc limit 1) b
        cross join unnest(b.charge_ids) as i(id)
        join x402_gateway_charges c on c.id = i.id and c.batch_id = b.id) as last_lag_seconds`;
  return row;
}
