/**
 * x402 rules with no I/O: the gateway proof's wire format (DESIGN §9), the proof window, listing
 * slugs and methods.
 *
 * The proof is base64 of `{ x402Version: 1, scheme: "gateway", network: "eip155:<chainId>",
 * payload: { signature, authorization: { from, to, value, validAfter, validBefore, nonce } } }`:
 * the standard x402 EIP-3009 payload, signed over GatewayVault's EIP-712 domain.
 */
import { z } from "zod";
import { isAddress } from "../../chain/address.ts";
import type { Address } from "./x402.types.ts";
import { MAX_AUTHORIZATION_SECONDS, MIN_VALID_FOR_SECONDS } from "./x402.context.ts";

export const METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"] as const;
export type HttpMethod = typeof METHODS[number];

export const SLUG = /^[a-z0-9][a-z0-9-]{0,62}$/;

/** The service refuses a proof whose timestamp (validAfter) is older than this (spec: 5 min). */
export const PROOF_MAX_AGE_SECONDS = 300;
/** A proof timestamped this far ahead of our clock is still taken (clock skew). */
export const PROOF_MAX_SKEW_SECONDS = 60;

const uintString = z.union([
  z.string().regex(/^(0|[1-9][0-9]{0,76})$/),
  z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER),
]).transform((v) => BigInt(v));
const address = z.string().refine(isAddress).transform((a) => a.toLowerCase() as Address);

const authorization = z.object({
  from: address,
  to: address,
  value: uintString,
  validAfter: uintString,
  validBefore: uintString,
  nonce: z.string().regex(/^0x[0-9a-fA-F]{64}$/).transform((n) => n.toLowerCase() as `0x${string}`),
});

const gatewayProof = z.object({
  x402Version: z.literal(1),
  scheme: z.literal("gateway"),
  network: z.string().regex(/^eip155:[0-9]{1,12}$/),
  payload: z.object({
    signature: z.string().regex(/^0x([0-9a-fA-F]{2})+$/).max(2 + 2 * 4096)
      .transform((s) => s as `0x${string}`),
    authorization,
  }),
});

export type GatewayProof = z.output<typeof gatewayProof>;
export type ProofAuthorization = GatewayProof["payload"]["authorization"];

/**
 * An authorization's terms as an attempt (x402_payments) or a charge (x402_gateway_charges)
 * records them: the payer, the payee, the amount, the nonce and the validity window.
 */
export function authorizationTerms(a: {
  from: string;
  to: string;
  value: bigint;
  nonce: string;
  validAfter: bigint;
  validBefore: bigint;
}) {
  return {
    payer: a.from,
    payee: a.to,
    amount: a.value,
    nonce: a.nonce,
    validAfter: a.validAfter,
    validBefore: a.validBefore,
  };
}

export type DecodedProof =
  | { ok: true; proof: GatewayProof; chainId: number }
  | { ok: false; reason: string };

