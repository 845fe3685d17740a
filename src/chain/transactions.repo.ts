/**
 * SQL for chain_transactions. Every function takes `sql` (pool, transaction or reserved) first.
 * A transaction's call data is written once, inside its signed bytes (`raw_tx`; the `data`
 * column is null since migration 0034): a row's `data` is read from them on first use
 * (`withCallData`).
 */
import { type Hex, parseTransaction } from "viem";
import type { Db } from "../db/client.ts";
import { planned, statusIn } from "../db/by-id.ts";

export type TxStatus = "signed" | "broadcast" | "confirmed" | "reverted" | "failed";

/** Not yet mined: signed, or broadcast (chain_transactions_open). */
const OPEN: TxStatus[] = ["signed", "broadcast"];

export interface TxRow {
  /** Not a column: the receipt's logs, on the row a waiter returns when the watcher had them. */
  logs?: import("./receipts.ts").ReceiptLog[];
  id: string;
  chainId: number;
  intentKey: string;
  fromAddress: string;
  toAddress: string | null;
  nonce: bigint;
  value: string;
  data: string;
  gas: bigint;
  maxFeePerGas: string;
  maxPriorityFeePerGas: string;
  rawTx: string;
  txHash: string;
  status: TxStatus;
  error: string | null;
  blockNumber: bigint | null;
  gasUsed: bigint | null;
  contractAddress: string | null;
  broadcastAttempts: number;
  createdAt: Date;
  updatedAt: Date;
  confirmedAt: Date | null;
}

export interface NewTx {
  chainId: number;
  intentKey: string;
  fromAddress: string;
  toAddress: string | null;
  nonce: bigint;
  value: bigint;
  data: string;
  gas: bigint;
  maxFeePerGas: bigint;
  maxPriorityFeePerGas: bigint;
  rawTx: string;
  txHash: string;
}

export async function findByIntent(
  sql: Db,
  chainId: number,
  intentKey: string,
): Promise<TxRow | null> {
  const [row] = await sql<TxRow[]>`
    select * from chain_transactions where chain_id = ${chainId} and intent_key = ${intentKey}`;
  return row ? withCallData(row) : null;
}

/**
 * The newest transaction whose intent starts with `prefix` and whose signed bytes carry `hex`
 * (lowercase, no 0x): which batch carried a given payload (x402 settlements).
 */
export async function findCarrying(
  sql: Db,
  chainId: number,
  prefix: string,
  hex: string,
): Promise<TxRow | null> {
  const [row] = await sql<TxRow[]>`
    select * from chain_transactions
    where chain_id = ${chainId} and intent_key like ${prefix.replace(/[\\%_]/g, "\\$&") + "%"}
      and position(${hex} in lower(raw_tx)) > 0
    order by created_at desc limit 1`;
  return row ? withCallData(row) : null;
}

/** The newest confirmed transaction whose intent starts with `prefix` and ends with `suffix`. */
export async function findConfirmedLike(
  sql: Db,
  chainId: number,
  prefix: string,
  suffix: string,
): Promise<TxRow | null> {
  const esc = (x: string) => x.replace(/[\\%_]/g, "\\$&");
  const [row] = await sql<TxRow[]>`
    select * from chain_transactions
    where chain_id = ${chainId} and status = 'confirmed'
      and intent_key like ${esc(prefix) + "%" + esc(suffix)}
    order by created_at desc limit 1`;
  return row ? withCallData(row) : null;
}

/**
 * Distinct senders (lowercase) of confirmed transactions to `to` whose intent starts with
 * `prefix` (who gave our feedback to a registry; migration 0023 indexes that question).
 */
export async function sendersTo(
  sql: Db,
  chainId: number,
  to: string,
  prefix: string,
): Promise<string[]> {
  const rows = await sql<{ fromAddress: string }[]>`
    select distinct from_address from chain_transactions
    where chain_id = ${chainId} and to_address = ${to.toLowerCase()} and status = 'confirmed'
      and intent_key like ${prefix.replace(/[\\%_]/g, "\\$&") + "%"}`;
  return rows.map((r) => r.fromAddress);
}

/** The open (signed or broadcast) transactions of an intent family (`prefix`…), oldest first. */
export async function findOpenLike(sql: Db, chainId: number, prefix: string): Promise<TxRow[]> {
  const esc = (x: string) => x.replace(/[\\%_]/g, "\\$&");
  return (await sql<TxRow[]>`
    select * from chain_transactions
    where chain_id = ${chainId} and status in ('signed', 'broadcast')
      and intent_key like ${esc(prefix) + "%"}
    order by created_at`).map(withCallData);
}

