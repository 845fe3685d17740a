/** SQL for Idempotency-Key records. */
import type { Db } from "../db/client.ts";

export interface IdempotencyRow {
  scope: string;
  keyHash: string;
  requestHash: string;
  status: "in_progress" | "done";
  responseStatus: number | null;
  responseSealed: Uint8Array | null;
  responseIv: Uint8Array | null;
  createdAt: Date;
  expiresAt: Date;
}

/** Claims the key for this request; false when a record already exists. */
export async function claim(
  sql: Db,
  r: { scope: string; keyHash: string; requestHash: string; now: Date; expiresAt: Date },
): Promise<boolean> {
  const rows = await sql`
    insert into idempotency_keys (scope, key_hash, request_hash, status, created_at, expires_at)
    values (${r.scope}, ${r.keyHash}, ${r.requestHash}, 'in_progress', ${r.now}, ${r.expiresAt})
    on conflict do nothing returning 1`;
  return rows.length === 1;
}

/**
 * A record left in progress by a request that died: taken over by the retry that holds the key's
 * claim now (its dates restart; the request is the same one).
 */
export async function restart(
  sql: Db,
  r: { scope: string; keyHash: string; createdAt: Date; now: Date; expiresAt: Date },
): Promise<void> {
  await sql`
    update idempotency_keys set created_at = ${r.now}, expires_at = ${r.expiresAt}
    where scope = ${r.scope} and key_hash = ${r.keyHash} and status = 'in_progress'
      and created_at = ${r.createdAt}`;
}

export async function find(
  sql: Db,
  scope: string,
  keyHash: string,
): Promise<IdempotencyRow | null> {
  const [row] = await sql<IdempotencyRow[]>`
    select * from idempotency_keys where scope = ${scope} and key_hash = ${keyHash}`;
  return row ?? null;
}

/** Removes a record: expired, abandoned, or a failed request that may be retried. */
export async function release(
  sql: Db,
  scope: string,
  keyHash: string,
  createdAt?: Date,
): Promise<void> {
  if (createdAt) {
    await sql`delete from idempotency_keys
              where scope = ${scope} and key_hash = ${keyHash} and created_at = ${createdAt}`;
  } else {
    await sql`delete from idempotency_keys where scope = ${scope} and key_hash = ${keyHash}`;
  }
}

export async function complete(
  sql: Db,
  r: {
    scope: string;
    keyHash: string;
    status: number;
    sealed: Uint8Array;
    iv: Uint8Array;
    now: Date;
  },
): Promise<void> {
  await sql`
    update idempotency_keys
    set status = 'done', response_status = ${r.status}, response_sealed = ${r.sealed},
        response_iv = ${r.iv}, completed_at = ${r.now}
    where scope = ${r.scope} and key_hash = ${r.keyHash}`;
}

export async function deleteExpired(sql: Db, now: Date): Promise<number> {
  const rows = await sql`delete from idempotency_keys where expires_at <= ${now} returning 1`;
  return rows.length;
}
