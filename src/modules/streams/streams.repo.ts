/**
 * Streams' SQL. Amounts are bigint base units; addresses lower case. A merchant's stream is found
 * by merchant and chain (the credential's environment, DESIGN §11): another chain's stream is
 * not found, exactly like another merchant's.
 */
import type { Db } from "../../db/client.ts";
import type { StreamRow } from "./streams.types.ts";
import { statusIn } from "../../db/by-id.ts";

const COLUMNS = `id, merchant_id, reference, profile, chain_id, sender_wallet_id, sender_sca,
  receiver_sca, rate, deposit, withdrawn, status, contract_address, tx_hash, started_at, ends_at,
  stopped_at, stop_tx_hash, webhook_url, created_at`;

export async function insert(
  sql: Db,
  s: Omit<StreamRow, "id" | "withdrawn" | "status" | "stoppedAt" | "stopTxHash" | "createdAt"> & {
    now: Date;
  },
): Promise<StreamRow | null> {
  const [row] = await sql<StreamRow[]>`
    insert into streams (merchant_id, reference, profile, chain_id, sender_wallet_id, sender_sca,
      receiver_sca, rate, deposit, status, contract_address, tx_hash, started_at, ends_at,
      webhook_url, created_at)
    values (${s.merchantId}, ${s.reference}, ${s.profile}, ${s.chainId}, ${s.senderWalletId},
      ${s.senderSca}, ${s.receiverSca}, ${s.rate}, ${s.deposit}, 'ACTIVE', ${s.contractAddress},
      ${s.txHash}, ${s.startedAt}, ${s.endsAt}, ${s.webhookUrl}, ${s.now})
    on conflict (reference) do nothing
    returning ${sql.unsafe(COLUMNS)}`;
  return row ?? null;
}

export async function findByReference(
  sql: Db,
  merchantId: string,
  chainId: number,
  reference: string,
): Promise<StreamRow | null> {
  const [row] = await sql<StreamRow[]>`
    select ${sql.unsafe(COLUMNS)} from streams
    where merchant_id = ${merchantId} and chain_id = ${chainId} and reference = ${reference}`;
  return row ?? null;
}

/** A stream by reference alone (the create's own path and its recovery). */
export async function findAnyByReference(sql: Db, reference: string): Promise<StreamRow | null> {
  const [row] = await sql<StreamRow[]>`
    select ${sql.unsafe(COLUMNS)} from streams where reference = ${reference}`;
  return row ?? null;
}

/** The ACTIVE streams on these chains (a worker's start checks each against its stops). */
export async function active(sql: Db, chainIds: number[]): Promise<StreamRow[]> {
  return await sql<StreamRow[]>`
    select ${sql.unsafe(COLUMNS)} from streams
    where status = 'ACTIVE' and chain_id = any(${chainIds}::int[])`;
}

export async function findById(sql: Db, id: string): Promise<StreamRow | null> {
  const [row] = await sql<StreamRow[]>`select ${sql.unsafe(COLUMNS)} from streams where id = ${id}`;
  return row ?? null;
}

export interface ListFilter {
  sender?: string;
  receiver?: string;
  status?: string;
  reference?: string;
}

/** The merchant's streams on one chain, newest start first (creation order breaks ties). */
export async function list(
  sql: Db,
  merchantId: string,
  chainId: number,
  f: ListFilter,
): Promise<StreamRow[]> {
  return await sql<StreamRow[]>`
    select ${sql.unsafe(COLUMNS)} from streams
    where merchant_id = ${merchantId} and chain_id = ${chainId}
      ${f.sender ? sql`and sender_sca = ${f.sender.toLowerCase()}` : sql``}
      ${f.receiver ? sql`and receiver_sca = ${f.receiver.toLowerCase()}` : sql``}
      ${f.status ? sql`and status = ${f.status}` : sql``}
      ${f.reference ? sql`and reference = ${f.reference}` : sql``}
    order by started_at desc, seq desc`;
}

/** ACTIVE → STOPPED once; null if it was no longer ACTIVE. */
export async function markStopped(
  sql: Db,
  id: string,
  s: { withdrawn: bigint; stoppedAt: Date; txHash: string },
): Promise<StreamRow | null> {
  const [row] = await sql<StreamRow[]>`
    update streams set status = 'STOPPED', withdrawn = ${s.withdrawn}, stopped_at = ${s.stoppedAt},
      stop_tx_hash = ${s.txHash}
    where id = ${id} and ${statusIn(sql, "status", ["ACTIVE"])}
    returning ${sql.unsafe(COLUMNS)}`;
  return row ?? null;
}

/**
 * ACTIVE → COMPLETED once (the whole deposit paid); null if it was no longer ACTIVE. `completedAt`
 * is the stream's true end (`ends_at`), whenever the completing transaction was mined.
 */
export async function markCompleted(
  sql: Db,
  id: string,
  s: { completedAt: Date; txHash: string },
): Promise<StreamRow | null> {
  const [row] = await sql<StreamRow[]>`
    update streams set status = 'COMPLETED', withdrawn = deposit, stopped_at = ${s.completedAt},
      stop_tx_hash = ${s.txHash}
    where id = ${id} and ${statusIn(sql, "status", ["ACTIVE"])}
    returning ${sql.unsafe(COLUMNS)}`;
  return row ?? null;
}

