/** The payroll module's job descriptors (handlers: payroll.jobs.ts). */
import { z } from "zod";
import { defineQueue } from "../../queue/registry.ts";

/**
 * Runs (or resumes) one batch. Enqueued with the batch, to start BACKSTOP_SECONDS later: the
 * request that created it normally finishes it first (the job then finds it done, or waits its
 * turn and is retried while the request still works); this one finishes what a crash or a slow
 * chain left, re-using every transaction already recorded.
 */
export const runBatchQueue = defineQueue<{ batchId: string }>({
  name: "payroll.run",
  schema: z.object({ batchId: z.string().uuid() }),
  queue: { retryLimit: 20, retryDelay: 10, retryBackoff: true, retryDelayMax: 300 },
});

/** Seconds after creation that the backstop job first looks at a batch. */
export const BACKSTOP_SECONDS = 10;
