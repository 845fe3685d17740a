/**
 * Payroll jobs: run (or resume) one batch, the sweep that gives every unfinished batch a run job,
 * and the resume of every unfinished batch at a worker's start.
 */
import { defineCron, defineJob } from "../../queue/registry.ts";
import type { Deps } from "../../deps.ts";
import { enqueueStalled, processBatch, resumeOpen } from "./payroll.service.ts";
import { runBatchQueue } from "./payroll.queues.ts";
import { BATCH_CLAIM_TTL_MS } from "./payroll.rules.ts";

export const runBatchJob = defineJob<{ batchId: string }, Deps>({
  ...runBatchQueue,
  handler: async ({ batchId }, { deps }) => {
    // Long enough for a dead holder's claim to lapse: a killed worker's batch is taken over now.
    const state = await processBatch(deps, batchId, { waitMs: BATCH_CLAIM_TTL_MS + 2_000 });
    // Another worker has it (the request that created it, most often): look again later.
    if (state === "busy") throw new Error(`payroll batch ${batchId} is being worked on`);
    if (state === "PROCESSING") throw new Error(`payroll batch ${batchId} is not finished yet`);
  },
});

export const stalledSweepJob = defineCron<Deps>({
  name: "payroll.stalled-sweep",
  cron: "* * * * *",
  handler: async ({ deps }) => {
    await enqueueStalled(deps);
  },
});

/** A worker's start: batches a killed process left PROCESSING are resumed at once. */
export async function payrollOnStart(deps: Deps): Promise<void> {
  const finished = await resumeOpen(deps);
  if (finished) deps.log.info("payroll batches resumed at start", { finished });
}

export const payrollJobs = [runBatchJob, stalledSweepJob];
