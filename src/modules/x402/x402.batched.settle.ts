/**
 * Settlement of charges accepted on the gateway balance: every X402_BATCH_SECONDS (the job), or
 * as soon as X402_BATCH_MAX are served (x402.batched.kick.ts), the charges owed are settled on
 * chain, up to X402_BATCH_MAX authorizations per `transferWithAuthorizations` transaction. One
 * round at a time per chain (a claim row, not a lock).
 *
 * Exactly once, crash-safe: a batch and its charges are written before anything is signed; its
 * transaction is recorded under its intent key `x402gw:batch:<id>` before it is broadcast (the
 * sender); a round first finishes the batches a stopped process left (the intent's transaction
 * is awaited, or the same bytes sent for the first time); the vault spends each (payer, nonce)
 * once whatever is sent; and a charge moves to settled only from pending, with its batch's
 * bookkeeping in one database transaction. A reverted batch gives its charges to the next one.
 */
import type { Deps } from "../../deps.ts";
import { DomainError } from "../../errors.ts";
import { withClaim } from "../../db/claims.ts";
import type { ProfileName } from "../../chain/profiles.ts";
import { ROUND_CLAIM_TTL_MS, X402_PROFILE } from "./x402.context.ts";
import * as repo from "./x402.batched.repo.ts";
import { STALE_RESERVATION_MS } from "./x402.batched.rules.ts";
import { catchUpBatches } from "./x402.totals.repo.ts";
import { chainRefused } from "./x402.channels.deposit.ts";

/** Batches one round sends at most (the next round carries on). */
const MAX_BATCHES = 20;

export const BATCH_INTENT = "x402gw:batch:";

/**
 * The batch's gas limit, given rather than estimated (a node's estimate of a 500-payment batch
 * re-executes it many times: over a second on anvil). An EOA's payment costs ~43k (one ecrecover,
 * a new nonce slot, two balance writes, two events); a smart account's signature check is a call
 * of unknown cost, allowed 150k. Unused gas is not paid for; a batch that still runs out reverts
 * and is retried halved (settleRound).
 */
export function batchGas(charges: { signature: string }[]): bigint {
  let gas = 150_000n;
  for (const c of charges) gas += c.signature.length === 132 ? 55_000n : 150_000n;
  return gas;
}

export interface SettledBatch {
  id: string;
  txHash: string;
  size: number;
  settled: number;
  gasUsed: bigint | null;
}

const roundClaim = (chainId: number) => `x402-gateway-settle:${chainId}`;

/**
 * A round on every chain x402 runs on: the job's (every X402_BATCH_SECONDS: whatever is owed),
 * or the kick's (X402_BATCH_MAX served: full batches only, the rest waits for the next kick or
 * the job, so a burst goes out in full transactions rather than a full one and many small ones).
 */
export async function settleAll(
  deps: Deps,
  opts: { fullOnly?: boolean } = {},
): Promise<SettledBatch[]> {
  if (!deps.chain.has(X402_PROFILE)) return [];
  return await settleRound(deps, X402_PROFILE, opts);
}

/**
 * One round: abandoned reservations released, leftover batches finished, then new batches until
 * nothing is owed (or, `fullOnly`, until less than a full batch is; or the cap). Another
 * process's round in progress: this one does nothing.
 */
export async function settleRound(
  deps: Deps,
  p: ProfileName = X402_PROFILE,
  opts: { waitMs?: number; fullOnly?: boolean } = {},
): Promise<SettledBatch[]> {
  const chainId = deps.chain.chainId(p);
  const out: SettledBatch[] = [];
  try {
    return await withClaim(deps.sql, roundClaim(chainId), async () => {
      const stale = new Date(deps.clock.now().getTime() - STALE_RESERVATION_MS);
      for (const id of await repo.staleReserved(deps.sql, chainId, stale)) {
        await repo.release(deps.sql, id, {
          error: "abandoned during the upstream call: nothing charged",
          upstreamStatus: null,
          now: deps.clock.now(),
        });
      }
      for (const b of await repo.pendingBatches(deps.sql, chainId)) {
        const done = await finishBatch(deps, p, b.id);
        if (done && done !== "refused") out.push(done);
      }
      // Batches an earlier release's process confirmed (a rolling upgrade) add to the listings'
      // totals now (x402.totals.repo.ts).
      await catchUpBatches(deps.sql, chainId);
      // A batch the node refuses (its gas over the block's limit, say) is tried again halved:
      // never the same list signed twice at one nonce.
      let max = deps.config.X402_BATCH_MAX;
      for (let i = 0; i < MAX_BATCHES; i++) {
        const id = crypto.randomUUID();
        const size = await repo.createBatch(deps.sql, {
          id,
          chainId,
          max,
          min: opts.fullOnly ? max : 1,
          now: deps.clock.now(),
        });
        if (!size) break;
        const done = await finishBatch(deps, p, id);
        if (done === "refused" && size > 1) {
          max = Math.max(1, Math.floor(size / 2));
          continue;
        }
        if (!done || done === "refused") break;
        out.push(done);
      }
      return out;
    }, { waitMs: opts.waitMs ?? 1000, ttlMs: ROUND_CLAIM_TTL_MS });
  } catch (e) {
    if (e instanceof DomainError && e.code === "resource_busy") return out;
    throw e;
  }
}

