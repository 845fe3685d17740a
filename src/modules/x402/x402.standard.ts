/**
 * Standard x402 on our listings (`/x402/{slug}`) and the self-hosted facilitator, as services:
 * an unpaid call gets the v2 requirements (for the `PAYMENT-REQUIRED` header) and the v1 body;
 * a paid one (v2 `PAYMENT-SIGNATURE` or v1 `X-PAYMENT`, scheme `exact` on EIP-3009) is verified,
 * claimed, forwarded to the upstream, and settled, in that order, so an upstream failure charges
 * nothing and a replay is refused before anything is called or broadcast.
 */
import { DomainError } from "../../errors.ts";
import { checksum, lower } from "../../chain/address.ts";
import * as repo from "./x402.repo.ts";
import type { MerchantRow } from "../merchants/merchants.types.ts";
import {
  claimExact,
  decodeHeader,
  exactRequirements,
  settleErrorReason,
  settleExact,
  settleResponse,
  verifyExact,
  x402Profiles,
} from "./x402.exact.ts";
import { cachedListing } from "./x402.listings.ts";
import { callForAttempt, settleAttempt, type X402Deps, x402Profile } from "./x402.service.ts";
import type { HttpMethod } from "./x402.rules.ts";

export interface StandardCall {
  slug: string;
  method: HttpMethod;
  /** The resource's own URL (the 402 answer names it). */
  resourceUrl: string;
  /** Raw query string without `?`, forwarded as is. */
  query: string;
  body?: string;
  contentType?: string;
  payment?: { version: 1 | 2; header: string };
  agentId?: string;
  /** `X-Agent-Signature`: the agent wallet's AgentPayment signature of validAfter and nonce. */
  agentSignature?: string;
}

export type StandardOutcome =
  | {
    kind: "required";
    /** For the PAYMENT-REQUIRED header. */
    v2: Record<string, unknown>;
    /** The body (v1 clients read it). */
    v1: Record<string, unknown>;
  }
  | {
    kind: "paid";
    version: 1 | 2;
    status: number;
    contentType: string | null;
    body: Uint8Array;
    paymentResponse: ReturnType<typeof settleResponse>;
  };

export async function standardCall(deps: X402Deps, input: StandardCall): Promise<StandardOutcome> {
  const listing = await cachedListing(deps, input.slug);
  if (!listing.methods.includes(input.method)) {
    throw new DomainError("x402_method_not_allowed", {
      hint: `Allowed: ${listing.methods.join(", ")}`,
    });
  }
  const profile = x402Profile(deps);
  const req = exactRequirements(deps, profile, listing.seller, listing.price);
  const required = (error: string): StandardOutcome => ({
    kind: "required",
    v2: {
      x402Version: 2,
      error,
      resource: {
        url: input.resourceUrl,
        description: listing.description ?? listing.slug,
        mimeType: "application/json",
      },
      accepts: [req],
    },
    v1: {
      x402Version: 1,
      error,
      accepts: [{
        scheme: req.scheme,
        network: req.network,
        maxAmountRequired: req.amount,
        resource: input.resourceUrl,
        description: listing.description ?? listing.slug,
        mimeType: "application/json",
        payTo: req.payTo,
        maxTimeoutSeconds: req.maxTimeoutSeconds,
        asset: req.asset,
        extra: req.extra,
      }],
    },
  });
  if (!input.payment) return required("X-PAYMENT header is required");
  const v = await verifyExact(deps, decodeHeader(input.payment.header), {
    network: req.network,
    payTo: listing.seller,
    amount: listing.price,
    asset: req.asset,
  });
  if (!v.isValid) return required(v.invalidReason);
  if (input.agentId !== undefined) {
    await deps.agents.verifyAgent({
      agentId: input.agentId,
      signature: input.agentSignature,
      payer: v.payer,
      proof: input.payment.header,
      authorization: {
        validAfter: v.payload.authorization.validAfter,
        nonce: v.payload.authorization.nonce as `0x${string}`,
      },
    });
  }
  const attempt = await claimExact(deps, v, {
    listingId: listing.id,
    listingSlug: listing.slug,
    merchantId: listing.merchantId,
    agentId: input.agentId ?? null,
  });
  if (attempt === "used") return required("invalid_exact_evm_nonce_already_used");
  if (attempt === "insufficient") return required("invalid_exact_evm_insufficient_balance");
  const claimedAt = performance.now();

  const url = new URL(listing.upstreamUrl);
  if (input.query) {
    for (const [k, val] of new URLSearchParams(input.query)) url.searchParams.append(k, val);
  }
  const up = await callForAttempt(deps, attempt.id, url, {
    method: input.method,
    body: input.method === "GET" || input.method === "DELETE" ? undefined : input.body ?? "",
    headers: input.contentType ? { "content-type": input.contentType } : {},
  }, v.payload.authorization.validBefore);
  const txHash = await settleAttempt(deps, attempt.id, up.status, () => settleExact(deps, v), {
    claimedAt,
  });
  return {
    kind: "paid",
    version: input.payment.version,
    status: up.status,
    contentType: up.contentType,
    body: up.body,
    paymentResponse: settleResponse(req.network, {
      txHash,
      payer: v.payer,
      amount: listing.price,
    }),
  };
}

