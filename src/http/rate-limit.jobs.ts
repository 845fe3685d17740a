/** Rate-limit housekeeping: counters of past windows are worthless after a minute. */
import { z } from "zod";
import { defineJob } from "../queue/registry.ts";
import type { Deps } from "../deps.ts";
import { deleteWindowsBefore } from "./rate-limit.repo.ts";

// Kept for an hour rather than a minute so an operator can still see who hit a limit recently.
const KEEP_MS = 60 * 60_000;

export const rateLimitCleanupJob = defineJob<Record<string, never>, Deps>({
  name: "rate-limits.cleanup",
  schema: z.object({}).strict() as unknown as z.ZodType<Record<string, never>>,
  cron: "*/10 * * * *",
  queue: { policy: "singleton", retryLimit: 0, expireInSeconds: 300 },
  handler: async (_data, { deps }) => {
    const before = new Date(deps.clock.now().getTime() - KEEP_MS);
    const deleted = await deleteWindowsBefore(deps.sql, before);
    if (deleted > 0) deps.log.debug("rate-limit windows deleted", { deleted, before });
  },
});

export const rateLimitJobs = [rateLimitCleanupJob];
