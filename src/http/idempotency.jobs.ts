/** Expired Idempotency-Key records are removed hourly (they are kept at least 24 hours). */
import { defineCron } from "../queue/registry.ts";
import type { Deps } from "../deps.ts";
import { deleteExpired } from "./idempotency.repo.ts";

export const idempotencyCleanupJob = defineCron<Deps>({
  name: "idempotency.cleanup",
  cron: "17 * * * *",
  handler: async ({ deps }) => {
    await deleteExpired(deps.sql, deps.clock.now());
  },
});
