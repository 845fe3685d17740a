/**
 * The standard x402 `exact` scheme on EIP-3009 (v1 and v2 payloads), shared by /x402/{slug} and
 * the self-hosted facilitator: requirements, verification with the protocol's invalid reasons,
 * and settlement (the payer's TransferWithAuthorization on our USDC, relayed by the operator).
 * Every attempt is claimed in x402_payments first (scheme `exact`), so a replay or a concurrent
 * duplicate is refused before anything is broadcast.
 */
import { z } from "zod";
import type { Deps } from "../../deps.ts";
import { DomainError } from "../../errors.ts";
import { checksum, isAddress, lower } from "../../chain/address.ts";
import type { ProfileName } from "../../chain/profiles.ts";
import * as repo from "./x402.repo.ts";
import { withClaim } from "../../db/claims.ts";
import { usdcClaim } from "../wallets/wallets.service.ts";
import { authorizationTerms, nowSeconds, settlementIntent } from "./x402.rules.ts";
import type { Address, X402PaymentRecord } from "./x402.types.ts";
import { MAX_AUTHORIZATION_SECONDS, MIN_VALID_FOR_SECONDS, X402_PROFILE } from "./x402.context.ts";

/** How long a standard client's authorization should stay valid (its validBefore - now). */
export const MAX_TIMEOUT_SECONDS = 120;

export interface ExactRequirements {
  scheme: "exact";
  network: string;
  amount: string;
  asset: Address;
  payTo: Address;
  maxTimeoutSeconds: number;
  extra: { name: string; version: string };
}

/** The profile whose chain a `eip155:<id>` network names, if we run it. */
export function profileOfNetwork(deps: Pick<Deps, "chain">, network: string): ProfileName | null {
  const m = /^eip155:([0-9]{1,12})$/.exec(network);
  if (!m) return null;
  // x402 lives on the testnet (README): the facilitator too, whatever network a payment names.
  return x402Profiles(deps).find((p) => deps.chain.chainId(p) === Number(m[1])) ?? null;
}

/** The chains x402 runs on: the testnet alone, when it is configured. */
export function x402Profiles(deps: Pick<Deps, "chain">): ProfileName[] {
  return deps.chain.has(X402_PROFILE) ? [X402_PROFILE] : [];
}

export function exactRequirements(
  deps: Pick<Deps, "chain">,
  profile: ProfileName,
  payTo: string,
  amount: bigint,
): ExactRequirements {
  const d = deps.chain.gateway.domain(profile, "usdc");
  return {
    scheme: "exact",
    network: `eip155:${d.chainId}`,
    amount: amount.toString(),
    asset: checksum(d.verifyingContract),
    payTo: checksum(payTo),
    maxTimeoutSeconds: MAX_TIMEOUT_SECONDS,
    extra: { name: d.name, version: d.version },
  };
}

const uint = z.union([z.string().regex(/^(0|[1-9][0-9]{0,76})$/), z.number().int().nonnegative()])
  .transform((v) => BigInt(v));
const addr = z.string().refine(isAddress).transform((a) => lower(a));
const exactPayload = z.object({
  signature: z.string().regex(/^0x([0-9a-fA-F]{2})+$/).max(2 + 2 * 4096)
    .transform((s) => s as `0x${string}`),
  authorization: z.object({
    from: addr,
    to: addr,
    value: uint,
    validAfter: uint,
    validBefore: uint,
    nonce: z.string().regex(/^0x[0-9a-fA-F]{64}$/).transform((n) => lower(n)),
  }),
});

/** A v1 (`X-PAYMENT`) or v2 (`PAYMENT-SIGNATURE`) payment payload, as sent. */
export const paymentPayloadSchema = z.union([
  z.object({
    x402Version: z.literal(2),
    accepted: z.object({ scheme: z.string(), network: z.string() }).passthrough(),
    payload: exactPayload,
  }).passthrough(),
  z.object({
    x402Version: z.literal(1),
    scheme: z.string(),
    network: z.string(),
    payload: exactPayload,
  }).passthrough(),
]);
export type PaymentPayload = z.output<typeof paymentPayloadSchema>;

