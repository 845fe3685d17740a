/** API keys: issue (shown once), list, revoke, rotate, and resolve a presented key. */
import type { Deps } from "../../deps.ts";
import type { Db } from "../../db/client.ts";
import { DomainError } from "../../errors.ts";
import * as repo from "./keys.repo.ts";
import type { MerchantRow } from "../merchants/merchants.types.ts";
import {
  generateKey,
  hashKey,
  type KeyEnvironment,
  keyHint,
  type KeyKind,
  parseKey,
  sameHash,
} from "./keys.rules.ts";

export interface IssuedKey {
  row: repo.KeyRow;
  /** The full key: returned once, never stored. */
  key: string;
}

export async function issueKey(
  sql: Db,
  now: Date,
  merchantId: string,
  spec: {
    kind: KeyKind;
    environment: KeyEnvironment;
    label?: string | null;
    scopes?: string[] | null;
  },
): Promise<IssuedKey> {
  for (let attempt = 0;; attempt++) {
    const key = generateKey(spec.kind, spec.environment);
    try {
      const row = await repo.insertKey(sql, {
        merchantId,
        kind: spec.kind,
        environment: spec.environment,
        lookup: parseKey(key)!.lookup,
        keyHash: hashKey(key),
        hint: keyHint(key),
        label: spec.label ?? null,
        scopes: spec.scopes?.length ? spec.scopes : null,
        createdAt: now,
      });
      return { row, key };
    } catch (e) {
      // A lookup collision (64 random bits) is astronomically rare; draw again.
      if (attempt < 3 && String(e).includes("api_keys_lookup_key")) continue;
      throw e;
    }
  }
}

export type KeyLookup =
  | { status: "malformed" }
  | { status: "unknown" }
  | { status: "ok"; row: repo.KeyRow; merchant: MerchantRow }
  /** An operator key: no merchant; accepted only where a route names the `operator` kind. */
  | { status: "ok"; row: repo.KeyRow; merchant?: undefined };

/** When this process last recorded each key's use: at most one write a minute per key. */
const touched = new Map<string, number>();

/** Resolves a presented key. Revoked keys are unknown: permanently 401. */
export async function resolveKey(
  deps: Pick<Deps, "sql" | "clock">,
  raw: string,
): Promise<KeyLookup> {
  const parsed = parseKey(raw);
  if (!parsed) return { status: "malformed" };
  if (parsed.kind === "operator") return await resolveOperatorKey(deps, raw, parsed.lookup);
  const found = await repo.findByLookupWithMerchant(deps.sql, parsed.lookup);
  const row = found?.key;
  if (!row || !sameHash(row.keyHash, hashKey(raw)) || row.revokedAt) return { status: "unknown" };
  if (row.kind !== parsed.kind || row.environment !== parsed.environment) {
    return { status: "unknown" };
  }
  const now = deps.clock.now();
  if (now.getTime() - (touched.get(row.id) ?? 0) > 60_000) {
    touched.set(row.id, now.getTime());
    repo.touch(deps.sql, row.id, now).catch(() => {});
  }
  return { status: "ok", row, merchant: found!.merchant };
}

async function resolveOperatorKey(
  deps: Pick<Deps, "sql">,
  raw: string,
  lookup: string,
): Promise<KeyLookup> {
  const row = await repo.findOperatorByLookup(deps.sql, lookup);
  if (!row || !sameHash(row.keyHash, hashKey(raw)) || row.revokedAt) return { status: "unknown" };
  return {
    status: "ok",
    row: {
      ...row,
      merchantId: "",
      kind: "operator",
      environment: "live",
      scopes: null,
      replacedBy: null,
    },
  };
}

/** A new operator key (`deno task operator:key`): returned once, only its hash is kept. */
export async function issueOperatorKey(
  deps: Pick<Deps, "sql" | "clock">,
  label: string | null,
): Promise<{ id: string; key: string; hint: string }> {
  const key = generateKey("operator", "live");
  const row = await repo.insertOperatorKey(deps.sql, {
    lookup: parseKey(key)!.lookup,
    keyHash: hashKey(key),
    hint: keyHint(key),
    label,
    createdAt: deps.clock.now(),
  });
  return { id: row.id, key, hint: row.hint };
}

/** The hint of the merchant's active `merchant` key, shown on the profile. */
export async function activeMerchantKeyHint(
  deps: Pick<Deps, "sql">,
  merchantId: string,
): Promise<string | null> {
  return (await repo.activeMerchantKey(deps.sql, merchantId))?.hint ?? null;
}

export async function listKeys(deps: Deps, merchantId: string) {
  return (await repo.listForMerchant(deps.sql, merchantId)).map(publicKey);
}

export async function createKey(
  deps: Deps,
  merchantId: string,
  spec: {
    type: "secret" | "publishable";
    environment: KeyEnvironment;
    label?: string;
    scopes?: string[];
  },
) {
  const issued = await issueKey(deps.sql, deps.clock.now(), merchantId, {
    kind: spec.type,
    environment: spec.environment,
    label: spec.label,
    scopes: spec.scopes,
  });
  return { ...publicKey(issued.row), key: issued.key };
}

export async function revokeKey(deps: Deps, merchantId: string, id: string) {
  const row = isUuid(id) ? await repo.findForMerchant(deps.sql, merchantId, id) : null;
  if (!row) throw new DomainError("key_not_found");
  if (row.revokedAt) throw new DomainError("key_already_revoked");
  if (row.kind === "merchant") throw new DomainError("merchant_key_not_revocable");
  // One conditional write decides: a concurrent revoke that got there first leaves us nothing,
  // and we answer as a revoke after it would. The answer is the stored row.
  const revoked = await repo.revoke(deps.sql, row.id, deps.clock.now());
  if (!revoked) throw new DomainError("key_already_revoked");
  return publicKey(revoked);
}

/**
 * A replacement with the same kind, environment, label and scopes; the old key is revoked.
 * Under the old key's row lock: concurrent rotations (and revokes) of one key take turns, so the
 * ones after the first find it revoked and answer as a rotation after it would (400).
 */
export async function rotateKey(deps: Deps, merchantId: string, id: string) {
  return await deps.sql.begin(async (tx) => {
    const row = isUuid(id)
      ? await repo.findForMerchant(tx, merchantId, id, { forUpdate: true })
      : null;
    if (!row) throw new DomainError("key_not_found");
    if (row.revokedAt) throw new DomainError("key_already_revoked");
    const now = deps.clock.now();
    const issued = await issueKey(tx, now, merchantId, row);
    if (!(await repo.revoke(tx, row.id, now, issued.row.id))) {
      throw new DomainError("key_already_revoked"); // not while we hold its lock
    }
    return { key: { ...publicKey(issued.row), key: issued.key }, revokedKeyId: row.id };
  });
}

export function publicKey(row: repo.KeyRow) {
  return {
    id: row.id,
    type: row.kind,
    environment: row.environment,
    hint: row.hint,
    label: row.label,
    scopes: row.scopes ?? [],
    status: row.revokedAt ? "revoked" : "active",
    createdAt: row.createdAt.toISOString(),
    lastUsedAt: row.lastUsedAt?.toISOString() ?? null,
    revokedAt: row.revokedAt?.toISOString() ?? null,
  };
}

export function isUuid(s: string): boolean {
  return /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(s);
}