/**
 * Serves a reserved charge (its upstream answered `upstreamStatus`) and settles it now, in a
 * transaction of its own, and says how it ended: "settled" (with its transaction), "failed" (the
 * vault refused it), or "pending" (no receipt in time: a round finishes its batch). For a payment
 * whose signature only the node could vouch for (an ERC-1271 account may answer otherwise by the
 * time a batch asks): x402.batched.ts.
 */
export async function settleNow(
  deps: Deps,
  p: ProfileName,
  chargeId: string,
  upstreamStatus: number,
): Promise<{ status: "settled"; txHash: string } | { status: "failed" | "pending" }> {
  const id = crypto.randomUUID();
  const batched = await repo.serveInBatch(deps.sql, {
    id,
    chainId: deps.chain.chainId(p),
    chargeId,
    upstreamStatus,
    now: deps.clock.now(),
  });
  if (batched) {
    try {
      await finishBatch(deps, p, id);
    } catch (e) {
      // Recorded before anything was sent: a round finishes the batch.
      deps.log.warn("x402 charge settled now: left to the next round", { batch: id, error: e });
    }
  }
  const c = await repo.findCharge(deps.sql, chargeId);
  if (c?.status === "settled" && c.txHash) return { status: "settled", txHash: c.txHash };
  if (c?.status === "failed") return { status: "failed" };
  return { status: "pending" };
}

/** Sends (or finds again) a recorded batch's transaction, waits for it, records the outcome. */
async function finishBatch(
  deps: Deps,
  p: ProfileName,
  id: string,
): Promise<SettledBatch | "refused" | null> {
  const charges = await repo.batchCharges(deps.sql, id);
  const now = () => deps.clock.now();
  if (!charges.length) {
    await repo.failBatch(deps.sql, id, "no charge left to settle", now());
    return null;
  }
  try {
    const { tx, settled } = await deps.chain.gateway.settleBatch(p, {
      items: charges.map((c) => ({
        authorization: {
          from: c.payer as `0x${string}`,
          to: c.payee as `0x${string}`,
          value: c.amount,
          validAfter: c.validAfter,
          validBefore: c.validBefore,
          nonce: c.nonce as `0x${string}`,
        },
        signature: c.signature as `0x${string}`,
        domain: c.domain,
      })),
      intentKey: `${BATCH_INTENT}${id}`,
      gas: batchGas(charges),
    });
    const block = tx.blockNumber ?? 0n;
    const paid: { id: string; txHash: string; block: bigint }[] = [];
    const refused: { id: string; reason: string }[] = [];
    for (const [i, c] of charges.entries()) {
      if (settled[i]) {
        paid.push({ id: c.id, txHash: tx.txHash, block });
        continue;
      }
      // Skipped by the vault: this very payment relayed already by another settler, or refused
      // (its nonce spent by another payment of the payer's, its balance short, its window out).
      const other = await deps.chain.gateway.paidWithNonce(p, "gateway", {
        from: c.payer as `0x${string}`,
        to: c.payee as `0x${string}`,
        value: c.amount,
        nonce: c.nonce as `0x${string}`,
      });
      if (other) paid.push({ id: c.id, txHash: other, block });
      else refused.push({ id: c.id, reason: "refused by the vault in its settlement batch" });
    }
    const n = await repo.confirmBatch(deps.sql, {
      id,
      txHash: tx.txHash,
      block,
      gasUsed: tx.gasUsed,
      paid,
      refused,
      now: now(),
    });
    if (refused.length) {
      deps.log.warn("x402 batched charges refused on chain", {
        batch: id,
        refused: refused.length,
      });
    }
    return { id, txHash: tx.txHash, size: charges.length, settled: n, gasUsed: tx.gasUsed };
  } catch (e) {
    if (chainRefused(e)) {
      await repo.failBatch(deps.sql, id, e instanceof Error ? e.message : String(e), now());
      deps.log.warn("x402 settlement batch failed", { batch: id, error: e });
      return "refused";
    }
    // A receipt that did not come in time: the batch stays pending, the next round waits again.
    if (e instanceof DomainError && e.code === "chain_timeout") return null;
    throw e;
  }
}
