/** What every x402 file needs: the chain x402 settles on, the deps with the agent port. */
import type { Deps } from "../../deps.ts";
import { DomainError } from "../../errors.ts";
import type { ProfileName } from "../../chain/profiles.ts";
import type { X402AgentPort } from "./x402.types.ts";
import type { Settler } from "./x402.settler.ts";

/** x402 settles on the testnet chain (the spec's sourceChain `settleTestnet`). */
export const X402_PROFILE: ProfileName = "testnet";
export const ZERO_ADDRESS = "0x0000000000000000000000000000000000000000";
/** The upstream gets this long to answer. */
export const UPSTREAM_TIMEOUT_MS = 30_000;
/**
 * A paid call's settlement needs this long before its authorization's `validBefore`: the
 * upstream must answer by then, or the call fails and charges nothing (it could not be settled).
 */
export const SETTLE_MARGIN_SECONDS = 5n;
/** The least time an authorization must have left when it arrives (x402's facilitators: 6 s). */
export const MIN_VALID_FOR_SECONDS = 6n;
/**
 * The largest `validBefore` (or any authorization time) we take: what PostgreSQL's bigint holds.
 * A larger one is as good as "never expires" and is refused as malformed.
 */
export const MAX_AUTHORIZATION_SECONDS = 2n ** 63n - 1n;

/** How long the upstream may take for a call paid by an authorization valid before `validBefore`. */
export function upstreamTimeoutMs(validBefore: bigint, nowMs: number): number {
  const left = Number(validBefore - SETTLE_MARGIN_SECONDS) * 1000 - nowMs;
  return Math.max(0, Math.min(UPSTREAM_TIMEOUT_MS, left));
}

/**
 * What the x402 service runs on: the app's deps, the (replaceable) agent port, and the gateway
 * settler (batching by load; without one, each proof is settled in its own transaction).
 */
export type X402Deps = Deps & { agents: X402AgentPort; settler?: Settler };

export function x402Profile(deps: Pick<Deps, "chain">): ProfileName {
  if (!deps.chain.has(X402_PROFILE)) throw new DomainError("chain_not_configured");
  return X402_PROFILE;
}

/**
 * How long a settlement round's claim (batched charges, channel claims) outlives a process killed
 * during it (its holder extends it every third of this while it works): the pause in settlement
 * after such a kill. A lapsed claim never sends twice (a batch's transaction is its intent:
 * src/db/claims.ts).
 */
export const ROUND_CLAIM_TTL_MS = 15_000;
