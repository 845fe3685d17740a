/** Rate-limit housekeeping: counters of past windows are worthless after a minute. */
import { defineCron } from "../queue/registry.ts";
import type { Deps } from "../deps.ts";
import { deleteWindowsBefore } from "./rate-limit.repo.ts";

// Kept for an hour rather than a minute so an operator can still see who hit a limit recently.
const KEEP_MS = 60 * 60_000;

export const rateLimitCleanupJob = defineCron<Deps>({
  name: "rate-limits.cleanup",
  cron: "*/10 * * * *",
  queue: { expireInSeconds: 300 },
  handler: async ({ deps }) => {
    const before = new Date(deps.clock.now().getTime() - KEEP_MS);
    const deleted = await deleteWindowsBefore(deps.sql, before);
    if (deleted > 0) deps.log.debug("rate-limit windows deleted", { deleted, before });
  },
});

export const rateLimitJobs = [rateLimitCleanupJob];
