/**
 * Our facilitator's `batch-settlement` support (`/api/x402/facilitator/{supported,verify,
 * settle}`), as the scheme's EVM binding describes it: `/supported` names the scheme with the
 * receiver authorizer a seller may delegate to (ours); `/verify` checks a deposit, voucher or
 * refund against the channel's on-chain state; `/settle` relays a deposit, a claim, a settle or
 * a cooperative refund. Claims whose channels delegate to our authorizer are not sent one by
 * one: they join the claim job's next batch, and the answer carries that batch's transaction.
 * A `voucher` sent to /settle is recorded as a charge (for sellers that keep no channel state)
 * and claimed the same way. A channel must pay one of the calling merchant's addresses.
 */
import { checksum, lower } from "../../chain/address.ts";
import type { ClaimRow } from "../../chain/index.ts";
import type { ProfileName } from "../../chain/profiles.ts";
import type { MerchantRow } from "../merchants/merchants.types.ts";
import { profileOfNetwork, x402Profiles } from "./x402.exact.ts";
import type { FacilitatorRequest } from "./x402.standard.ts";
import type { X402Deps } from "./x402.context.ts";
import * as x402Repo from "./x402.repo.ts";
import * as repo from "./x402.channels.repo.ts";
import * as claims from "./x402.channels.claims.repo.ts";
import {
  channelEnvelope,
  type ChannelPayload,
  channelPayload,
  channelState,
  type ChannelTerms,
  E,
  SCHEME,
} from "./x402.channels.rules.ts";
import { available } from "./x402.channels.state.ts";
import { claimRound } from "./x402.channels.claims.ts";
import { chainRefused } from "./x402.channels.deposit.ts";
import { verifyPaid } from "./x402.channels.verify.ts";
import { settlePaid } from "./x402.channels.settle.ts";

type Answer = Record<string, unknown>;

/** `/supported` plus the scheme on every chain that has the contract. */
export async function withChannelKinds<T extends { kinds: unknown[] }>(deps: X402Deps, s: T) {
  const kinds: unknown[] = [];
  for (const p of x402Profiles(deps)) {
    if (!(await available(deps, p))) continue;
    kinds.push({
      x402Version: 2,
      scheme: SCHEME,
      network: `eip155:${deps.chain.chainId(p)}`,
      extra: { receiverAuthorizer: checksum(deps.chain.channels.receiverAuthorizer(p)) },
    });
  }
  return { ...s, kinds: [...s.kinds, ...kinds] };
}

const isOurs = (r: FacilitatorRequest) =>
  r.paymentRequirements.scheme === SCHEME ||
  (r.paymentPayload as { accepted?: { scheme?: string } }).accepted?.scheme === SCHEME;

/** What both endpoints start from: the scheme, the network, the payload. */
function inspect(
  deps: X402Deps,
  r: FacilitatorRequest,
): { error: string } | { p: ProfileName; payload: ChannelPayload; network: string } {
  const env = channelEnvelope.safeParse(r.paymentPayload);
  const req = r.paymentRequirements;
  if (!env.success || req.scheme !== SCHEME) return { error: E.scheme };
  if (env.data.accepted.network !== req.network) return { error: E.network };
  const p = profileOfNetwork(deps, req.network);
  if (!p) return { error: E.network };
  const payload = channelPayload.safeParse(env.data.payload);
  if (!payload.success) return { error: E.payloadType };
  return { p, payload: payload.data, network: req.network };
}

export async function channelVerify(deps: X402Deps, r: FacilitatorRequest): Promise<Answer | null> {
  if (!isOurs(r)) return null;
  const i = inspect(deps, r);
  if ("error" in i) return { isValid: false, invalidReason: i.error };
  if (i.payload.type === "claim" || i.payload.type === "settle") {
    return { isValid: false, invalidReason: E.payloadType };
  }
  const v = await verifyPaid(deps, i.p, i.payload, r.paymentRequirements);
  return v.ok
    ? { isValid: true, payer: checksum(v.payer), extra: channelState(v.snapshot) }
    : { isValid: false, invalidReason: v.reason, ...(v.payer ? { payer: checksum(v.payer) } : {}) };
}

