/** SQL for api_keys. */
import type { Db } from "../../db/client.ts";
import type { KeyEnvironment, KeyKind } from "./keys.rules.ts";

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

export async function findByLookup(sql: Db, lookup: string): Promise<KeyRow | null> {
  const [row] = await sql<KeyRow[]>`select * from api_keys where lookup = ${lookup}`;
  return row ?? null;
}

export async function findForMerchant(
  sql: Db,
  merchantId: string,
  id: string,
): Promise<KeyRow | null> {
  const [row] = await sql<KeyRow[]>`
    select * from api_keys where id = ${id} and merchant_id = ${merchantId}`;
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

export async function revoke(
  sql: Db,
  id: string,
  at: Date,
  replacedBy: string | null = null,
): Promise<boolean> {
  const rows = await sql`
    update api_keys set revoked_at = ${at}, replaced_by = ${replacedBy}
    where id = ${id} and revoked_at is null returning id`;
  return rows.length === 1;
}

/** Records use at most once a minute per key, so authentication rarely writes. */
export async function touch(sql: Db, id: string, at: Date): Promise<void> {
  await sql`
    update api_keys set last_used_at = ${at}
    where id = ${id} and (last_used_at is null or last_used_at < ${new Date(
    at.getTime() - 60_000,
  )})`;
}
