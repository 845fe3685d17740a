/** Expired Idempotency-Key records are removed hourly (they are kept at least 24 hours). */
import { z } from "zod";
import { defineJob } from "../queue/registry.ts";
import type { Deps } from "../deps.ts";
import { deleteExpired } from "./idempotency.repo.ts";

export const idempotencyCleanupJob = defineJob<Record<string, never>, Deps>({
  name: "idempotency.cleanup",
  schema: z.object({}) as unknown as z.ZodType<Record<string, never>>,
  cron: "17 * * * *",
  queue: { policy: "singleton", retryLimit: 0 },
  handler: async (_d, { deps }) => {
    await deleteExpired(deps.sql, deps.clock.now());
  },
});