export async function findById(sql: Db, id: string): Promise<TxRow | null> {
  const [row] = await sql<TxRow[]>`select * from chain_transactions where id = ${id}`;
  return row ? withCallData(row) : null;
}

/** Highest nonce still in flight (signed or broadcast) for a sender; null when none. */
export async function maxOpenNonce(
  sql: Db,
  chainId: number,
  from: string,
): Promise<bigint | null> {
  const [row] = await sql<{ n: bigint | null }[]>`
    select max(nonce) as n from chain_transactions
    where chain_id = ${chainId} and from_address = ${from} and status in ('signed', 'broadcast')`;
  return row.n;
}

/** The newest gas top-up to `to` still in flight (intent `gas:<to>:…`); null when none. */
export async function openGasTopup(sql: Db, chainId: number, to: string): Promise<TxRow | null> {
  const [row] = await sql<TxRow[]>`
    select * from chain_transactions
    where chain_id = ${chainId} and to_address = ${to} and intent_key like ${`gas:${to}:%`}
      and status in ('signed', 'broadcast')
    order by created_at desc limit 1`;
  return row ? withCallData(row) : null;
}

export async function markBroadcast(sql: Db, id: string): Promise<void> {
  await sql`
    update chain_transactions
    set status = 'broadcast', broadcast_attempts = broadcast_attempts + 1, updated_at = now()
    where id = ${id} and ${statusIn(sql, "status", OPEN)}`;
}

export async function noteBroadcastAttempt(sql: Db, id: string, error: string): Promise<void> {
  await sql`
    update chain_transactions
    set broadcast_attempts = broadcast_attempts + 1, error = ${error}, updated_at = now()
    where id = ${id}`;
}

export async function markFailed(sql: Db, id: string, error: string): Promise<void> {
  await sql`
    update chain_transactions set status = 'failed', error = ${error}, updated_at = now()
    where id = ${id} and ${statusIn(sql, "status", OPEN)}`;
}

/**
 * Every column but the signed bytes (`data`, `raw_tx`), for what a write hands back: its caller
 * holds those already, and a settlement batch's are hundreds of kilobytes the server would read
 * back out of TOAST and send again.
 */
const withoutBytes = (sql: Db, alias?: string) => {
  const cols = [
    "id",
    "chain_id",
    "intent_key",
    "from_address",
    "to_address",
    "nonce",
    "value",
    "gas",
    "max_fee_per_gas",
    "max_priority_fee_per_gas",
    "tx_hash",
    "status",
    "error",
    "block_number",
    "gas_used",
    "contract_address",
    "broadcast_attempts",
    "created_at",
    "updated_at",
    "confirmed_at",
  ];
  return sql.unsafe(cols.map((c) => (alias ? `${alias}.${c}` : c)).join(", "));
};

/**
 * Records several receipts in one statement; returns the updated rows without their signed
 * bytes (`data` and `rawTx` come back empty: the caller has them). Planned on each run (see
 * `findLiveByIntents`): the generic plan joined the receipts to a scan of every transaction ever
 * sent, 9.7 ms a statement at 50,000. Receipts that arrive together share one statement
 * (sender.ts `settle`).
 */
export async function markMinedMany(
  sql: Db,
  items: Array<{
    id: string;
    status: "confirmed" | "reverted";
    blockNumber: bigint;
    gasUsed: bigint;
    contractAddress: string | null;
  }>,
): Promise<Omit<TxRow, "data" | "rawTx">[]> {
  if (!items.length) return [];
  return await planned(sql<Omit<TxRow, "data" | "rawTx">[]>`
    update chain_transactions t
    set status = m.status, block_number = m.block_number, gas_used = m.gas_used,
        contract_address = m.contract_address, confirmed_at = now(), updated_at = now(),
        error = case when m.status = 'reverted' then 'reverted' else null end
    from unnest(${items.map((i) => i.id)}::uuid[], ${items.map((i) => i.status)}::text[],
                ${items.map((i) => i.blockNumber.toString())}::bigint[],
                ${items.map((i) => i.gasUsed.toString())}::bigint[],
                ${items.map((i) => i.contractAddress)}::text[])
      as m(id, status, block_number, gas_used, contract_address)
    where t.id = m.id
    returning ${withoutBytes(sql, "t")}`);
}

/** Transactions left open (signed or broadcast) for longer than `olderThanMs`. */
export async function listOpen(
  sql: Db,
  chainId: number,
  olderThanMs: number,
): Promise<TxRow[]> {
  return (await sql<TxRow[]>`
    select * from chain_transactions
    where chain_id = ${chainId} and status in ('signed', 'broadcast')
      and updated_at <= now() - make_interval(secs => ${olderThanMs / 1000})
    order by from_address, nonce`).map(withCallData);
}