export async function channelSettle(
  deps: X402Deps,
  m: MerchantRow,
  r: FacilitatorRequest,
): Promise<Answer | null> {
  if (!isOurs(r)) return null;
  const network = r.paymentRequirements.network;
  const fail = (errorReason: string, payer?: string) => ({
    success: false,
    errorReason,
    ...(payer ? { payer: checksum(payer) } : {}),
    transaction: "",
    network,
  });
  const i = inspect(deps, r);
  if ("error" in i) return fail(i.error);
  const receivers = i.payload.type === "claim"
    ? i.payload.claims.map((c) => c.voucher.channel.receiver)
    : [i.payload.type === "settle" ? i.payload.receiver : i.payload.channelConfig.receiver];
  for (const receiver of new Set(receivers)) {
    const mine = (m.walletAddress && lower(m.walletAddress) === receiver) ||
      await x402Repo.isSellerOf(deps.sql, m.id, receiver);
    if (!mine) return fail(E.notYours);
  }
  try {
    switch (i.payload.type) {
      case "claim":
        return await settleClaims(deps, i.p, m, i.payload, network, fail);
      case "settle":
        return await settleReceiver(deps, i.p, i.payload, network);
      default:
        return await settlePaid(deps, i.p, m, i.payload, r.paymentRequirements, fail);
    }
  } catch (e) {
    if (!chainRefused(e)) throw e;
    const reason = i.payload.type === "claim"
      ? E.claimFailed
      : i.payload.type === "settle"
      ? E.settleFailed
      : i.payload.type === "deposit"
      ? E.depositFailed
      : E.refundFailed;
    return fail(reason);
  }
}

/**
 * A seller's claim: rows delegated to our authorizer join the claim job's batch (the answer is
 * the transaction that claimed them); rows under the seller's own authorizer, with its
 * signature, are relayed as they are.
 */
async function settleClaims(
  deps: X402Deps,
  p: ProfileName,
  m: MerchantRow,
  payload: Extract<ChannelPayload, { type: "claim" }>,
  network: string,
  fail: (reason: string) => Answer,
): Promise<Answer> {
  const ours = lower(deps.chain.channels.receiverAuthorizer(p));
  const rows: (ClaimRow & { channelId: `0x${string}` })[] = [];
  for (const c of payload.claims) {
    const terms = c.voucher.channel;
    const channelId = deps.chain.channels.channelId(p, terms);
    if (c.totalClaimed > c.voucher.maxClaimableAmount) return fail(E.exceedsBalance);
    const signed = await deps.chain.channels.voucherSigned(
      p,
      terms,
      channelId,
      c.voucher.maxClaimableAmount,
      c.signature,
    );
    if (!signed) return fail(E.voucherSignature);
    rows.push({
      channelId,
      config: terms,
      maxClaimable: c.voucher.maxClaimableAmount,
      signature: c.signature,
      totalClaimed: c.totalClaimed,
    });
  }
  const delegated = rows.every((r) => r.config.receiverAuthorizer === ours);
  if (!delegated) {
    if (!payload.claimAuthorizerSignature) return fail(E.authorizerMismatch);
    const digest = await crypto.subtle.digest(
      "SHA-256",
      new TextEncoder().encode(
        JSON.stringify(payload, (_k, v) => typeof v === "bigint" ? `${v}` : v),
      ),
    );
    const key = Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
    const tx = await deps.chain.channels.claimWithSignature(p, {
      rows,
      signature: payload.claimAuthorizerSignature,
      intentKey: `x402ch:xclaim:${key}`,
    });
    return { success: true, transaction: tx.txHash, network, amount: "" };
  }
  const chainId = deps.chain.chainId(p);
  for (const r of rows) {
    await repo.recordClaimable(deps.sql, {
      channelId: r.channelId,
      chainId,
      merchantId: m.id,
      terms: r.config as ChannelTerms,
      maxClaimable: r.maxClaimable,
      signature: r.signature,
      total: r.totalClaimed,
      now: deps.clock.now(),
    });
  }
  // Channels we had not seen (deposited elsewhere) get the contract's state before the round.
  const states = await deps.chain.channels.states(p, rows.map((r) => r.channelId));
  for (const [i, r] of rows.entries()) {
    await repo.mirror(deps.sql, r.channelId, states[i], deps.clock.now());
  }
  await claimRound(deps, p);
  let txHash = "";
  for (const r of rows) {
    const covering = await claims.claimCovering(deps.sql, r.channelId, r.totalClaimed);
    if (covering) {
      txHash = covering.txHash;
      continue;
    }
    // Not claimed: the chain already had it (claims are cumulative), or it could not be.
    const [state] = await deps.chain.channels.states(p, [r.channelId]);
    if (state.totalClaimed < r.totalClaimed) return fail(E.claimFailed);
  }
  return { success: true, transaction: txHash, network, amount: "" };
}

/** `settle(receiver, token)`; nothing owed is a success that moved "0". */
async function settleReceiver(
  deps: X402Deps,
  p: ProfileName,
  payload: Extract<ChannelPayload, { type: "settle" }>,
  network: string,
): Promise<Answer> {
  const totals = await deps.chain.channels.receiverTotals(p, payload.receiver, payload.token);
  const owed = totals.claimed - totals.settled;
  if (owed <= 0n) return { success: true, transaction: "", network, amount: "0" };
  const tx = await deps.chain.channels.settle(p, {
    receiver: payload.receiver,
    token: payload.token,
    intentKey: `x402ch:settle:${payload.receiver}:${payload.token}:${totals.claimed}`,
  });
  return { success: true, transaction: tx.txHash, network, amount: owed.toString() };
}
