/**
 * Jobs' sweep: every minute, and at a worker's start, the actions a dead process left recorded
 * on a job (commerce.catchup.ts) are followed to their end: a complete row (FUNDED with its
 * hashes) or nothing pending. A job a live process is acting on is held by its claim and left.
 */
import { defineCron } from "../../queue/registry.ts";
import type { Deps } from "../../deps.ts";
import { catchUpPending } from "./commerce.catchup.ts";

export const pendingActionsJob = defineCron<Deps>({
  name: "commerce.pending-actions",
  cron: "* * * * *",
  handler: async ({ deps }) => {
    await catchUpPending(deps);
  },
});

/** A worker's start: settle what a crash left at once rather than at the next minute. */
export async function commerceOnStart(deps: Deps): Promise<void> {
  const settled = await catchUpPending(deps);
  if (settled) deps.log.info("job actions settled at start", { settled });
}

export const commerceJobs = [pendingActionsJob];