// ---- the facilitator ------------------------------------------------------------------------

export interface FacilitatorRequest {
  paymentPayload: unknown;
  paymentRequirements: {
    scheme: string;
    network: string;
    payTo: string;
    amount?: string;
    maxAmountRequired?: string;
    asset?: string;
  };
}

function requirementsOf(r: FacilitatorRequest["paymentRequirements"]) {
  const amount = r.amount ?? r.maxAmountRequired;
  if (r.scheme !== "exact" || amount === undefined || !/^[1-9][0-9]{0,30}$/.test(amount)) {
    return null;
  }
  return { network: r.network, payTo: r.payTo, amount: BigInt(amount), asset: r.asset };
}

/** The facilitator's /supported: `exact` on x402's chain (the testnet), v1 and v2. */
export function supported(deps: X402Deps) {
  const kinds = x402Profiles(deps).flatMap((p) => {
    const network = `eip155:${deps.chain.chainId(p)}`;
    return [2, 1].map((x402Version) => ({ x402Version, scheme: "exact", network }));
  });
  const signers: Record<string, string[]> = {};
  for (const p of x402Profiles(deps)) {
    const op = deps.chain.runtime(p).operator?.address;
    if (op) signers[`eip155:${deps.chain.chainId(p)}`] = [op];
  }
  return { kinds, extensions: [] as string[], signers };
}

export async function facilitatorVerify(deps: X402Deps, r: FacilitatorRequest) {
  const req = requirementsOf(r.paymentRequirements);
  if (!req) return { isValid: false, invalidReason: "invalid_payment_requirements" };
  const v = await verifyExact(deps, r.paymentPayload, req);
  return v.isValid ? { isValid: true, payer: checksum(v.payer) } : {
    isValid: false,
    invalidReason: v.invalidReason,
    ...(v.payer ? { payer: checksum(v.payer) } : {}),
  };
}

/** The facilitator's refusal of a payment to an address that is not the calling merchant's. */
export const NOT_YOURS = "invalid_exact_evm_recipient_not_yours";

async function paysMerchant(deps: X402Deps, m: MerchantRow, payTo: string): Promise<boolean> {
  const to = lower(payTo);
  return (m.walletAddress !== null && lower(m.walletAddress) === to) ||
    await repo.isSellerOf(deps.sql, m.id, to);
}

/** Verifies, claims and settles a seller's payment; recorded under the merchant. */
export async function facilitatorSettle(deps: X402Deps, m: MerchantRow, r: FacilitatorRequest) {
  const req = requirementsOf(r.paymentRequirements);
  const network = r.paymentRequirements.network;
  if (!req) return settleResponse(network, { errorReason: "invalid_payment_requirements" });
  const v = await verifyExact(deps, r.paymentPayload, req);
  if (!v.isValid) {
    return settleResponse(network, { errorReason: v.invalidReason, payer: v.payer });
  }
  // Settled on our operator's gas and recorded under the merchant: only to the merchant's own
  // payout wallet or listing sellers (as channels refuse a receiver that is not theirs).
  if (!(await paysMerchant(deps, m, req.payTo))) {
    return settleResponse(network, { errorReason: NOT_YOURS, payer: v.payer });
  }
  const attempt = await claimExact(deps, v, {
    listingId: null,
    listingSlug: null,
    merchantId: m.id,
    agentId: null,
  });
  const claimedAt = performance.now();
  if (attempt === "used" || attempt === "insufficient") {
    return settleResponse(network, {
      errorReason: attempt === "used"
        ? "invalid_exact_evm_nonce_already_used"
        : "invalid_exact_evm_insufficient_balance",
      payer: v.payer,
    });
  }
  try {
    const txHash = await settleAttempt(deps, attempt.id, undefined, () => settleExact(deps, v), {
      claimedAt,
    });
    return settleResponse(network, { txHash, payer: v.payer, amount: req.amount });
  } catch (e) {
    return settleResponse(network, { errorReason: settleErrorReason(e), payer: v.payer });
  }
}
