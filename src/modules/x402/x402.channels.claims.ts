/**
 * The claim job of the batch-settlement scheme: the vouchers paid calls left on channels are
 * claimed on chain, up to CLAIM_BATCH channels per transaction, and every receiver in it is paid
 * (`settle`) in the same transaction. One round at a time per chain (a claim row, not a lock).
 *
 * Exactly once, crash-safe: a batch is written (claim + rows: everything needed to rebuild its
 * transaction) before anything is signed, its transaction is recorded under its intent key
 * before it is broadcast (the sender), and a round first finishes the batches a stopped process
 * left: the intent's transaction is awaited, or the same bytes are sent for the first time. A
 * reverted batch is marked failed and its channels are claimed again by the next one.
 */
import type { Deps } from "../../deps.ts";
import { DomainError } from "../../errors.ts";
import { withClaim } from "../../db/claims.ts";
import type { ProfileName } from "../../chain/profiles.ts";
import type { ClaimRow } from "../../chain/index.ts";
import { ROUND_CLAIM_TTL_MS, X402_PROFILE } from "./x402.context.ts";
import * as repo from "./x402.channels.repo.ts";
import * as claims from "./x402.channels.claims.repo.ts";
import { E, HOLD_MS, termsOf } from "./x402.channels.rules.ts";
import { available } from "./x402.channels.state.ts";
import { catchUpChannels } from "./x402.totals.repo.ts";
import { chainRefused } from "./x402.channels.deposit.ts";

/** Channels per claim transaction (about 22k gas each: ~4.5M gas at the cap). */
export const CLAIM_BATCH = 200;
/** Batches one round sends at most (the next round carries on). */
const MAX_BATCHES = 10;

export interface RoundResult {
  /** Claim transactions confirmed in this round (finished leftovers included). */
  transactions: { id: string; txHash: string; channels: number; charges: number }[];
}

const roundClaim = (chainId: number) => `x402-channel-claims:${chainId}`;

/** One round: leftovers first, then new batches until nothing claimable is left (or the cap). */
export async function claimRound(deps: Deps, p: ProfileName = X402_PROFILE): Promise<RoundResult> {
  const out: RoundResult = { transactions: [] };
  if (!(await available(deps, p))) return out;
  const chainId = deps.chain.chainId(p);
  return await withClaim(deps.sql, roundClaim(chainId), async () => {
    const staleBefore = new Date(deps.clock.now().getTime() - HOLD_MS);
    for (const c of await claims.pendingClaims(deps.sql, chainId, staleBefore)) {
      const done = await finish(deps, p, c);
      if (done && typeof done === "object") out.transactions.push(done);
    }
    // Channels an earlier release's process claimed (a rolling upgrade) add to the listings'
    // totals now (x402.totals.repo.ts).
    await catchUpChannels(deps.sql, chainId);
    for (let i = 0; i < MAX_BATCHES; i++) {
      const rows = await nextBatch(deps, p, chainId);
      if (!rows.length) break;
      const id = crypto.randomUUID();
      const made = await claims.createClaim(deps.sql, {
        id,
        chainId,
        kind: "claim",
        rows,
        now: deps.clock.now(),
      });
      if (!made) break;
      const done = await finish(deps, p, made);
      // A channel the contract refused is set aside (finish): the others go in the next batch.
      if (done === "retry") continue;
      if (!done || typeof done !== "object") break;
      out.transactions.push(done);
    }
    return out;
  }, { waitMs: 120_000, ttlMs: ROUND_CLAIM_TTL_MS });
}

/** How a voucher claimed before its call's answer ended (claimNow). */
export type ClaimedNow =
  | { status: "claimed"; txHash: string }
  | { status: "refused"; reason: string }
  | { status: "pending" };

/**
 * Claims one channel's voucher up to `total` now, in a transaction of its own that also pays the
 * receiver, and says how it ended: "claimed" (with its transaction), "refused" (the contract
 * refused the voucher: the channel is set aside), or "pending" (no receipt in time: the claim job
 * finishes it). For a channel without a payer authorizer, whose vouchers the contract checks
 * against the payer's code at claim time (docs/decisions.md, "Channels without a payer
 * authorizer").
 */
async function claimNow(
  deps: Deps,
  p: ProfileName,
  c: { channelId: `0x${string}`; maxClaimable: bigint; signature: string; total: bigint },
): Promise<ClaimedNow> {
  const id = crypto.randomUUID();
  const record = await claims.createClaim(deps.sql, {
    id,
    chainId: deps.chain.chainId(p),
    kind: "voucher",
    channelId: c.channelId,
    rows: [{
      channelId: c.channelId,
      maxClaimable: c.maxClaimable,
      signature: c.signature,
      totalClaimed: c.total,
    }],
    now: deps.clock.now(),
  });
  let done: Awaited<ReturnType<typeof finish>> = null;
  try {
    done = record && await finish(deps, p, record);
  } catch (e) {
    // Recorded before anything was sent: the claim job finishes it.
    deps.log.warn("x402 voucher claim left to the claim job", { claim: id, error: e });
  }
  if (done && typeof done === "object") return { status: "claimed", txHash: done.txHash };
  if (typeof done === "string" && done !== "retry") return { status: "refused", reason: done };
  return { status: "pending" };
}

