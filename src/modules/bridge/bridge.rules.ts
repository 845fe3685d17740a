/** Bridge rules: chain ids of the API, the attestation backoff, references. Pure functions. */
import { type ProfileName, SOURCE_CHAINS, type SourceChainName } from "../../chain/profiles.ts";

/** The API's id of the destination (the testnet settlement profile). */
export const DESTINATION_CHAIN = "Settle_Testnet";
export const DESTINATION_PROFILE = "testnet" as const;

export const BRIDGE_STATUSES = ["pending", "burned", "attested", "minted", "failed"] as const;
export type BridgeStatus = typeof BRIDGE_STATUSES[number];

/**
 * CCTP v2's two speeds: `standard` is attested once the source chain finalizes the burn
 * (minFinalityThreshold 2000); `fast` at its soft finality (1000), for the fast fee.
 */
export const TRANSFER_SPEEDS = ["standard", "fast"] as const;
export type TransferSpeed = typeof TRANSFER_SPEEDS[number];
export const finalityOf = (speed: TransferSpeed): number => speed === "fast" ? 1000 : 2000;

/** The API's chain id → the chain profile. */
export function profileOf(chainId: string): ProfileName {
  return chainId === DESTINATION_CHAIN ? DESTINATION_PROFILE : chainId as SourceChainName;
}

export function isSupportedSource(value: string): value is SourceChainName {
  return (SOURCE_CHAINS as readonly string[]).includes(value);
}

/** `bridge_` and 24 random hex characters. */
export function newReference(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(12));
  return `bridge_${[...bytes].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
}

/**
 * When to ask for the attestation again after `attempts` answers without one: 1 s doubling to
 * at most `maxMs` (Circle advises polling, not hammering: its API rate-limits). pg-boss starts
 * delayed jobs with one-second resolution.
 */
export function attestationDelayMs(attempts: number, maxMs = 30_000): number {
  return Math.min(maxMs, 1000 * 2 ** Math.max(0, attempts - 1));
}

/** The UTF-8 hook data a checkout burn carries: the payment reference. */
export function paymentHookData(reference: string): `0x${string}` {
  const bytes = new TextEncoder().encode(reference);
  return `0x${[...bytes].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
}
