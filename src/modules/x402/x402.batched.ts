/**
 * Paid calls on the gateway balance, settled later in batches: Circle's batched option
 * (`exact`, extra.name `GatewayWalletBatched`) on `/x402/{slug}`. A paid call is: the EIP-712
 * TransferWithAuthorization checked locally (ECDSA recovery; an ERC-1271 account: one eth_call),
 * the amount reserved against the payer's mirrored vault balance in one statement
 * (x402.batched.repo.ts `reserve`), the upstream called, the charge kept only when it answered
 * (a failure gives the reservation back), and the answer. Nothing is sent on chain on the
 * request path: x402.batched.settle.ts settles the charges, many per transaction.
 */
import { DomainError } from "../../errors.ts";
import { checksum } from "../../chain/address.ts";
import type { ProfileName } from "../../chain/profiles.ts";
import type { Deps } from "../../deps.ts";
import { decodeHeader, paymentPayloadSchema } from "./x402.exact.ts";
import { UPSTREAM_TIMEOUT_MS, type X402Deps, x402Profile } from "./x402.context.ts";
import { cachedListing } from "./x402.listings.ts";
import type { ListingRow } from "./x402.repo.ts";
import { authorizationTerms, nowSeconds } from "./x402.rules.ts";
import { callUpstream, upstreamRefusal } from "./x402.upstream.ts";
import type { StandardCall, StandardOutcome } from "./x402.standard.ts";
import { channelAwareCall, type ChannelOutcome } from "./x402.channels.ts";
import * as repo from "./x402.batched.repo.ts";
import {
  BATCHED_MAX_TIMEOUT_SECONDS,
  BATCHED_NAME,
  BATCHED_VERSION,
  batchedRefusal,
  checkBatchedWindow,
  isBatchedPayment,
  minWithdrawalDelay,
} from "./x402.batched.rules.ts";
import { kickSettlement } from "./x402.batched.kick.ts";
import { settleNow } from "./x402.batched.settle.ts";
import { reserveCharge, serveCharge } from "./x402.batched.mirror.ts";

const solvent = new WeakMap<object, { ok: boolean; at: number }>();

/**
 * Whether batched acceptance is safe on the chain's vault: only its settlers (our relayers) may
 * submit authorizations, so a payer cannot spend a promised balance with one of its own, and its
 * withdrawal delay exceeds the settlement window plus the mirror's age (x402.batched.rules.ts);
 * or the chain is a local node of ours (zero delay, test keys: docs/decisions.md). Read once, a
 * "no" asked again a minute on.
 */
export async function batchedSafe(deps: Deps, p: ProfileName): Promise<boolean> {
  if (deps.chain.runtime(p).node) return true;
  const known = solvent.get(deps.chain);
  if (known && (known.ok || Date.now() - known.at < 60_000)) return known.ok;
  const [delay, missing] = await Promise.all([
    deps.chain.gateway.withdrawalDelay(p).catch(() => 0n),
    deps.chain.gateway.settlersMissing(p).catch(() => null),
  ]);
  const needed = minWithdrawalDelay(deps.config.X402_BATCH_SECONDS);
  const refusal = batchedRefusal({ delay, needed, missing });
  if (refusal) {
    deps.log.warn(`x402 batched option off: ${refusal}`, {
      delay: Number(delay),
      needed,
      missing: missing ?? undefined,
      fix: `deno task doctor names the fix (a vault with a withdrawal delay and our relayers ` +
        `as its settlers: deno task contracts:deploy --network ${p} --force --only GatewayVault)`,
    });
  }
  solvent.set(deps.chain, { ok: !refusal, at: Date.now() });
  return !refusal;
}

/** Circle's batched option for a listing, as the 402 offers it. */
export function batchedRequirement(deps: Pick<Deps, "chain">, p: ProfileName, listing: ListingRow) {
  const d = deps.chain.gateway.domain(p, "batched");
  return {
    scheme: "exact" as const,
    network: `eip155:${d.chainId}`,
    amount: listing.price.toString(),
    asset: checksum(deps.chain.gateway.domain(p, "usdc").verifyingContract),
    payTo: checksum(listing.seller),
    maxTimeoutSeconds: BATCHED_MAX_TIMEOUT_SECONDS,
    extra: {
      name: BATCHED_NAME,
      version: BATCHED_VERSION,
      verifyingContract: checksum(d.verifyingContract),
    },
  };
}

/**
 * `/x402/{slug}`: a batched payment is answered here; anything else by the channel-aware
 * standard flow, whose 402 then offers the batched option too (last: a standard `exact` client
 * picks the first option it can pay).
 */
export async function batchedAwareCall(
  deps: X402Deps,
  input: StandardCall,
): Promise<ChannelOutcome> {
  const decoded = input.payment?.version === 2 ? decodeHeader(input.payment.header) : null;
  const safe = await batchedSafe(deps, x402Profile(deps));
  if (safe && isBatchedPayment(decoded)) return await batchedCall(deps, input, decoded);
  const out = await channelAwareCall(deps, input);
  if (out.kind !== "required" || !safe) return out;
  return await withBatchedOffer(deps, input, out);
}

async function withBatchedOffer(
  deps: X402Deps,
  input: StandardCall,
  out: Extract<StandardOutcome, { kind: "required" }>,
  error?: string,
): Promise<ChannelOutcome> {
  const listing = await cachedListing(deps, input.slug);
  const offer = batchedRequirement(deps, x402Profile(deps), listing);
  const accepts = [...(out.v2.accepts as unknown[]), offer];
  // The refusal's reason in both forms (the v1 body said the header was missing).
  return error
    ? { ...out, v2: { ...out.v2, error, accepts }, v1: { ...out.v1, error } }
    : { ...out, v2: { ...out.v2, accepts } };
}