/** An address's transactions not yet mined from `nonce` on, in nonce order. */
export async function listOpenFrom(
  sql: Db,
  chainId: number,
  from: string,
  nonce: bigint,
): Promise<TxRow[]> {
  return (await sql<TxRow[]>`
    select * from chain_transactions
    where chain_id = ${chainId} and from_address = ${from} and nonce >= ${nonce}
      and status in ('signed', 'broadcast')
    order by nonce`).map(withCallData);
}

export async function hasLaterNonce(
  sql: Db,
  chainId: number,
  from: string,
  nonce: bigint,
): Promise<boolean> {
  const [row] = await sql`
    select 1 from chain_transactions
    where chain_id = ${chainId} and from_address = ${from} and nonce > ${nonce}
      and status <> 'failed'
    limit 1`;
  return !!row;
}

export async function failAllOpen(sql: Db, chainId: number, reason: string): Promise<number> {
  const rows = await sql`
    update chain_transactions set status = 'failed', error = ${reason}, updated_at = now()
    where chain_id = ${chainId} and status in ('signed', 'broadcast')
    returning id`;
  return rows.length;
}

export async function statusCounts(sql: Db, chainId: number) {
  return await sql<{ status: TxStatus; n: number }[]>`
    select status, count(*)::int as n from chain_transactions
    where chain_id = ${chainId} group by status order by status`;
}

/**
 * Transactions that moved money, in any state that reached the node: not our deployments nor the
 * setup that goes with them (the USDC minter role and the messenger links of CCTP).
 */
export async function countMoneyTransactions(sql: Db, chainId: number): Promise<number> {
  const [row] = await sql<{ n: number }[]>`
    select count(*)::int as n from chain_transactions
    where chain_id = ${chainId} and intent_key not like 'deploy:%'
      and intent_key not like 'cctp:minter:%' and intent_key not like 'cctp:link:%'
      and status in ('confirmed', 'reverted', 'broadcast', 'signed')`;
  return row.n;
}

/** Moves every transaction of a reset chain into the archive, tagged with the reset. */
export async function archiveAll(sql: Db, chainId: number, resetId: string): Promise<void> {
  await sql`
    with moved as (delete from chain_transactions where chain_id = ${chainId} returning *)
    insert into chain_transactions_archive select moved.*, ${resetId}::uuid from moved`;
}

/** Open (signed or broadcast) transactions per chain with the age of the oldest (/metrics). */
export async function inFlightByChain(sql: Db) {
  return await sql<{ chainId: number; n: number; oldestSeconds: number }[]>`
    select chain_id, count(*)::int as n,
           coalesce(extract(epoch from now() - min(created_at)), 0)::float8 as oldest_seconds
    from chain_transactions where status in ('signed', 'broadcast') group by chain_id`;
}

/**
 * The live (not failed) transactions of these intents, by intent key. Planned on each run, as
 * every statement here over a list of keys (`planned`): a prepared statement's generic plan,
 * cached while the table was young, kept reading every transaction of the chain, or the whole
 * table, as it grew (33 and 28 ms a statement at 50,000 transactions for this one and
 * `markBroadcastMany`; tests/integration/by-id-plans.test.ts). It costs a planning and one more
 * round trip.
 */
export async function findLiveByIntents(
  sql: Db,
  chainId: number,
  intentKeys: string[],
): Promise<Map<string, TxRow>> {
  const rows = await planned(sql<TxRow[]>`
    select * from chain_transactions
    where chain_id = ${chainId} and intent_key = any(${intentKeys}) and status <> 'failed'`);
  return new Map(rows.map((r) => [r.intentKey, withCallData(r)]));
}

/**
 * The confirmed transactions of these intents, by intent key: one statement for many. The status
 * test written with `statusIn`, or the partial index of confirmed transactions
 * (chain_transactions_to) served it, reading every confirmed transaction of the chain.
 */
export async function findConfirmedByIntents(
  sql: Db,
  chainId: number,
  intentKeys: string[],
): Promise<Map<string, TxRow>> {
  if (!intentKeys.length) return new Map();
  const rows = await planned(sql<TxRow[]>`
    select * from chain_transactions
    where chain_id = ${chainId} and intent_key = any(${intentKeys})
      and ${statusIn(sql, "status", ["confirmed"])}`);
  return new Map(rows.map((r) => [r.intentKey, withCallData(r)]));
}

/** The transactions of a list of intents still in flight (signed or broadcast), in one query. */
export async function findOpenByIntents(
  sql: Db,
  chainId: number,
  intentKeys: string[],
): Promise<TxRow[]> {
  if (!intentKeys.length) return [];
  return (await planned(sql<TxRow[]>`
    select * from chain_transactions
    where chain_id = ${chainId} and intent_key = any(${intentKeys})
      and ${statusIn(sql, "status", ["signed", "broadcast"])}`)).map(withCallData);
}

