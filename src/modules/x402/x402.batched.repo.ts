/**
 * SQL for paid calls accepted on the gateway balance and settled in batches: the mirror of each
 * payer's vault balance (x402_gateway_accounts), the charges, and the settlement batches.
 */
import type { Db, Sql } from "../../db/client.ts";
import { statusIn } from "../../db/by-id.ts";

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
 * index, and each payer's hold grows by what was inserted, all in this statement's transaction.
 * Returns, per charge id, whether it was reserved or its nonce was used; a charge not in the
 * answer did not fit (`no_funds`). The charges must not repeat a (chain, payer, nonce).
 */
export async function reserveMany(
  sql: Db,
  cs: NewCharge[],
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
  })));
  const rows = await sql<{ id: string; reserved: boolean }[]>`
    with inp as (
      select * from json_to_recordset(${input}::text::json) as i(ord int, id uuid,
        chain_id int, listing_id uuid, listing_slug text, merchant_id uuid, payer text,
        payee text, amount bigint, nonce text, valid_after bigint, valid_before bigint,
        domain text, signature text, agent_id text, created_at timestamptz)
    ), ${fitsInRoom(sql, freshAfter, now)}, ins as (
      insert into x402_gateway_charges (id, chain_id, listing_id, listing_slug, merchant_id,
        payer, payee, amount, nonce, valid_after, valid_before, domain, signature, agent_id,
        status, created_at)
      select id, chain_id, listing_id, listing_slug, merchant_id, payer, payee, amount, nonce,
        valid_after, valid_before, domain, signature, agent_id, 'reserved', created_at
      from fits
      on conflict (chain_id, payer, nonce) where status <> 'released' do nothing
      returning id, chain_id, payer, amount
    ), hold as (
      update x402_gateway_accounts a set held = a.held + s.total
      from (select chain_id, payer, sum(amount) as total from ins group by chain_id, payer) s
      where a.chain_id = s.chain_id and a.payer = s.payer
      returning 1
    )
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
 * total per payer, in arrival order, stays within the payer's room (`balance - held`).
 */
export const fitsInRoom = (sql: Db, freshAfter: Date, now: Date) =>
  sql`acct as (
      select a.chain_id, a.payer, a.balance - a.held as room from x402_gateway_accounts a
      where (a.chain_id, a.payer) in (select chain_id, payer from inp)
        and a.synced_at >= ${freshAfter}
        and (a.withdrawing_until is null or a.withdrawing_until < ${now})
      order by a.chain_id, a.payer collate "C"
      for no key update of a
    ), fits as (
      select c.* from (
        select inp.*, sum(inp.amount) over (partition by inp.chain_id, inp.payer
          order by inp.ord) as running
        from inp
      ) c join acct on acct.chain_id = c.chain_id and acct.payer = c.payer
      where c.running <= acct.room
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
      and payer = ${payer} and nonce = ${nonce} and status <> 'released') as yes`;
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
  await sql`
    update x402_gateway_charges c set status = 'pending', upstream_status = s.status,
      served_at = ${now}
    from unnest(${items.map((i) => i.id)}::uuid[], ${items.map((i) => i.upstreamStatus)}::int[])
      as s(id, status), ${asyncCommit(sql)}
    where c.id = s.id and ${statusIn(sql, "c.status", ["reserved"])}`;
}

/** The upstream failed (or the call was abandoned): nothing charged, the hold is given back. */
export async function release(
  sql: Db,
  id: string,
  f: { error: string; upstreamStatus: number | null; now: Date },
): Promise<boolean> {
  const rows = await sql`
    with c as (
      update x402_gateway_charges set status = 'released', error = ${f.error.slice(0, 500)},
        upstream_status = ${f.upstreamStatus}, settled_at = ${f.now}
      where id = ${id} and ${statusIn(sql, "status", ["reserved"])}
      returning chain_id, payer, amount
    )
    update x402_gateway_accounts a set held = a.held - c.amount
    from c where a.chain_id = c.chain_id and a.payer = c.payer
    returning 1`;
  return rows.length > 0;
}

/** Reservations older than `before` (their process died during the upstream call). */
export async function staleReserved(sql: Db, chainId: number, before: Date): Promise<string[]> {
  const rows = await sql<{ id: string }[]>`
    select id from x402_gateway_charges
    where chain_id = ${chainId} and status = 'reserved' and created_at < ${before}
    order by created_at limit 1000`;
  return rows.map((r) => r.id);
}

export interface BatchRow {
  id: string;
  chainId: number;
  status: "pending" | "confirmed" | "failed";
  size: number;
  settled: number;
  txHash: string | null;
  blockNumber: bigint | null;
  gasUsed: bigint | null;
  error: string | null;
  createdAt: Date;
  finishedAt: Date | null;
}

/**
 * A new batch with up to `max` of the oldest unbatched charges, in one transaction: written
 * before anything is signed. Null when nothing is owed. `skip locked` lets two builders (two
 * processes) take disjoint charges.
 */
export async function createBatch(
  sql: Sql,
  b: { id: string; chainId: number; max: number; now: Date },
): Promise<number> {
  return await sql.begin(async (tx) => {
    const taken = await tx`
      update x402_gateway_charges set batch_id = ${b.id}
      where id in (
        select id from x402_gateway_charges
        where chain_id = ${b.chainId} and status = 'pending' and batch_id is null
        order by created_at limit ${b.max} for update skip locked)
      returning id`;
    if (!taken.length) return 0;
    await tx`
      insert into x402_gateway_batches (id, chain_id, status, size, created_at)
      values (${b.id}, ${b.chainId}, 'pending', ${taken.length}, ${b.now})`;
    return taken.length;
  });
}

export async function pendingBatches(sql: Db, chainId: number): Promise<BatchRow[]> {
  return await sql<BatchRow[]>`
    select * from x402_gateway_batches where chain_id = ${chainId} and status = 'pending'
    order by created_at`;
}

export async function batchCharges(sql: Db, batchId: string): Promise<ChargeRow[]> {
  return await sql<ChargeRow[]>`
    select * from x402_gateway_charges
    where batch_id = ${batchId} and ${statusIn(sql, "status", ["pending"])}
    order by created_at, id`;
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
      const moved = await tx<{ chainId: number; payer: string; amount: bigint; block: bigint }[]>`
        update x402_gateway_charges c set status = 'settled', tx_hash = p.tx_hash,
          settled_at = ${b.now}
        from unnest(${ids}::uuid[], ${hashes}::text[], ${blocks}::bigint[])
          as p(id, tx_hash, block)
        where c.id = p.id and ${statusIn(tx, "c.status", ["pending"])}
        returning c.chain_id, c.payer, c.amount, p.block`;
      settled = moved.length;
      for (const m of moved) {
        const e = lower(m, true);
        e.block = m.block < e.block ? m.block : e.block;
      }
    }
    for (const r of b.refused) {
      const [c] = await tx<{ chainId: number; payer: string; amount: bigint }[]>`
        update x402_gateway_charges set status = 'failed', error = ${r.reason.slice(0, 500)},
          settled_at = ${b.now}
        where id = ${r.id} and ${statusIn(tx, "status", ["pending"])}
        returning chain_id, payer, amount`;
      if (c) lower(c, false);
    }
    // Per payer, in the order reservations lock them (chain, then payer in byte order): no
    // deadlock with a group of reservations (reserveMany) waiting on the same rows.
    const order = (x: { chainId: number; payer: string }, y: { chainId: number; payer: string }) =>
      x.chainId - y.chainId || (x.payer < y.payer ? -1 : x.payer > y.payer ? 1 : 0);
    for (const e of [...per.values()].sort(order)) {
      await tx`
        update x402_gateway_accounts set held = held - ${e.held},
          balance = case when synced_block < ${e.block}
            then greatest(balance - ${e.spent}, 0) else balance end
        where chain_id = ${e.chainId} and payer = ${e.payer}`;
    }
    await tx`
      update x402_gateway_batches set status = 'confirmed', tx_hash = ${b.txHash},
        block_number = ${b.block}, gas_used = ${b.gasUsed}, settled = ${settled},
        finished_at = ${b.now}
      where id = ${b.id} and ${statusIn(tx, "status", ["pending"])}`;
    return settled;
  });
}

/** A batch whose transaction reverted or was never sent: its charges go into the next one. */
export async function failBatch(sql: Sql, id: string, error: string, now: Date): Promise<void> {
  await sql.begin(async (tx) => {
    await tx`
      update x402_gateway_batches set status = 'failed', error = ${error.slice(0, 500)},
        finished_at = ${now}
      where id = ${id} and ${statusIn(tx, "status", ["pending"])}`;
    await tx`
      update x402_gateway_charges set batch_id = null
      where batch_id = ${id} and ${statusIn(tx, "status", ["pending"])}`;
  });
}

/** What the payer's unsettled gateway-balance charges hold (reserved or pending). */
export async function unsettled(sql: Db, chainId: number, payer: string): Promise<bigint> {
  const [row] = await sql<{ total: bigint }[]>`
    select coalesce(sum(amount), 0)::bigint as total from x402_gateway_charges
    where chain_id = ${chainId} and payer = ${payer} and status in ('reserved', 'pending')`;
  return row.total;
}

/** Marks a withdrawal of ours in flight for the payer: reservations are refused until `until`. */
export async function markWithdrawing(
  sql: Db,
  chainId: number,
  payer: string,
  until: Date | null,
): Promise<void> {
  // An upsert: a payer with no mirror yet gets one (balance 0, never read), so a reservation
  // reading the chain meanwhile cannot slip in before the mark.
  await sql`
    insert into x402_gateway_accounts (chain_id, payer, balance, synced_block, synced_at,
      withdrawing_until)
    values (${chainId}, ${payer}, 0, 0, 'epoch', ${until})
    on conflict (chain_id, payer) do update set withdrawing_until = excluded.withdrawing_until`;
}

export async function countUnbatched(sql: Db, chainId: number): Promise<number> {
  const [row] = await sql<{ n: number }[]>`
    select count(*)::int as n from x402_gateway_charges
    where chain_id = ${chainId} and status = 'pending' and batch_id is null`;
  return row.n;
}

export async function findCharge(sql: Db, id: string): Promise<ChargeRow | null> {
  const [row] = await sql<ChargeRow[]>`select * from x402_gateway_charges where id = ${id}`;
  return row ?? null;
}
