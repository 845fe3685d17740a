/**
 * The facilitator's /settle for a seller's deposit, voucher or refund payload (claims and
 * settles: x402.channels.facilitator.ts). A deposit and a refund go on chain now; a voucher is
 * recorded as a charge, cheaply, and collected by the claim job with the other channels (claimed
 * before the answer when its channel commits no payer authorizer).
 */
import { checksum, isZeroAddress, lower } from "../../chain/address.ts";
import type { ProfileName } from "../../chain/profiles.ts";
import type { MerchantRow } from "../merchants/merchants.types.ts";
import type { FacilitatorRequest } from "./x402.standard.ts";
import type { X402Deps } from "./x402.context.ts";
import * as repo from "./x402.channels.repo.ts";
import { type ChannelPayload, channelState, E, HOLD_MS, termsOf } from "./x402.channels.rules.ts";
import { executeRefund } from "./x402.channels.deposit.ts";
import { checkDeposit, verifyPaid } from "./x402.channels.verify.ts";
import { claimCharge } from "./x402.channels.claims.ts";

type Answer = Record<string, unknown>;

export async function settlePaid(
  deps: X402Deps,
  p: ProfileName,
  m: MerchantRow,
  payload: Extract<ChannelPayload, { type: "deposit" | "voucher" | "refund" }>,
  req: FacilitatorRequest["paymentRequirements"],
  fail: (reason: string, payer?: string) => Answer,
): Promise<Answer> {
  const v = await verifyPaid(deps, p, payload, req);
  if (!v.ok) return fail(v.reason, v.payer);
  const network = req.network;
  const now = deps.clock.now();
  const row = await repo.record(deps.sql, {
    channelId: v.channelId,
    chainId: deps.chain.chainId(p),
    merchantId: m.id,
    terms: termsOf(payload.channelConfig),
    now,
  });
  const mirrored = await repo.mirror(deps.sql, row.channelId, v.state, now);
  const ok = (r: { transaction: string; amount: string; extra: Answer }) => ({
    success: true,
    payer: checksum(v.payer),
    network,
    ...r,
  });

  if (payload.type === "deposit") {
    const d = await checkDeposit(deps, p, v.channelId, payload);
    if ("reason" in d) return fail(d.reason, v.payer);
    const tx = await deps.chain.channels.deposit(p, {
      config: termsOf(payload.channelConfig),
      deposit: d.deposit,
      intentKey: d.intentKey,
    });
    const [state] = await deps.chain.channels.states(p, [v.channelId]);
    const after = await repo.mirror(deps.sql, v.channelId, state, deps.clock.now());
    return ok({
      transaction: tx.txHash,
      amount: d.deposit.amount.toString(),
      extra: { channelState: channelState(after) },
    });
  }

  const ours = lower(deps.chain.channels.receiverAuthorizer(p));
  if (payload.type === "voucher") {
    // We collect what we record: the channel must delegate its claims to our authorizer.
    if (payload.channelConfig.receiverAuthorizer !== ours) {
      return fail(E.authorizerMismatch, v.payer);
    }
    if (mirrored.withdrawRequestedAt > 0n) return fail(E.withdrawPending, v.payer);
    const amount = BigInt(req.amount ?? req.maxAmountRequired ?? "0");
    // No payer authorizer: the contract asks the payer's code at claim time, so the voucher is
    // claimed before the seller's server is answered (and serves its response), the channel
    // held meanwhile (one such voucher at a time, as on /x402/{slug}).
    const claimFirst = isZeroAddress(payload.channelConfig.payerAuthorizer);
    const pendingId = claimFirst ? crypto.randomUUID() : null;
    let before = mirrored;
    if (pendingId) {
      const now = deps.clock.now();
      const until = new Date(now.getTime() + HOLD_MS);
      const held = await repo.hold(deps.sql, { channelId: v.channelId, pendingId, until, now });
      if (held === "busy" || !held) return fail(E.busy, v.payer);
      before = held;
    }
    let claimTx = "";
    try {
      const charged = await repo.chargeVoucher(deps.sql, {
        channelId: v.channelId,
        price: amount,
        maxClaimable: payload.voucher.maxClaimableAmount,
        signature: payload.voucher.signature,
        merchantId: m.id,
        pendingId,
        now: deps.clock.now(),
      });
      if (!charged) {
        return { ...fail(E.mismatch, v.payer), extra: { channelState: channelState(mirrored) } };
      }
      if (pendingId) {
        const claimed = await claimCharge(deps, p, {
          channelId: v.channelId,
          pendingId,
          price: amount,
          maxClaimable: payload.voucher.maxClaimableAmount,
          signature: payload.voucher.signature,
          cumulative: charged.charged,
          previous: { signedMax: before.signedMax, signature: before.signature },
        });
        if (claimed.status === "refused") return fail(claimed.reason, v.payer);
        if (claimed.status === "claimed") claimTx = claimed.txHash;
      }
      return ok({
        transaction: claimTx,
        amount: "",
        extra: { chargedAmount: amount.toString(), channelState: channelState(charged) },
      });
    } finally {
      if (pendingId) await repo.release(deps.sql, v.channelId, pendingId);
    }
  }

  // A cooperative refund a seller's server completed (nonce, amount, the claim of what it was
  // charged). We sign for our receiver authorizer only.
  const named = (req as { extra?: { receiverAuthorizer?: unknown } }).extra?.receiverAuthorizer;
  if (payload.channelConfig.receiverAuthorizer !== ours || lower(String(named)) !== ours) {
    return fail(E.authorizerMismatch, v.payer);
  }
  if (payload.refundNonce !== undefined && payload.refundNonce !== v.state.refundNonce) {
    return fail(E.refundFailed, v.payer);
  }
  const claim = payload.claims?.[0];
  if (claim && deps.chain.channels.channelId(p, claim.voucher.channel) !== v.channelId) {
    return fail(E.channelId, v.payer);
  }
  const claimSigned = !claim || await deps.chain.channels.voucherSigned(
    p,
    claim.voucher.channel,
    v.channelId,
    claim.voucher.maxClaimableAmount,
    claim.signature,
  );
  if (!claimSigned || (claim && claim.totalClaimed > claim.voucher.maxClaimableAmount)) {
    return fail(E.voucherSignature, v.payer);
  }
  const owed = claim?.totalClaimed ?? v.state.totalClaimed;
  const amount = payload.amount ?? v.state.balance - owed;
  if (amount <= 0n) return fail(E.refundNoBalance, v.payer);
  const done = await executeRefund(
    deps,
    p,
    mirrored,
    amount,
    claim && claim.totalClaimed > v.state.totalClaimed
      ? {
        maxClaimable: claim.voucher.maxClaimableAmount,
        signature: claim.signature,
        totalClaimed: claim.totalClaimed,
      }
      : undefined,
  );
  if (!done) return fail(E.refundFailed, v.payer);
  return ok({
    transaction: done.tx.txHash,
    amount: (v.state.balance - done.after.balance).toString(),
    extra: { channelState: channelState(done.after) },
  });
}
