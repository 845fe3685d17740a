/**
 * Attempts left PENDING: the process died between the claim and the end of the call, or the
 * settlement's receipt did not come in time. A PENDING row holds its nonce and counts against the
 * payer's balance, so it must not stay forever: once its process is gone (its liveness claim
 * lapsed, src/db/liveness.ts: seconds after a kill -9) or, whatever its owner, once older than
 * any call can take, the row follows the chain: the proof's nonce used on chain by a payment →
 * SUCCESS with the transaction that paid (ours, the batch carrying its nonce, or a third party's
 * who relayed the proof directly on the contract); otherwise its settlement (the proof's own intent, or the batch whose signed bytes
 * carry its nonce) still in flight → wait for the chain's recovery job; mined without it (skipped
 * in a batch), reverted, failed or never signed → FAILED, nothing was charged.
 */
import { settlementIntent } from "./x402.rules.ts";
import * as repo from "./x402.repo.ts";
import { finish, type X402Deps } from "./x402.service.ts";
import { BATCH_INTENT_PREFIX } from "./x402.settler.ts";
import type { X402PaymentRecord } from "./x402.types.ts";

/** Older than the upstream timeout plus the receipt bound, with room to spare. */
export const STALE_AFTER_MS = 5 * 60_000;

export async function reconcilePending(
  deps: X402Deps,
  opts: { olderThanMs?: number; limit?: number } = {},
): Promise<{ settled: number; failed: number; waiting: number }> {
  const before = new Date(deps.clock.now().getTime() - (opts.olderThanMs ?? STALE_AFTER_MS));
  const rows = await repo.stalePending(deps.sql, before, opts.limit ?? 200);
  const out = { settled: 0, failed: 0, waiting: 0 };
  for (const row of rows) {
    const r = await reconcileAttempt(deps, row);
    if (r !== "skipped") out[r]++;
  }
  return out;
}

/** One abandoned attempt follows the chain (above); a chain this process lacks: skipped. */
export async function reconcileAttempt(
  deps: X402Deps,
  row: X402PaymentRecord,
): Promise<"settled" | "failed" | "waiting" | "skipped"> {
  const configured = new Set(deps.chain.profiles().map((p) => deps.chain.chainId(p)));
  // A chain this process does not configure: left PENDING, as it is.
  if (!configured.has(row.chainId)) return "skipped";
  const profile = deps.chain.profileOf(row.chainId);
  // Its own settlement, or the batch whose signed call data carries its nonce.
  const tx = await deps.chain.intent(profile, settlementIntent(row.scheme, row.payer, row.nonce)) ??
    (row.scheme === "gateway"
      ? await deps.chain.intentCarrying(profile, BATCH_INTENT_PREFIX, row.nonce)
      : null);
  // The contract's nonce says whether it was paid, by our transaction or by another relay of
  // the same proof (a batch of ours may have skipped it for that, or ours reverted): the
  // payment's log names the transaction that paid, when it paid this payee this amount.
  const target = row.scheme === "exact" ? "usdc" : "gateway";
  const payer = row.payer as `0x${string}`;
  const nonce = row.nonce as `0x${string}`;
  const used = await deps.chain.gateway.nonceUsed(profile, target, payer, nonce);
  const paidIn = used
    ? await deps.chain.gateway.paidWithNonce(profile, target, {
      from: payer,
      to: row.payee as `0x${string}`,
      value: row.amount,
      nonce,
    }) ??
      (tx?.status === "confirmed" && row.scheme === "exact" ? tx.txHash : null)
    : null;
  if (paidIn) {
    await finish(deps, row.id, { status: "SUCCESS", txHash: paidIn });
    return "settled";
  }
  if (tx && (tx.status === "signed" || tx.status === "broadcast")) return "waiting";
  await finish(deps, row.id, {
    status: "FAILED",
    error: used
      ? "its nonce was spent on chain by another payment, or cancelled: nothing charged"
      : !tx
      ? "abandoned before settlement: nothing charged"
      : tx.status === "confirmed"
      ? "skipped by the vault in its settlement batch: nothing charged"
      : `settlement ${tx.status}: nothing charged`,
    txHash: tx?.txHash ?? null,
  });
  return "failed";
}
