/**
 * The two channel operations of `/x402/{slug}` that go on chain at once: a deposit (a client
 * opening or topping up its channel; its call is served once the deposit is mined) and a
 * cooperative refund (what the channel holds beyond the charges goes back to the payer, after
 * the outstanding voucher is claimed, in one transaction). A refund is recorded as a claim of
 * kind `refund` before it is sent, so a crash leaves a record the claim job finishes.
 */
import type { Deps } from "../../deps.ts";
import { DomainError } from "../../errors.ts";
import type { ProfileName } from "../../chain/profiles.ts";
import { checksum } from "../../chain/address.ts";
import { x402Profile } from "./x402.context.ts";
import * as repo from "./x402.channels.repo.ts";
import * as claims from "./x402.channels.claims.repo.ts";
import { type ChannelPayload, channelState, E, termsOf } from "./x402.channels.rules.ts";
import type { ChannelCallContext, ChannelOutcome } from "./x402.channels.ts";
import { checkDeposit } from "./x402.channels.verify.ts";

/** A chain refusal of our transaction (a revert, or the node's outright refusal). */
export function chainRefused(e: unknown): boolean {
  return e instanceof DomainError && (e.code === "chain_reverted" || e.code === "chain_refused");
}

/** Verifies and relays the client's deposit; the channel as the chain has it afterwards. */
export async function depositChannel(
  ctx: ChannelCallContext,
  held: repo.ChannelRow,
  payload: Extract<ChannelPayload, { type: "deposit" }>,
): Promise<{ row: repo.ChannelRow; txHash: string } | { refused: string }> {
  const { deps } = ctx;
  const p = x402Profile(deps);
  const checked = await checkDeposit(deps, p, held.channelId, payload);
  if ("reason" in checked) return { refused: checked.reason };
  let txHash: string;
  try {
    const tx = await deps.chain.channels.deposit(p, {
      config: termsOf(held),
      deposit: checked.deposit,
      intentKey: checked.intentKey,
    });
    txHash = tx.txHash;
  } catch (e) {
    if (chainRefused(e)) return { refused: E.depositFailed };
    throw e;
  }
  const [state] = await deps.chain.channels.states(p, [held.channelId]);
  return { row: await repo.mirror(deps.sql, held.channelId, state, deps.clock.now()), txHash };
}

/**
 * A cooperative refund asked with a zero-charge voucher (its maxClaimableAmount is what the
 * channel was charged): the remainder, or `amount` of it, goes back to the payer.
 */
export async function refundChannel(
  ctx: ChannelCallContext,
  row: repo.ChannelRow,
  payload: Extract<ChannelPayload, { type: "refund" }>,
): Promise<ChannelOutcome> {
  const { deps } = ctx;
  const p = x402Profile(deps);
  if (payload.voucher.maxClaimableAmount !== row.charged) {
    return ctx.refuse(E.mismatch, {
      channelState: channelState(row),
      ...(row.signature
        ? {
          voucherState: { signedMaxClaimable: row.signedMax.toString(), signature: row.signature },
        }
        : {}),
    });
  }
  const remainder = row.balance - row.charged;
  if (remainder <= 0n) return ctx.refuse(E.refundNoBalance);
  if (payload.amount === 0n) return ctx.refuse(E.refundAmount);
  const amount = payload.amount ?? remainder;
  const claim = row.charged > row.claimed
    ? { maxClaimable: row.charged, signature: payload.voucher.signature, totalClaimed: row.charged }
    : undefined;
  const done = await executeRefund(deps, p, row, amount, claim);
  if (!done) return ctx.refuse(E.refundFailed);
  const { tx, after } = done;
  const body = { message: "Refund acknowledged", channelId: row.channelId };
  return {
    kind: "paid",
    version: 2,
    status: 200,
    contentType: "application/json",
    body: new TextEncoder().encode(JSON.stringify(body)),
    paymentResponse: {
      success: true,
      payer: checksum(row.payer),
      transaction: tx.txHash,
      network: ctx.requirement.network,
      amount: (row.balance - after.balance).toString(),
      extra: { channelState: channelState(after) },
    },
  };
}

/**
 * Claims the channel's outstanding voucher (`claim`) and refunds `amount` at the channel's
 * refund nonce, in one transaction recorded first as a `refund` claim. Null when the chain
 * refused it (recorded as failed).
 */
export async function executeRefund(
  deps: Deps,
  p: ProfileName,
  row: repo.ChannelRow,
  amount: bigint,
  claim?: { maxClaimable: bigint; signature: `0x${string}`; totalClaimed: bigint },
) {
  const config = termsOf(row);
  const claimRow = claim ? { config, ...claim } : undefined;
  const id = crypto.randomUUID();
  await claims.createClaim(deps.sql, {
    id,
    chainId: deps.chain.chainId(p),
    kind: "refund",
    channelId: row.channelId,
    rows: claim ? [{ channelId: row.channelId, ...claim }] : [],
    refundAmount: amount,
    refundNonce: row.refundNonce,
    now: deps.clock.now(),
  });
  let tx;
  try {
    tx = await deps.chain.channels.refund(p, {
      config,
      amount,
      nonce: row.refundNonce,
      claim: claimRow,
      intentKey: `x402ch:refund:${id}`,
    });
  } catch (e) {
    if (!chainRefused(e)) throw e;
    await claims.failClaim(
      deps.sql,
      id,
      e instanceof Error ? e.message : String(e),
      deps.clock.now(),
    );
    return null;
  }
  await claims.confirmClaim(deps.sql, {
    id,
    txHash: tx.txHash,
    gasUsed: tx.gasUsed,
    now: deps.clock.now(),
  });
  const [state] = await deps.chain.channels.states(p, [row.channelId]);
  return { tx, after: await repo.mirror(deps.sql, row.channelId, state, deps.clock.now()) };
}