/** Decodes a base64 JSON header; null when it is not one. */
export function decodeHeader(value: string): unknown {
  try {
    // The forgiving base64 of atob (whitespace, optional padding), natively: ~10× faster than
    // a char-by-char copy of atob's string for a ~1.5 kB payment header.
    const bytes = Uint8Array.fromBase64(value.trim());
    return JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch {
    return null;
  }
}

export function encodeHeader(value: unknown): string {
  return new TextEncoder().encode(JSON.stringify(value)).toBase64();
}

export type Verification =
  | {
    isValid: true;
    payer: Address;
    profile: ProfileName;
    chainId: number;
    payload: z.output<typeof exactPayload>;
  }
  | { isValid: false; invalidReason: string; payer?: Address };

/** What an `exact` payment must be to pay `req`: the protocol's checks, ours on top. */
export async function verifyExact(
  deps: Deps,
  raw: unknown,
  req: { network: string; payTo: string; amount: bigint; asset?: string },
): Promise<Verification> {
  const parsed = paymentPayloadSchema.safeParse(raw);
  if (!parsed.success) return { isValid: false, invalidReason: "invalid_payload" };
  const p = parsed.data;
  const payload = p.payload;
  const payer = payload.authorization.from;
  const bad = (invalidReason: string): Verification => ({ isValid: false, invalidReason, payer });
  const scheme = p.x402Version === 2 ? p.accepted.scheme : p.scheme;
  const network = p.x402Version === 2 ? p.accepted.network : p.network;
  if (scheme !== "exact") return bad("invalid_exact_evm_scheme");
  if (network !== req.network) return bad("invalid_exact_evm_network_mismatch");
  const profile = profileOfNetwork(deps, network);
  if (!profile) return bad("invalid_network");
  const usdc = deps.chain.gateway.domain(profile, "usdc").verifyingContract;
  if (req.asset !== undefined && lower(req.asset) !== lower(usdc)) {
    return bad("invalid_exact_evm_asset_mismatch");
  }
  const a = payload.authorization;
  if (a.to !== lower(req.payTo)) return bad("invalid_exact_evm_recipient_mismatch");
  if (a.value !== req.amount) return bad("invalid_exact_evm_payload_authorization_value_mismatch");
  const now = nowSeconds(deps.clock.now());
  if (a.validBefore < now + MIN_VALID_FOR_SECONDS || a.validBefore > MAX_AUTHORIZATION_SECONDS) {
    return bad("invalid_exact_evm_payload_authorization_valid_before");
  }
  if (a.validAfter > now) return bad("invalid_exact_evm_payload_authorization_valid_after");
  if (!(await deps.chain.gateway.signedBy(profile, "usdc", a, payload.signature))) {
    return bad("invalid_exact_evm_signature");
  }
  if (await deps.chain.gateway.nonceUsed(profile, "usdc", a.from, a.nonce)) {
    return bad("invalid_exact_evm_nonce_already_used");
  }
  if ((await deps.chain.usdcBalance(profile, a.from)) < a.value) {
    return bad("invalid_exact_evm_insufficient_balance");
  }
  return { isValid: true, payer, profile, chainId: deps.chain.chainId(profile), payload };
}

/**
 * Claims the verified payment as PENDING: "used" when (payer, nonce) is already in flight or
 * spent, "insufficient" when the payer's USDC less its other `exact` payments in flight cannot
 * cover it. Under the payer's USDC claim (every process; the one the service's own spends of a
 * managed wallet take), so concurrent authorizations of one wallet are counted against one
 * balance: verification alone read the balance for each, so a wallet holding one call's worth
 * had the upstream serve twenty calls and our operator pay gas for nineteen reverted
 * settlements (an outside audit, 2026-11-30).
 */
export async function claimExact(
  deps: Deps,
  v: Extract<Verification, { isValid: true }>,
  ctx: {
    listingId: string | null;
    listingSlug: string | null;
    merchantId: string | null;
    agentId: string | null;
  },
): Promise<X402PaymentRecord | "used" | "insufficient"> {
  const a = v.payload.authorization;
  return await withClaim(deps.sql, usdcClaim(deps, v.profile, a.from), async () => {
    const [balance, inFlight] = await Promise.all([
      deps.chain.usdcBalance(v.profile, a.from),
      repo.exactInFlight(deps.sql, v.chainId, a.from),
    ]);
    if (balance - inFlight < a.value) return "insufficient";
    const row = await repo.claimAttempt(deps.sql, {
      ...ctx,
      scheme: "exact",
      chainId: v.chainId,
      ...authorizationTerms(a),
      owner: deps.liveness?.id ?? null,
      now: deps.clock.now(),
    });
    return row ?? "used";
  });
}

/** Relays the authorization on the token and waits for the receipt. */
export async function settleExact(
  deps: Deps,
  v: Extract<Verification, { isValid: true }>,
): Promise<string> {
  const a = v.payload.authorization;
  const tx = await deps.chain.gateway.settle(v.profile, "usdc", {
    authorization: a,
    signature: v.payload.signature,
    intentKey: settlementIntent("exact", a.from, a.nonce),
  });
  return tx.txHash;
}

/** The settle answer (`PAYMENT-RESPONSE` and the facilitator's /settle body). */
export function settleResponse(
  network: string,
  r: { txHash: string; payer: Address; amount: bigint } | { errorReason: string; payer?: Address },
) {
  if ("txHash" in r) {
    return {
      success: true as const,
      payer: checksum(r.payer),
      transaction: r.txHash,
      network,
      amount: r.amount.toString(),
    };
  }
  return {
    success: false as const,
    errorReason: r.errorReason,
    ...(r.payer ? { payer: checksum(r.payer) } : {}),
    transaction: "",
    network,
  };
}

/** A chain failure as the protocol's settle error reason. */
export function settleErrorReason(e: unknown): string {
  if (e instanceof DomainError && e.code === "chain_timeout") return "settlement_timeout";
  return "invalid_exact_evm_transaction_failed";
}
