/**
 * The x402 `batch-settlement` scheme on our listings (`/x402/{slug}`), as the scheme's server:
 * the 402 offers a channel to the listing's seller beside `exact`; a paid call is a cumulative
 * voucher checked locally against our mirror of the channel (a deposit first when the client
 * opens or tops it up), served while the channel is held for it (one request per channel, a row
 * not a lock), and charged only when the upstream succeeded. Nothing is sent on chain per call:
 * the claim job (x402.channels.claims.ts) collects the vouchers, many channels per transaction;
 * but a channel without a payer authorizer, whose vouchers the payer's code may disown before the
 * claim, has each call's voucher claimed before the answer (claimCharge).
 */
import { DomainError } from "../../errors.ts";
import { checksum, isZeroAddress } from "../../chain/address.ts";
import { decodeHeader } from "./x402.exact.ts";
import type { ListingRow } from "./x402.repo.ts";
import { type StandardCall, standardCall, type StandardOutcome } from "./x402.standard.ts";
import { UPSTREAM_TIMEOUT_MS, type X402Deps, x402Profile } from "./x402.context.ts";
import { cachedListing } from "./x402.listings.ts";
import { callUpstream, upstreamRefusal } from "./x402.upstream.ts";
import * as repo from "./x402.channels.repo.ts";
import {
  channelEnvelope,
  type ChannelPayload,
  channelPayload,
  channelState,
  E,
  HOLD_MS,
  isChannelEnvelope,
  MAX_TIMEOUT_SECONDS,
  MIN_DEPOSIT_CALLS,
  SCHEME,
  STATE_TTL_MS,
  termsError,
  WITHDRAW_DELAY,
} from "./x402.channels.rules.ts";
import { depositChannel, refundChannel } from "./x402.channels.deposit.ts";
import { available } from "./x402.channels.state.ts";
import { claimCharge } from "./x402.channels.claims.ts";
import { addToListings } from "./x402.totals.repo.ts";

/** What /x402/{slug} answers: the standard outcome, the channel's response header widened. */
export type ChannelOutcome =
  | Extract<StandardOutcome, { kind: "required" }>
  | (Omit<Extract<StandardOutcome, { kind: "paid" }>, "paymentResponse"> & {
    paymentResponse: Record<string, unknown>;
  });

/** The 402's batch-settlement terms for a listing; null where the scheme is not available. */
export async function channelRequirement(deps: X402Deps, listing: ListingRow) {
  const p = x402Profile(deps);
  if (!(await available(deps, p))) return null;
  const token = deps.chain.channels.token(p);
  return {
    scheme: SCHEME,
    network: `eip155:${token.chainId}`,
    amount: listing.price.toString(),
    asset: checksum(token.verifyingContract),
    payTo: checksum(listing.seller),
    maxTimeoutSeconds: MAX_TIMEOUT_SECONDS,
    extra: {
      name: token.name,
      version: token.version,
      receiverAuthorizer: checksum(deps.chain.channels.receiverAuthorizer(p)),
      withdrawDelay: WITHDRAW_DELAY,
      minDeposit: (listing.price * MIN_DEPOSIT_CALLS).toString(),
    },
  };
}

/**
 * `/x402/{slug}`: a batch-settlement payment is answered here; anything else by the standard
 * flow, whose 402 then offers a channel too.
 */
export async function channelAwareCall(
  deps: X402Deps,
  input: StandardCall,
): Promise<ChannelOutcome> {
  const decoded = input.payment?.version === 2 ? decodeHeader(input.payment.header) : null;
  if (isChannelEnvelope(decoded)) return await channelCall(deps, input, decoded);
  const out = await standardCall(deps, input);
  if (out.kind !== "required") return out;
  const offer = await channelRequirement(deps, await cachedListing(deps, input.slug));
  if (!offer) return out;
  const accepts = out.v2.accepts as unknown[];
  return { ...out, v2: { ...out.v2, accepts: [...accepts, offer] } };
}

/** Everything one channel call works with. */
export interface ChannelCallContext {
  deps: X402Deps;
  input: StandardCall;
  listing: ListingRow;
  requirement: NonNullable<Awaited<ReturnType<typeof channelRequirement>>>;
  /** The 402 with `error`; `extra` joins the channel offer's (a corrective 402's state). */
  refuse(error: string, extra?: Record<string, unknown>): Promise<ChannelOutcome>;
}

