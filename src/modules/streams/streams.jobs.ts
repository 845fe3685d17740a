/** Stream jobs: the drain of one stream, and the sweep that finds streams due for it. */
import { defineCron, defineJob } from "../../queue/registry.ts";
import type { Deps } from "../../deps.ts";
import { drainStream, enqueueDue } from "./streams.service.ts";
import { drainStreamQueue } from "./streams.queues.ts";

export const drainStreamJob = defineJob<{ streamId: string }, Deps>({
  ...drainStreamQueue,
  handler: async ({ streamId }, { deps }) => {
    await drainStream(deps, streamId);
  },
});

export const drainSweepJob = defineCron<Deps>({
  name: "streams.drain-sweep",
  cron: "* * * * *",
  handler: async ({ deps }) => {
    await enqueueDue(deps);
  },
});

export const streamJobs = [drainStreamJob, drainSweepJob];
