/** Payroll jobs: run (or resume) one batch, and the sweep that finds stalled batches. */
import { defineCron, defineJob } from "../../queue/registry.ts";
import type { Deps } from "../../deps.ts";
import { enqueueStalled, processBatch } from "./payroll.service.ts";
import { runBatchQueue } from "./payroll.queues.ts";

export const runBatchJob = defineJob<{ batchId: string }, Deps>({
  ...runBatchQueue,
  handler: async ({ batchId }, { deps }) => {
    const state = await processBatch(deps, batchId);
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

export const payrollJobs = [runBatchJob, stalledSweepJob];