async function channelCall(
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
  const requirement = await channelRequirement(deps, listing);
  // The 402 is built only when refusing: the standard one, the channel offer with its `extra`.
  const refuse = async (error: string, extra?: Record<string, unknown>) => {
    const unpaid = await standardCall(deps, { ...input, payment: undefined });
    if (unpaid.kind !== "required") throw new Error("an unpaid call must answer 402");
    const offer = requirement && extra
      ? { ...requirement, extra: { ...requirement.extra, ...extra } }
      : requirement;
    const accepts = [...(unpaid.v2.accepts as unknown[]), ...(offer ? [offer] : [])];
    return { ...unpaid, v2: { ...unpaid.v2, error, accepts } } as ChannelOutcome;
  };
  if (!requirement) return refuse(E.scheme);
  const env = channelEnvelope.safeParse(decoded);
  if (!env.success) return refuse(E.payloadType);
  if (env.data.accepted.network !== requirement.network) return refuse(E.network);
  const parsed = channelPayload.safeParse(env.data.payload);
  if (!parsed.success) return refuse(E.payloadType);
  const payload = parsed.data;
  if (payload.type !== "deposit" && payload.type !== "voucher" && payload.type !== "refund") {
    return refuse(E.payloadType);
  }
  const ctx: ChannelCallContext = { deps, input, listing, requirement, refuse };
  const p = x402Profile(deps);
  const channelId = deps.chain.channels.channelId(p, payload.channelConfig);
  const bad = termsError(payload.channelConfig, payload.voucher.channelId, {
    channelId,
    receiver: listing.seller,
    receiverAuthorizer: deps.chain.channels.receiverAuthorizer(p),
    token: requirement.asset,
    withdrawDelay: WITHDRAW_DELAY,
  });
  if (bad) return refuse(bad);
  const signed = await deps.chain.channels.voucherSigned(
    p,
    payload.channelConfig,
    channelId,
    payload.voucher.maxClaimableAmount,
    payload.voucher.signature,
  );
  if (!signed) return refuse(E.voucherSignature);
  const pendingId = crypto.randomUUID();
  const now = deps.clock.now();
  const hold = { channelId, pendingId, until: new Date(now.getTime() + HOLD_MS), now };
  let held = await repo.hold(deps.sql, hold);
  if (held === "busy") return refuse(E.busy);
  if (!held) {
    // A channel we never saw: only a deposit, or funds already on chain, earn it a record.
    if (payload.type !== "deposit") {
      const [state] = await deps.chain.channels.states(p, [channelId]);
      if (state.balance === 0n) return refuse(E.notFound);
    }
    held = await repo.open(deps.sql, {
      ...hold,
      chainId: deps.chain.chainId(p),
      merchantId: listing.merchantId,
      terms: payload.channelConfig,
    });
    if (!held) return refuse(E.busy);
  }
  let charged = false;
  try {
    const row = await fresh(deps, held, payload.type === "refund");
    if (payload.type === "refund") return await refundChannel(ctx, row, payload);
    const out = await paidCall(ctx, row, payload, pendingId);
    charged = out.kind === "paid";
    return out;
  } finally {
    // Refused, failed or refunded, the channel is given back (a charge gave it back itself).
    if (!charged) await repo.release(deps.sql, channelId, pendingId);
  }
}

/** The held channel with the contract's state no older than the TTL (always, for a refund). */
async function fresh(deps: X402Deps, row: repo.ChannelRow, always: boolean) {
  const age = row.syncedAt ? deps.clock.now().getTime() - row.syncedAt.getTime() : Infinity;
  if (!always && age <= STATE_TTL_MS) return row;
  const p = x402Profile(deps);
  const [state] = await deps.chain.channels.states(p, [row.channelId]);
  return await repo.mirror(deps.sql, row.channelId, state, deps.clock.now());
}

/** The corrective 402's channel and voucher state (the client re-bases on it and retries). */
function corrective(row: repo.ChannelRow) {
  return {
    channelState: channelState(row),
    ...(row.signature
      ? { voucherState: { signedMaxClaimable: row.signedMax.toString(), signature: row.signature } }
      : {}),
  };
}

