/**
 * Stream jobs: the drain of one stream, and the per-minute sweep that finishes creates a killed
 * process left PENDING and finds streams due for their drain. `streamsOnStart` runs the create
 * recovery once when a worker starts.
 */
import { defineCron, defineJob } from "../../queue/registry.ts";
import type { Deps } from "../../deps.ts";
import { drainStream, enqueueDue } from "./streams.drain.ts";
import { recoverCreates, recoverStops } from "./streams.recovery.ts";
import { drainStreamQueue } from "./streams.queues.ts";

export const drainStreamJob = defineJob<{ streamId: string; resends?: number }, Deps>({
  ...drainStreamQueue,
  handler: async ({ streamId, resends }, { deps }) => {
    await drainStream(deps, streamId, resends);
  },
});

export const drainSweepJob = defineCron<Deps>({
  name: "streams.drain-sweep",
  cron: "* * * * *",
  handler: async ({ deps }) => {
    await recoverCreates(deps);
    await enqueueDue(deps);
  },
});

/**
 * A worker's start: creates a killed process left half done are finished or failed, and stops
 * it saw mined are recorded. A crash's claims are waited out (they lapse after 60 s; this runs beside the start, not before it).
 */
export async function streamsOnStart(deps: Deps): Promise<void> {
  const r = await recoverCreates(deps, { waitMs: 75_000 });
  if (r.done || r.failed) deps.log.info("stream creates recovered at start", r);
  await recoverStops(deps, { waitMs: 75_000 });
}

export const streamJobs = [drainStreamJob, drainSweepJob];