/** Raises the paid total (never lowers it: withdrawals may be recorded out of order). */
export async function recordWithdrawn(sql: Db, id: string, withdrawn: bigint): Promise<StreamRow> {
  const [row] = await sql<StreamRow[]>`
    update streams set withdrawn = greatest(withdrawn, ${withdrawn}) where id = ${id}
    returning ${sql.unsafe(COLUMNS)}`;
  return row;
}

/** ACTIVE streams whose accrual has ended by `now`: the drain job's work. */
export async function dueForDrain(sql: Db, now: Date, limit = 100): Promise<{ id: string }[]> {
  return await sql<{ id: string }[]>`
    select id from streams where status = 'ACTIVE' and ends_at <= ${now}
    order by ends_at limit ${limit}`;
}

/**
 * The reference of the create sent with this Idempotency-Key (hashed): `reference` when the key
 * is new, the one recorded first otherwise, with the request it was recorded for.
 */
export async function claimCreateRequest(
  sql: Db,
  r: { merchantId: string; keyHash: string; requestHash: string; reference: string },
): Promise<{ reference: string; requestHash: string }> {
  await sql`
    insert into stream_create_requests (merchant_id, key_hash, request_hash, reference)
    values (${r.merchantId}, ${r.keyHash}, ${r.requestHash}, ${r.reference})
    on conflict (merchant_id, key_hash) do nothing`;
  const [row] = await sql<{ reference: string; requestHash: string }[]>`
    select reference, request_hash from stream_create_requests
    where merchant_id = ${r.merchantId} and key_hash = ${r.keyHash}`;
  return row;
}

/** A stream create recorded before broadcast (migration 0019): what rebuilds its record. */
export interface CreateIntent {
  reference: string;
  merchantId: string;
  profile: string;
  chainId: number;
  senderWalletId: string;
  senderSca: `0x${string}`;
  receiverSca: `0x${string}`;
  rate: bigint;
  deposit: bigint;
  contractAddress: string;
  webhookUrl: string | null;
  keyHash: string | null;
  status: "PENDING" | "DONE" | "FAILED";
  createdAt: Date;
}

const INTENT_COLUMNS = `reference, merchant_id, profile, chain_id, sender_wallet_id, sender_sca,
  receiver_sca, rate, deposit, contract_address, webhook_url, key_hash, status, created_at`;

/**
 * Records the intent PENDING before anything is sent. A FAILED one (nothing was locked) is
 * opened again by a retry with the same reference; a PENDING or DONE one is left as it is.
 */
export async function recordCreate(
  sql: Db,
  c: Omit<CreateIntent, "status" | "createdAt">,
): Promise<CreateIntent> {
  const [row] = await sql<CreateIntent[]>`
    insert into stream_creates (reference, merchant_id, profile, chain_id, sender_wallet_id,
      sender_sca, receiver_sca, rate, deposit, contract_address, webhook_url, key_hash)
    values (${c.reference}, ${c.merchantId}, ${c.profile}, ${c.chainId}, ${c.senderWalletId},
      ${c.senderSca}, ${c.receiverSca}, ${c.rate}, ${c.deposit}, ${c.contractAddress},
      ${c.webhookUrl}, ${c.keyHash})
    on conflict (reference) do update set status = 'PENDING', error = null, updated_at = now()
      where stream_creates.status = 'FAILED'
    returning ${sql.unsafe(INTENT_COLUMNS)}`;
  if (row) return row;
  const [found] = await sql<CreateIntent[]>`
    select ${sql.unsafe(INTENT_COLUMNS)} from stream_creates where reference = ${c.reference}`;
  return found;
}

export async function findCreate(sql: Db, reference: string): Promise<CreateIntent | null> {
  const [row] = await sql<CreateIntent[]>`
    select ${sql.unsafe(INTENT_COLUMNS)} from stream_creates where reference = ${reference}`;
  return row ?? null;
}

/** PENDING → DONE (the stream's record is written) or FAILED (nothing locked). */
export async function settleCreate(
  sql: Db,
  reference: string,
  status: "DONE" | "FAILED",
  error: string | null = null,
): Promise<void> {
  await sql`
    update stream_creates set status = ${status}, error = ${error}, updated_at = now()
    where reference = ${reference} and status = 'PENDING'`;
}

/** PENDING creates, oldest first, on these chains: the recovery's work. */
export async function pendingCreates(
  sql: Db,
  chainIds: number[],
  limit = 100,
): Promise<CreateIntent[]> {
  return await sql<CreateIntent[]>`
    select ${sql.unsafe(INTENT_COLUMNS)} from stream_creates
    where status = 'PENDING' and chain_id = any(${chainIds})
    order by created_at limit ${limit}`;
}

/** One sender wallet's PENDING creates on one chain, but `except` (the create asking). */
export async function pendingCreatesOf(
  sql: Db,
  senderWalletId: string,
  chainId: number,
  except: string,
): Promise<CreateIntent[]> {
  return await sql<CreateIntent[]>`
    select ${sql.unsafe(INTENT_COLUMNS)} from stream_creates
    where status = 'PENDING' and sender_wallet_id = ${senderWalletId} and chain_id = ${chainId}
      and reference <> ${except}
    order by created_at limit 100`;
}
