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
 * What the x402 service runs on: the app's deps, the (replaceable) agent port, and the gateway
 * settler (batching by load; without one, each proof is settled in its own transaction).
 */
export type X402Deps = Deps & { agents: X402AgentPort; settler?: Settler };

export function x402Profile(deps: Pick<Deps, "chain">): ProfileName {
  if (!deps.chain.has(X402_PROFILE)) throw new DomainError("chain_not_configured");
  return X402_PROFILE;
}