/** Decodes a proof string; never throws. */
export function decodeGatewayProof(text: string): DecodedProof {
  if (text.length === 0 || text.length > 16_384) return { ok: false, reason: "empty or too long" };
  let json: unknown;
  try {
    const bytes = Uint8Array.fromBase64(text.trim());
    json = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch {
    return { ok: false, reason: "not base64 of a JSON object" };
  }
  const r = gatewayProof.safeParse(json);
  if (!r.success) {
    const issue = r.error.issues[0];
    return { ok: false, reason: `${issue.path.join(".") || "proof"}: ${issue.message}` };
  }
  return { ok: true, proof: r.data, chainId: Number(r.data.network.slice("eip155:".length)) };
}

/** The proof string for an authorization and its signature (docs, tests, the bench). */
export function encodeGatewayProof(input: {
  chainId: number;
  signature: `0x${string}`;
  authorization: {
    from: string;
    to: string;
    value: bigint;
    validAfter: bigint;
    validBefore: bigint;
    nonce: string;
  };
}): string {
  const a = input.authorization;
  const json = JSON.stringify({
    x402Version: 1,
    scheme: "gateway",
    network: `eip155:${input.chainId}`,
    payload: {
      signature: input.signature,
      authorization: {
        from: a.from,
        to: a.to,
        value: a.value.toString(),
        validAfter: a.validAfter.toString(),
        validBefore: a.validBefore.toString(),
        nonce: a.nonce,
      },
    },
  });
  return new TextEncoder().encode(json).toBase64();
}

export type WindowCheck =
  | "ok"
  | "expired"
  | "lapsed"
  | "not_yet_valid"
  | "window_invalid"
  | "too_soon"
  | "too_far";

/**
 * The proof window against our clock: timestamp (validAfter) at most 5 minutes old ("expired",
 * the spec's text), validBefore not passed ("lapsed": the 403 says so, not that the timestamp is
 * old) and leaving time to call the upstream and settle (`MIN_VALID_FOR_SECONDS`), within what
 * is stored (`MAX_AUTHORIZATION_SECONDS`).
 */
export function checkWindow(
  a: { validAfter: bigint; validBefore: bigint },
  nowSeconds: bigint,
): WindowCheck {
  if (a.validBefore <= a.validAfter) return "window_invalid";
  if (a.validBefore > MAX_AUTHORIZATION_SECONDS) return "too_far";
  if (a.validAfter > nowSeconds + BigInt(PROOF_MAX_SKEW_SECONDS)) return "not_yet_valid";
  if (nowSeconds - a.validAfter > BigInt(PROOF_MAX_AGE_SECONDS)) return "expired";
  if (a.validBefore <= nowSeconds) return "lapsed";
  if (a.validBefore < nowSeconds + MIN_VALID_FOR_SECONDS) return "too_soon";
  return "ok";
}

/** The 403 hint of a window that is not "ok" or "expired". */
export function windowHint(w: Exclude<WindowCheck, "ok" | "expired">): string {
  switch (w) {
    case "not_yet_valid":
      return "validAfter is in the future";
    case "lapsed":
      return "validBefore has passed";
    case "window_invalid":
      return "validBefore must be after validAfter";
    case "too_soon":
      return `validBefore must leave at least ${MIN_VALID_FOR_SECONDS} seconds to settle`;
    case "too_far":
      return "validBefore is too far in the future";
  }
}

/** Query string for GET/DELETE, JSON body otherwise (params forwarded verbatim). */
export function upstreamRequest(
  base: string,
  method: HttpMethod,
  params: Record<string, unknown> | undefined,
): { url: URL; body?: string } {
  const url = new URL(base);
  if (method === "GET" || method === "DELETE") {
    for (const [k, v] of Object.entries(params ?? {})) {
      if (v === undefined || v === null) continue;
      url.searchParams.append(k, typeof v === "string" ? v : JSON.stringify(v));
    }
    return { url };
  }
  return { url, body: JSON.stringify(params ?? {}) };
}

export function nowSeconds(d: Date): bigint {
  return BigInt(Math.floor(d.getTime() / 1000));
}

/** The sender intent of a proof's settlement: one transaction per (scheme, payer, nonce). */
export function settlementIntent(
  scheme: "gateway" | "exact",
  payer: string,
  nonce: string,
): string {
  return `x402:${scheme}:${payer.toLowerCase()}:${nonce.toLowerCase()}`;
}

/** The least a relayed deposit moves: the relayer pays its gas (~80,000). */
export const RELAY_MIN_DEPOSIT = 1_000_000n;
/** A relayed deposit must stay valid this long after it is taken: time to be sent and mined. */
export const RELAY_MARGIN_SECONDS = 60n;

/**
 * Why a signed deposit would not be relayed, from its terms (null: they are fine): received by
 * another contract than the vault, or under the minimum.
 */
export function relayTermsRefusal(
  a: { to: string; value: bigint },
  vault: string,
): "x402_relay_vault" | "x402_relay_minimum" | null {
  if (a.to.toLowerCase() !== vault.toLowerCase()) return "x402_relay_vault";
  if (a.value < RELAY_MIN_DEPOSIT) return "x402_relay_minimum";
  return null;
}

/**
 * Whether a signed withdrawal is too small to relay: under the relayed minimum, unless it takes
 * everything the account can (`can`), so a balance under the minimum can still come out once.
 */
export function relayWithdrawalTooSmall(value: bigint, can: bigint): boolean {
  return value < RELAY_MIN_DEPOSIT && value !== can;
}

/** Whether a signed withdrawal stays valid until it is mined (`RELAY_MARGIN_SECONDS` ahead). */
export function relayDeadlineOpen(validBefore: bigint, now: bigint): boolean {
  return now + RELAY_MARGIN_SECONDS < validBefore;
}

/**
 * Whether a signed deposit is valid from now (the token wants its `validAfter` passed) until it
 * is mined (`RELAY_MARGIN_SECONDS` before its `validBefore`).
 */
export function relayWindowOpen(a: { validAfter: bigint; validBefore: bigint }, now: bigint) {
  return a.validAfter < now && now + RELAY_MARGIN_SECONDS < a.validBefore;
}