async function batchedCall(
  deps: X402Deps,
  input: StandardCall,
  decoded: unknown,
): Promise<ChannelOutcome> {
  const listing = await cachedListing(deps, input.slug);
  if (!listing.methods.includes(input.method)) {
    throw new DomainError("x402_method_not_allowed", {
      hint: `Allowed: ${listing.methods.join(", ")}`,
    });
  }
  const p = x402Profile(deps);
  const network = `eip155:${deps.chain.gateway.domain(p, "batched").chainId}`;
  const refuse = async (error: string) => {
    const unpaid = await channelAwareCall(deps, { ...input, payment: undefined });
    if (unpaid.kind !== "required") throw new Error("an unpaid call must answer 402");
    return await withBatchedOffer(deps, input, unpaid, error);
  };
  const parsed = paymentPayloadSchema.safeParse(decoded);
  if (!parsed.success || parsed.data.x402Version !== 2) return refuse("invalid_payload");
  const { accepted, payload } = parsed.data;
  if (accepted.scheme !== "exact") return refuse("invalid_exact_evm_scheme");
  if (accepted.network !== network) return refuse("invalid_exact_evm_network_mismatch");
  const a = payload.authorization;
  if (a.to !== listing.seller) return refuse("invalid_exact_evm_recipient_mismatch");
  if (a.value !== listing.price) {
    return refuse("invalid_exact_evm_payload_authorization_value_mismatch");
  }
  const now = deps.clock.now();
  const window = checkBatchedWindow(a, nowSeconds(now), deps.config.X402_BATCH_SECONDS);
  if (window === "not_yet_valid") {
    return refuse("invalid_exact_evm_payload_authorization_valid_after");
  }
  if (window === "too_short") return refuse("invalid_exact_evm_payload_authorization_valid_before");
  const signer = await deps.chain.gateway.signer(p, "batched", a, payload.signature);
  if (!signer) return refuse("invalid_exact_evm_signature");
  if (input.agentId !== undefined) {
    await deps.agents.verifyAgent({
      agentId: input.agentId,
      signature: input.agentSignature,
      payer: a.from,
      proof: input.payment!.header,
      authorization: { validAfter: a.validAfter, nonce: a.nonce as `0x${string}` },
    });
  }
  const chainId = deps.chain.chainId(p);
  const charge: repo.NewCharge = {
    id: crypto.randomUUID(),
    chainId,
    listingId: listing.id,
    listingSlug: listing.slug,
    merchantId: listing.merchantId,
    ...authorizationTerms(a),
    domain: "batched",
    signature: payload.signature,
    agentId: input.agentId ?? null,
    owner: deps.liveness?.id ?? null,
    now,
  };
  const reserved = await reserveCharge(deps, p, charge);
  if (reserved === "used") return refuse("invalid_exact_evm_nonce_already_used");
  if (reserved === "no_funds") return refuse("insufficient_balance");

  const url = new URL(listing.upstreamUrl);
  if (input.query) {
    for (const [k, val] of new URLSearchParams(input.query)) url.searchParams.append(k, val);
  }
  let up;
  try {
    up = await callUpstream(url, {
      method: input.method,
      body: input.method === "GET" || input.method === "DELETE" ? undefined : input.body ?? "",
      headers: input.contentType ? { "content-type": input.contentType } : {},
    }, { timeoutMs: UPSTREAM_TIMEOUT_MS, policy: deps.config.WEBHOOK_TARGETS });
  } catch (e) {
    await repo.release(deps.sql, charge.id, {
      error: `upstream: ${e instanceof Error ? e.message : String(e)}`,
      upstreamStatus: null,
      now: deps.clock.now(),
    });
    throw e;
  }
  if (!up.ok) {
    await repo.release(deps.sql, charge.id, {
      error: up.error,
      upstreamStatus: up.status ?? null,
      now: deps.clock.now(),
    });
    throw upstreamRefusal(up);
  }
  const paid = {
    kind: "paid" as const,
    version: 2 as const,
    status: up.status,
    contentType: up.contentType,
    body: up.body,
  };
  const receipt = {
    success: true,
    payer: checksum(a.from),
    network,
    amount: a.value.toString(),
  };
  if (signer === "node") {
    // Only the node vouched for the signature (an ERC-1271 account): what the account answers
    // may change before a batch asks again, and the seller would have served the call for
    // nothing. Settled before the answer goes out; refused by the vault, the upstream's answer
    // is withheld (docs/decisions.md, "Smart-account payers").
    const settled = await settleNow(deps, p, charge.id, up.status);
    if (settled.status === "failed") return refuse("invalid_exact_evm_signature");
    if (settled.status === "settled") {
      return {
        ...paid,
        paymentResponse: { ...receipt, transaction: settled.txHash, status: "settled" },
      };
    }
  } else {
    await serveCharge(deps, charge.id, up.status);
    kickSettlement(deps, 1);
  }
  return {
    ...paid,
    // Accepted, not yet on chain: `transaction` names the charge (GET its status in the
    // dashboard); the settlement's hash follows when its batch is mined.
    paymentResponse: { ...receipt, transaction: charge.id, status: "pending" },
  };
}