/**
 * Inserts signed transactions in one statement (re-signing failed intents in place). An intent that got a live transaction meanwhile is left out of the result.
 */
export async function insertSignedBatch(sql: Db, txs: NewTx[]): Promise<TxRow[]> {
  const rows = txs.map((tx) => ({
    chainId: tx.chainId,
    intentKey: tx.intentKey,
    fromAddress: tx.fromAddress,
    toAddress: tx.toAddress,
    nonce: tx.nonce.toString(),
    value: tx.value.toString(),
    data: null,
    gas: tx.gas.toString(),
    maxFeePerGas: tx.maxFeePerGas.toString(),
    maxPriorityFeePerGas: tx.maxPriorityFeePerGas.toString(),
    rawTx: tx.rawTx,
    txHash: tx.txHash,
    status: "signed",
  }));
  const written = await sql<Omit<TxRow, "data" | "rawTx">[]>`
    insert into chain_transactions ${sql(rows)}
    on conflict (chain_id, intent_key) do update set
      from_address = excluded.from_address, to_address = excluded.to_address,
      nonce = excluded.nonce, value = excluded.value, data = excluded.data, gas = excluded.gas,
      max_fee_per_gas = excluded.max_fee_per_gas,
      max_priority_fee_per_gas = excluded.max_priority_fee_per_gas,
      raw_tx = excluded.raw_tx, tx_hash = excluded.tx_hash, status = 'signed', error = null,
      broadcast_attempts = 0, updated_at = now()
    where chain_transactions.status = 'failed'
    returning ${withoutBytes(sql)}`;
  const sent = new Map(txs.map((t) => [t.intentKey, t]));
  return written.map((r) => {
    const t = sent.get(r.intentKey)!;
    return { ...r, data: t.data, rawTx: t.rawTx };
  });
}

export async function markBroadcastMany(sql: Db, ids: string[]): Promise<void> {
  if (!ids.length) return;
  await planned(sql`
    update chain_transactions
    set status = 'broadcast', broadcast_attempts = broadcast_attempts + 1, updated_at = now()
    where id = any(${ids}::uuid[]) and ${statusIn(sql, "status", OPEN)}`);
}

/** Signed rows that were never broadcast go back to `failed`, to be signed again in order. */
export async function withdrawUnsent(sql: Db, ids: string[], reason: string): Promise<void> {
  if (!ids.length) return;
  await planned(sql`
    update chain_transactions set status = 'failed', error = ${reason}, updated_at = now()
    where id = any(${ids}::uuid[]) and ${statusIn(sql, "status", ["signed"])}`);
}

/**
 * The row with its `data`: as stored on rows written before migration 0034, else read from its
 * signed bytes when first asked for (a settlement batch's are hundreds of kilobytes, and most
 * readers never ask).
 */
function withCallData(row: TxRow): TxRow {
  if ((row.data as string | null) !== null) return row;
  let data: string | undefined;
  return Object.defineProperty(row, "data", {
    enumerable: true,
    configurable: true,
    get: () => (data ??= callData(row.rawTx)),
    set: (v: string) => (data = v),
  });
}

/** The call data of signed transaction bytes ("0x" when there is none). */
function callData(rawTx: string): string {
  return parseTransaction(rawTx as Hex).data ?? "0x";
}

/**
 * Transactions recorded in a block above `head` (a local node that lost its last blocks), in the
 * order they were mined: one may depend on another's effects (a stop on its stream's create).
 */
export async function recordedAbove(sql: Db, chainId: number, head: bigint): Promise<TxRow[]> {
  return await sql<TxRow[]>`
    select * from chain_transactions
    where chain_id = ${chainId} and block_number > ${head.toString()}::bigint
    order by block_number, from_address, nonce`;
}

/** A recorded transaction no longer mined: open again (broadcast), for the recovery to follow. */
export async function reopenMined(sql: Db, id: string): Promise<void> {
  await sql`
    update chain_transactions set status = 'broadcast', block_number = null, gas_used = null,
      confirmed_at = null, updated_at = now()
    where id = ${id}`;
}

/** A replayed transaction's new receipt. */
export async function recordReplayed(
  sql: Db,
  id: string,
  r: { status: "confirmed" | "reverted"; blockNumber: bigint; gasUsed: bigint },
): Promise<void> {
  await sql`
    update chain_transactions set status = ${r.status}, block_number = ${r.blockNumber},
      gas_used = ${r.gasUsed}, updated_at = now(),
      error = ${r.status === "reverted" ? "reverted" : null}
    where id = ${id}`;
}
