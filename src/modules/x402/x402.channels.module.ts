/**
 * The batch-settlement claim job as a module of its own (its routes are x402's: the listings'
 * `/x402/{slug}` and the facilitator). A round runs every X402_CHANNEL_CLAIM_SECONDS: each one
 * sends the next (the queue keeps one waiting at most), the per-minute cron restarts the chain
 * should it break, and a worker's start sends the first, which finishes what a stopped process
 * left.
 */
import type { Deps } from "../../deps.ts";
import type { AppModule } from "../module.ts";
import { defineJob, defineQueue, noData } from "../../queue/registry.ts";
import { claimRound } from "./x402.channels.claims.ts";

export const channelClaimsQueue = defineQueue({
  name: "x402.channel-claims",
  schema: noData,
  // A round whose worker was killed is retried as soon as pg-boss sees its heartbeat stop
  // (JOB_HEARTBEAT_SECONDS): the chain of rounds, each queueing the next, would otherwise wait for
  // the per-minute cron (an outside audit, 2026-12-01: 38–80 s). A round that threw is retried at
  // once too; the round's claim keeps two from running together.
  queue: { policy: "stately", retryLimit: 1, retryDelay: 0 },
});

export const x402ChannelsModule: AppModule = {
  name: "x402-channels",
  jobs: [
    defineJob<Record<string, never>, Deps>({
      ...channelClaimsQueue,
      cron: "* * * * *",
      handler: async (_data, { deps }) => {
        try {
          // Every chain: the facilitator takes channels on any chain that has the contract.
          for (const p of deps.chain.profiles()) await claimRound(deps, p);
        } finally {
          await deps.queue.send(channelClaimsQueue, {}, {
            startAfter: deps.config.X402_CHANNEL_CLAIM_SECONDS * 1000,
          });
        }
      },
    }),
  ],
  onStart: async (deps) => {
    // As the gateway's rounds (x402.batched.jobs.ts): a round a process with a longer interval
    // queued runs now.
    await deps.queue.hasten(channelClaimsQueue, deps.config.X402_CHANNEL_CLAIM_SECONDS * 1000);
    await deps.queue.send(channelClaimsQueue, {});
  },
};
