/** Whether the batch-settlement scheme can be offered on a chain (checked once, then cached). */
import type { Deps } from "../../deps.ts";
import type { ProfileName } from "../../chain/profiles.ts";

const RECHECK_MS = 60_000;
const seen = new WeakMap<object, Map<ProfileName, { ok: boolean; at: number }>>();

/** The contract is there and we hold the receiver authorizer's key; a "no" is asked again later. */
export async function available(deps: Pick<Deps, "chain">, p: ProfileName): Promise<boolean> {
  if (!deps.chain.has(p)) return false;
  let byProfile = seen.get(deps.chain);
  if (!byProfile) seen.set(deps.chain, byProfile = new Map());
  const known = byProfile.get(p);
  if (known && (known.ok || Date.now() - known.at < RECHECK_MS)) return known.ok;
  const ok = await deps.chain.channels.deployed(p).catch(() => false);
  byProfile.set(p, { ok, at: Date.now() });
  return ok;
}