async function paidCall(
  ctx: ChannelCallContext,
  held: repo.ChannelRow,
  payload: Extract<ChannelPayload, { type: "deposit" | "voucher" }>,
  pendingId: string,
): Promise<ChannelOutcome> {
  const { deps, listing, input } = ctx;
  const max = payload.voucher.maxClaimableAmount;
  if (held.withdrawRequestedAt > 0n) return ctx.refuse(E.withdrawPending);
  if (max !== held.charged + listing.price) return ctx.refuse(E.mismatch, corrective(held));
  const deposit = payload.type === "deposit" ? payload.deposit.amount : 0n;
  if (payload.type === "voucher" && held.balance === 0n) return ctx.refuse(E.notFound);
  if (max > held.balance + deposit) return ctx.refuse(E.exceedsBalance);
  if (max <= held.claimed) return ctx.refuse(E.belowClaimed);
  let row = held;
  let depositTx: string | null = null;
  if (payload.type === "deposit") {
    const d = await depositChannel(ctx, held, payload);
    if ("refused" in d) return ctx.refuse(d.refused);
    row = d.row;
    depositTx = d.txHash;
  }

  const url = new URL(listing.upstreamUrl);
  if (input.query) {
    for (const [k, v] of new URLSearchParams(input.query)) url.searchParams.append(k, v);
  }
  const up = await callUpstream(url, {
    method: input.method,
    body: input.method === "GET" || input.method === "DELETE" ? undefined : input.body ?? "",
    headers: input.contentType ? { "content-type": input.contentType } : {},
  }, { timeoutMs: UPSTREAM_TIMEOUT_MS, policy: deps.config.WEBHOOK_TARGETS });
  if (!up.ok) {
    // Nothing charged: the voucher stays unused, the client may send it again. The listing's
    // totals count the failed call (off the paid path: failures only).
    await countFailure(deps, listing.id);
    throw upstreamRefusal(up);
  }
  // A channel without a payer authorizer: the contract asks the payer's code about the voucher
  // when it is claimed, and that may answer otherwise by then. Claimed before the answer, under
  // the hold; refused, the charge is taken back and the upstream's answer withheld
  // (docs/decisions.md, "Channels without a payer authorizer").
  const claimFirst = isZeroAddress(row.payerAuthorizer);
  const charged = await repo.charge(deps.sql, {
    channelId: row.channelId,
    pendingId,
    price: listing.price,
    maxClaimable: max,
    signature: payload.voucher.signature,
    listingId: listing.id,
    merchantId: listing.merchantId,
    upstreamStatus: up.status,
    now: deps.clock.now(),
    keepHold: claimFirst,
  });
  if (!charged) return ctx.refuse(E.busy);
  let claimTx: string | null = null;
  if (claimFirst) {
    try {
      const claimed = await claimCharge(deps, x402Profile(deps), {
        channelId: row.channelId,
        pendingId,
        price: listing.price,
        maxClaimable: max,
        signature: payload.voucher.signature,
        cumulative: charged.charged,
        previous: { signedMax: row.signedMax, signature: row.signature },
      });
      if (claimed.status === "refused") return ctx.refuse(claimed.reason);
      if (claimed.status === "claimed") claimTx = claimed.txHash;
    } finally {
      await repo.release(deps.sql, row.channelId, pendingId);
    }
  }
  return {
    kind: "paid",
    version: 2,
    status: up.status,
    contentType: up.contentType,
    body: up.body,
    paymentResponse: {
      success: true,
      payer: checksum(row.payer),
      transaction: depositTx ?? claimTx ?? "",
      network: ctx.requirement.network,
      amount: depositTx ? deposit.toString() : "",
      extra: {
        chargedAmount: listing.price.toString(),
        channelState: channelState(charged),
        ...(claimTx ? { claimTransaction: claimTx } : {}),
      },
    },
  };
}

/** A channel call whose upstream failed, in its listing's totals; never in the way of the answer. */
async function countFailure(deps: X402Deps, listingId: string) {
  try {
    await addToListings(deps.sql, [{ listingId, calls: 0, failed: 1, revenue: 0n }]);
  } catch (e) {
    deps.log.warn("x402 channel call's failure not counted", { listing: listingId, error: e });
  }
}
