/**
 * Escrow jobs: the refund of each escrow at its expiry, and a per-minute sweep that first settles
 * creations a dead process left pending (escrow.create.ts), then catches up open escrows whose
 * action transaction was mined without its commit (escrow.catchup.ts), then refunds any ACTIVE
 * escrow past expiry the first missed (a job lost with a restored database, a clock skew). All are idempotent: an escrow that is no longer ACTIVE (released,
 * disputed: the arbiter decides, refunded already) is left alone, the refund's intent is sent
 * once, and a caught-up action is applied with the row locked, once.
 */
import { defineCron, defineJob } from "../../queue/registry.ts";
import type { Deps } from "../../deps.ts";
import { refundExpired, sweepExpired } from "./escrow.expiry.ts";
import { catchUpOpen } from "./escrow.catchup.ts";
import { recoverCreates } from "./escrow.create.ts";
import { ESCROW_CLAIM } from "./escrow.rules.ts";
import { refundExpiredQueue } from "./escrow.queues.ts";

export const refundExpiredJob = defineJob<{ reference: string }, Deps>({
  ...refundExpiredQueue,
  handler: async ({ reference }, { deps }) => {
    const outcome = await refundExpired(deps, reference);
    // The chain's clock is behind ours: pg-boss retries later.
    if (outcome === "early") throw new Error(`escrow ${reference} is not expired on chain yet`);
  },
});

export const refundSweepJob = defineCron<Deps>({
  name: "escrow.refund-sweep",
  cron: "* * * * *",
  handler: async ({ deps }) => {
    await recoverCreates(deps);
    await catchUpOpen(deps);
    await sweepExpired(deps);
  },
});

/**
 * A worker's start: creations a killed process left pending are settled (waiting for a dead
 * holder's claim to lapse), and escrows caught up, at once rather than at the sweep's next minute.
 */
export async function escrowOnStart(deps: Deps): Promise<void> {
  const [created, caught] = await Promise.all([
    recoverCreates(deps, { waitMs: ESCROW_CLAIM.ttlMs + 5_000 }),
    catchUpOpen(deps),
  ]);
  if (created.completed || created.abandoned) {
    deps.log.info("escrow creations settled at start", created);
  }
  if (caught) deps.log.info("escrows caught up at start", { caught });
}

export const escrowJobs = [refundExpiredJob, refundSweepJob];