/**
 * A call just charged on a channel without a payer authorizer, under the hold `pendingId`
 * (`cumulative` its new total, `previous` the channel's voucher before it), claimed before its
 * answer (claimNow); refused by the contract, the charge is taken back under the same hold.
 */
export async function claimCharge(
  deps: Deps,
  p: ProfileName,
  c: {
    channelId: `0x${string}`;
    pendingId: string;
    price: bigint;
    maxClaimable: bigint;
    signature: string;
    cumulative: bigint;
    previous: { signedMax: bigint; signature: string | null };
  },
): Promise<ClaimedNow> {
  const claimed = await claimNow(deps, p, { ...c, total: c.cumulative });
  if (claimed.status === "refused") await repo.uncharge(deps.sql, c);
  return claimed;
}

/**
 * The next channels to claim, against the contract's present state (mirrored as read): what a
 * channel was charged, capped by its balance (a payer who withdrew before we claimed took the
 * rest with it), beyond what is claimed already.
 */
async function nextBatch(deps: Deps, p: ProfileName, chainId: number) {
  const authorizer = deps.chain.channels.receiverAuthorizer(p).toLowerCase();
  const owed = await repo.claimable(deps.sql, chainId, authorizer, CLAIM_BATCH);
  if (!owed.length) return [];
  const states = await deps.chain.channels.states(p, owed.map((r) => r.channelId));
  const now = deps.clock.now();
  const rows: (ClaimRow & { channelId: `0x${string}` })[] = [];
  for (const [i, row] of owed.entries()) {
    const s = states[i];
    const mirrored = await repo.mirror(deps.sql, row.channelId, s, now);
    const total = mirrored.charged < s.balance ? mirrored.charged : s.balance;
    if (total <= s.totalClaimed || !mirrored.signature) continue;
    rows.push({
      channelId: row.channelId,
      config: termsOf(mirrored),
      maxClaimable: mirrored.signedMax,
      signature: mirrored.signature,
      totalClaimed: total,
    });
  }
  return rows;
}

/**
 * Sends (or finds again) a recorded claim's transaction, waits for it and records the outcome.
 * A refund that was never sent is not sent later: the request that asked for it is gone.
 */
async function finish(deps: Deps, p: ProfileName, c: claims.ClaimRecord) {
  const intentKey = `x402ch:${c.kind}:${c.id}`;
  const stored = await claims.claimRows(deps.sql, c.id);
  const rows: ClaimRow[] = stored.map((r) => ({
    config: r.terms,
    maxClaimable: r.maxClaimable,
    signature: r.signature,
    totalClaimed: r.totalClaimed,
  }));
  try {
    let tx;
    if (c.kind === "claim" || c.kind === "voucher") {
      tx = await deps.chain.channels.claimAndSettle(p, { rows, intentKey });
    } else {
      if (!(await deps.chain.transaction(p, intentKey))) {
        await claims.failClaim(deps.sql, c.id, "not sent before the process stopped", now(deps));
        return null;
      }
      const row = c.channelId ? await repo.find(deps.sql, c.channelId) : null;
      if (!row) throw new Error(`refund ${c.id} has no channel`);
      tx = await deps.chain.channels.refund(p, {
        config: termsOf(row),
        amount: c.refundAmount!,
        nonce: c.refundNonce!,
        claim: rows[0],
        intentKey,
      });
      const [state] = await deps.chain.channels.states(p, [row.channelId]);
      await repo.mirror(deps.sql, row.channelId, state, now(deps));
    }
    const charges = await claims.confirmClaim(deps.sql, {
      id: c.id,
      txHash: tx.txHash,
      gasUsed: tx.gasUsed,
      now: now(deps),
    });
    return { id: c.id, txHash: tx.txHash, channels: rows.length, charges };
  } catch (e) {
    if (chainRefused(e)) {
      const reason = e instanceof Error ? e.message : String(e);
      await claims.failClaim(deps.sql, c.id, reason, now(deps));
      deps.log.warn("x402 channel claim failed", { claim: c.id, error: e });
      // The contract names the channel whose voucher it refused: set it aside, claim the rest.
      const hint = String((e as { details?: { hint?: unknown } }).details?.hint ?? reason);
      const culprit = stored.find((r) => hint.toLowerCase().includes(r.channelId));
      if (c.kind === "voucher") {
        await repo.markStuck(deps.sql, stored[0].channelId, hint);
        return /InvalidVoucherSignature/.test(hint) ? E.voucherSignature : E.claimFailed;
      }
      if (culprit && c.kind === "claim") {
        await repo.markStuck(deps.sql, culprit.channelId, hint);
        return "retry";
      }
      return null;
    }
    // A receipt that did not come in time: the claim stays pending, the next round waits again.
    if (e instanceof DomainError && e.code === "chain_timeout") return null;
    throw e;
  }
}

const now = (deps: Deps) => deps.clock.now();
