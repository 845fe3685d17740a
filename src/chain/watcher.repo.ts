/** SQL for the log watcher: per-chain cursors, the batch lock, and exactly-once log receipts. */
import type { Db } from "../db/client.ts";

/** A transaction-level advisory lock on one chain: one process reads it at a time. */
export async function tryLockChain(tx: Db, namespace: number, chainId: number): Promise<boolean> {
  const [{ locked }] = await tx<{ locked: boolean }[]>`
    select pg_try_advisory_xact_lock(${namespace}, ${chainId}) as locked`;
  return locked;
}

export async function readCursor(sql: Db, chainId: number, name: string): Promise<bigint | null> {
  const [cur] = await sql<{ blockNumber: bigint }[]>`
    select block_number from chain_cursors where chain_id = ${chainId} and name = ${name}`;
  return cur?.blockNumber ?? null;
}

export async function saveCursor(
  sql: Db,
  chainId: number,
  name: string,
  blockNumber: bigint,
): Promise<void> {
  await sql`
    insert into chain_cursors (chain_id, name, block_number) values (${chainId}, ${name}, ${blockNumber})
    on conflict (chain_id, name) do update set block_number = excluded.block_number, updated_at = now()`;
}

/** Records that `handler` handled this log; false when it already had (a re-read). */
export async function recordReceipt(
  sql: Db,
  r: { chainId: number; handler: string; txHash: string; logIndex: number; blockNumber: bigint },
): Promise<boolean> {
  const inserted = await sql`
    insert into chain_log_receipts (chain_id, handler, tx_hash, log_index, block_number)
    values (${r.chainId}, ${r.handler}, ${r.txHash}, ${r.logIndex}, ${r.blockNumber})
    on conflict do nothing returning 1`;
  return inserted.length > 0;
}

export async function countReceipts(sql: Db, chainId: number): Promise<number> {
  const [row] = await sql<{ n: number }[]>`
    select count(*)::int as n from chain_log_receipts where chain_id = ${chainId}`;
  return row.n;
}

/** A reset chain: its cursors and receipts describe blocks that no longer exist. */
export async function forgetChain(sql: Db, chainId: number): Promise<void> {
  await sql`delete from chain_cursors where chain_id = ${chainId}`;
  await sql`delete from chain_log_receipts where chain_id = ${chainId}`;
}
