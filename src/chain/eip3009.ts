/**
 * EIP-3009 `ReceiveWithAuthorization` on our USDC: the one typed-data definition the gasless
 * checkout and escrow funding both sign (the token's EIP-712 domain is "USD Coin", version "2",
 * like real USDC).
 */
import type { ChainRuntime } from "./runtime.ts";

/** The fields every EIP-3009 authorization signs (and GatewayVault's, which copies the shape). */
const AUTHORIZATION_FIELDS = [
  { name: "from", type: "address" },
  { name: "to", type: "address" },
  { name: "value", type: "uint256" },
  { name: "validAfter", type: "uint256" },
  { name: "validBefore", type: "uint256" },
  { name: "nonce", type: "bytes32" },
] as const;

export const RECEIVE_WITH_AUTHORIZATION_TYPES = {
  ReceiveWithAuthorization: AUTHORIZATION_FIELDS,
} as const;

/** The x402 `exact` scheme on USDC, and the GatewayVault payment authorization. */
export const TRANSFER_WITH_AUTHORIZATION_TYPES = {
  TransferWithAuthorization: AUTHORIZATION_FIELDS,
} as const;

/** The token's EIP-712 domain on this chain (a configured token's own name and version). */
export function usdcDomain(rt: ChainRuntime) {
  const usdc = rt.contracts.TestUSDC;
  if (!usdc) throw new Error(`TestUSDC is not deployed on ${rt.profile.name}`);
  const { name, version } = rt.usdcEip712 ?? { name: "USD Coin", version: "2" };
  return { name, version, chainId: rt.chainId, verifyingContract: usdc } as const;
}
