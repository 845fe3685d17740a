/**
 * Escrow jobs: the refund of each escrow at its expiry, and a per-minute sweep that refunds any
 * ACTIVE escrow past expiry the first missed (a job lost with a restored database, a clock
 * skew). Both are idempotent: an escrow that is no longer ACTIVE (released, disputed: the
 * arbiter decides, refunded already) is left alone, and the refund's intent is sent once.
 */
import { defineCron, defineJob } from "../../queue/registry.ts";
import type { Deps } from "../../deps.ts";
import { refundExpired, sweepExpired } from "./escrow.expiry.ts";
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
    await sweepExpired(deps);
  },
});

export const escrowJobs = [refundExpiredJob, refundSweepJob];
