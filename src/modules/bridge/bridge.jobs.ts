/**
 * The bridge's step jobs and a per-minute sweep that re-enqueues the step of any open transfer
 * nothing has touched for a minute (a job lost with a killed worker or a restored database).
 * Every step is idempotent (bridge.service.ts), so a duplicate does nothing.
 */
import { defineCron, defineJob, type JobDefinition } from "../../queue/registry.ts";
import type { Deps } from "../../deps.ts";
import { attestQueue, burnQueue, mintQueue } from "./bridge.queues.ts";
import { attestStep, type BridgeHooks, burnStep, mintStep, resumeOpen } from "./bridge.steps.ts";

/** The jobs; `hooks` pause a step in restart tests. */
export function bridgeJobsWith(hooks: BridgeHooks = {}): JobDefinition<unknown, Deps>[] {
  return [
    defineJob<{ reference: string }, Deps>({
      ...burnQueue,
      handler: async ({ reference }, { deps }) => await burnStep(deps, reference, hooks),
    }),
    defineJob<{ reference: string; due?: string }, Deps>({
      ...attestQueue,
      handler: async ({ reference, due }, { deps }) => await attestStep(deps, reference, due),
    }),
    defineJob<{ reference: string }, Deps>({
      ...mintQueue,
      handler: async ({ reference }, { deps }) => await mintStep(deps, reference, hooks),
    }),
    defineCron<Deps>({
      name: "bridge.resume-sweep",
      cron: "* * * * *",
      handler: async ({ deps }) => {
        await resumeOpen(deps, { staleBefore: new Date(Date.now() - 60_000) });
      },
    }),
  ] as JobDefinition<unknown, Deps>[];
}
