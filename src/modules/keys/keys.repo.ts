/** SQL for api_keys. */
import type { Db } from "../../db/client.ts";
import type { KeyEnvironment, KeyKind } from "./keys.rules.ts";
import type { MerchantRow } from "../merchants/merchants.types.ts";

export interface KeyRow {
  id: string;
  merchantId: string;
  kind: KeyKind;
  environment: KeyEnvironment;
  lookup: string;
  keyHash: string;
  hint: string;
  label: string | null;
  scopes: string[] | null;
  createdAt: Date;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
  replacedBy: string | null;
}

export interface NewKey {
  merchantId: string;
  kind: KeyKind;
  environment: KeyEnvironment;
  lookup: string;
  keyHash: string;
  hint: string;
  label: string | null;
  scopes: string[] | null;
  createdAt: Date;
}

export async function insertKey(sql: Db, k: NewKey): Promise<KeyRow> {
  const [row] = await sql<KeyRow[]>`
    insert into api_keys (merchant_id, kind, environment, lookup, key_hash, hint, label, scopes, created_at)
    values (${k.merchantId}, ${k.kind}, ${k.environment}, ${k.lookup}, ${k.keyHash}, ${k.hint},
            ${k.label}, ${k.scopes}, ${k.createdAt})
    returning *`;
  return row;
}

/** A key and its merchant, in one query (every key-authenticated request asks). */
export async function findByLookupWithMerchant(
  sql: Db,
  lookup: string,
): Promise<{ key: KeyRow; merchant: MerchantRow } | null> {
  // The merchant as plain columns (the hot path's larger half, decoded natively), the key as
  // one JSON value (the two tables share column names).
  const [row] = await sql<(MerchantRow & { keyJson: Record<string, unknown> })[]>`
    select m.*, to_jsonb(k) as key_json
    from api_keys k join merchants m on m.id = k.merchant_id
    where k.lookup = ${lookup}`;
  if (!row) return null;
  const { keyJson, ...merchant } = row;
  return { key: fromJson<KeyRow>(keyJson), merchant: merchant as MerchantRow };
}

const DATE_FIELDS = new Set([
  "createdAt",
  "updatedAt",
  "lastUsedAt",
  "revokedAt",
  "verifiedAt",
  "verificationExpiresAt",
]);

/** A to_jsonb row back into the repo's shape: camelCase keys, Date fields. */
function fromJson<T>(obj: Record<string, unknown>): T {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(obj)) {
    const key = k.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
    out[key] = DATE_FIELDS.has(key) && typeof v === "string" ? new Date(v) : v;
  }
  return out as T;
}

/**
 * One of the merchant's keys; `forUpdate` locks its row until the transaction ends, so a
 * concurrent rotation or revoke of it waits, then reads what this one left.
 */
export async function findForMerchant(
  sql: Db,
  merchantId: string,
  id: string,
  opts: { forUpdate?: boolean } = {},
): Promise<KeyRow | null> {
  const [row] = opts.forUpdate
    ? await sql<KeyRow[]>`
      select * from api_keys where id = ${id} and merchant_id = ${merchantId} for update`
    : await sql<KeyRow[]>`select * from api_keys where id = ${id} and merchant_id = ${merchantId}`;
  return row ?? null;
}

export async function listForMerchant(sql: Db, merchantId: string): Promise<KeyRow[]> {
  return await sql<KeyRow[]>`
    select * from api_keys where merchant_id = ${merchantId} order by created_at desc, id`;
}

/** The merchant's current (unrevoked) merchant key, for the profile's apiKeyHint. */
export async function activeMerchantKey(sql: Db, merchantId: string): Promise<KeyRow | null> {
  const [row] = await sql<KeyRow[]>`
    select * from api_keys
    where merchant_id = ${merchantId} and kind = 'merchant' and revoked_at is null
    order by created_at desc limit 1`;
  return row ?? null;
}

/**
 * Revokes a key that is not revoked yet, in one statement: the stored row, or null when it was
 * revoked already (by a concurrent request too: it waits for that one's row lock, then finds it
 * revoked).
 */
export async function revoke(
  sql: Db,
  id: string,
  at: Date,
  replacedBy: string | null = null,
): Promise<KeyRow | null> {
  const [row] = await sql<KeyRow[]>`
    update api_keys set revoked_at = ${at}, replaced_by = ${replacedBy}
    where id = ${id} and revoked_at is null returning *`;
  return row ?? null;
}

/** Records use at most once a minute per key, so authentication rarely writes. */
export async function touch(sql: Db, id: string, at: Date): Promise<void> {
  await sql`
    update api_keys set last_used_at = ${at}
    where id = ${id} and (last_used_at is null or last_used_at < ${new Date(
    at.getTime() - 60_000,
  )})`;
}

export interface OperatorKeyRow {
  id: string;
  lookup: string;
  keyHash: string;
  hint: string;
  label: string | null;
  createdAt: Date;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
}

export async function insertOperatorKey(
  sql: Db,
  k: { lookup: string; keyHash: string; hint: string; label: string | null; createdAt: Date },
): Promise<OperatorKeyRow> {
  const [row] = await sql<OperatorKeyRow[]>`
    insert into operator_keys (lookup, key_hash, hint, label, created_at)
    values (${k.lookup}, ${k.keyHash}, ${k.hint}, ${k.label}, ${k.createdAt})
    returning *`;
  return row;
}

export async function findOperatorByLookup(
  sql: Db,
  lookup: string,
): Promise<OperatorKeyRow | null> {
  const [row] = await sql<OperatorKeyRow[]>`select * from operator_keys where lookup = ${lookup}`;
  return row ?? null;
}
