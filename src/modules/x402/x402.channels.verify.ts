/**
 * The facilitator's verification of a batch-settlement deposit, voucher or refund (the binding's
 * rules, in its order): the channel's terms against the requirements, the voucher's signature,
 * then the channel's on-chain state; for a deposit, its ERC-3009 authorization and the payer's
 * funds. Shared with `/x402/{slug}`'s deposits.
 */
import { lower } from "../../chain/address.ts";
import type { Erc3009Deposit } from "../../chain/index.ts";
import type { ProfileName } from "../../chain/profiles.ts";
import type { Deps } from "../../deps.ts";
import { nowSeconds } from "./x402.rules.ts";
import type { FacilitatorRequest } from "./x402.standard.ts";
import { type ChannelPayload, E, termsError } from "./x402.channels.rules.ts";
import type { OnChainState } from "./x402.channels.repo.ts";

/** A deposit needs this long left on its authorization (x402's facilitators use 6 s). */
const MIN_VALID_FOR_SECONDS = 6n;

type Paid = Extract<ChannelPayload, { type: "deposit" | "voucher" | "refund" }>;

export type Verified =
  | {
    ok: true;
    payer: `0x${string}`;
    channelId: `0x${string}`;
    state: OnChainState;
    snapshot: {
      channelId: string;
      balance: bigint;
      claimed: bigint;
      withdrawRequestedAt: number;
      refundNonce: bigint;
    };
  }
  | { ok: false; reason: string; payer?: `0x${string}` };

/** A deposit's authorization, checked; what relaying it takes. */
export async function checkDeposit(
  deps: Deps,
  p: ProfileName,
  channelId: `0x${string}`,
  payload: Extract<ChannelPayload, { type: "deposit" }>,
): Promise<{ reason: string } | { deposit: Erc3009Deposit; intentKey: string }> {
  const auth = payload.deposit.authorization.erc3009Authorization;
  if (!auth) return { reason: E.erc3009Required };
  const amount = payload.deposit.amount;
  if (amount === 0n) return { reason: E.payloadType };
  const now = nowSeconds(deps.clock.now());
  if (auth.validBefore < now + MIN_VALID_FOR_SECONDS) return { reason: E.validBefore };
  if (auth.validAfter > now) return { reason: E.validAfter };
  const deposit: Erc3009Deposit = { amount, ...auth };
  const payer = payload.channelConfig.payer;
  if (!(await deps.chain.channels.depositSigned(p, payer, channelId, deposit))) {
    return { reason: E.receiveSignature };
  }
  const nonce = deps.chain.channels.depositNonce(channelId, auth.salt);
  const intentKey = `x402ch:deposit:${nonce}`;
  // A deposit already sent (a retry of the same payload) is finished, not refused as spent.
  if (!(await deps.chain.transaction(p, intentKey))) {
    if (await deps.chain.channels.depositNonceUsed(p, payer, nonce)) {
      return { reason: E.depositSimulation };
    }
    if ((await deps.chain.usdcBalance(p, payer)) < amount) return { reason: E.insufficient };
  }
  return { deposit, intentKey };
}

/** The binding's verification rules for a paid payload against a seller's requirements. */
export async function verifyPaid(
  deps: Deps,
  p: ProfileName,
  payload: Paid,
  req: FacilitatorRequest["paymentRequirements"],
): Promise<Verified> {
  const t = payload.channelConfig;
  const payer = t.payer;
  const bad = (reason: string): Verified => ({ ok: false, reason, payer });
  const extra = (req as { extra?: Record<string, unknown> }).extra ?? {};
  const usdc = deps.chain.channels.token(p).verifyingContract;
  if (req.asset !== undefined && lower(req.asset) !== lower(usdc)) return bad(E.token);
  const channelId = deps.chain.channels.channelId(p, t);
  const terms = termsError(t, payload.voucher.channelId, {
    channelId,
    receiver: req.payTo,
    receiverAuthorizer: typeof extra.receiverAuthorizer === "string"
      ? extra.receiverAuthorizer
      : "",
    token: usdc,
    withdrawDelay: extra.withdrawDelay === undefined ? undefined : Number(extra.withdrawDelay),
  });
  if (terms) return bad(terms);
  const max = payload.voucher.maxClaimableAmount;
  const signed = await deps.chain.channels.voucherSigned(
    p,
    t,
    channelId,
    max,
    payload.voucher.signature,
  );
  if (!signed) return bad(E.voucherSignature);
  let s: OnChainState;
  try {
    [s] = await deps.chain.channels.states(p, [channelId]);
  } catch {
    return bad(E.rpc);
  }
  let balance = s.balance;
  if (payload.type === "deposit") {
    const d = await checkDeposit(deps, p, channelId, payload);
    if ("reason" in d) return bad(d.reason);
    balance += d.deposit.amount;
  } else if (s.balance === 0n) {
    return bad(E.notFound);
  }
  if (max > balance) return bad(E.exceedsBalance);
  const below = payload.type === "refund" ? max < s.totalClaimed : max <= s.totalClaimed;
  if (below) return bad(E.belowClaimed);
  return {
    ok: true,
    payer,
    channelId,
    state: s,
    snapshot: {
      channelId,
      balance: s.balance,
      claimed: s.totalClaimed,
      withdrawRequestedAt: s.withdrawRequestedAt,
      refundNonce: s.refundNonce,
    },
  };
}
