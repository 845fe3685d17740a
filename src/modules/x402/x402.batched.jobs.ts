/**
 * The settlement job of charges accepted on the gateway balance: a round every
 * X402_BATCH_SECONDS (each one queues the next; the per-minute cron restarts the chain should it
 * break), and a worker's start queues the first, which finishes what a stopped process left.
 */
import type { Deps } from "../../deps.ts";
import { defineJob, defineQueue, noData } from "../../queue/registry.ts";
import { settleAll } from "./x402.batched.settle.ts";

export const gatewaySettleQueue = defineQueue({
  name: "x402.gateway-settle",
  schema: noData,
  // A round whose worker was killed is retried as soon as pg-boss sees its heartbeat stop
  // (JOB_HEARTBEAT_SECONDS): the chain of rounds, each queueing the next, would otherwise wait for
  // the per-minute cron (an outside audit, 2026-12-01: 38–80 s). A round that threw is retried at
  // once too; the round's claim keeps two from running together.
  queue: { policy: "stately", retryLimit: 1, retryDelay: 0 },
});

export const gatewaySettleJob = defineJob<Record<string, never>, Deps>({
  ...gatewaySettleQueue,
  cron: "* * * * *",
  handler: async (_data, { deps }) => {
    try {
      await settleAll(deps);
    } finally {
      await deps.queue.send(gatewaySettleQueue, {}, {
        startAfter: deps.config.X402_BATCH_SECONDS * 1000,
      });
    }
  },
});

export async function startGatewaySettlement(deps: Deps): Promise<void> {
  // A round queued by a process that ran with a longer interval (X402_BATCH_SECONDS up to an
  // hour) would hold this start's round and the cron's back until then (the queue keeps one
  // waiting and drops the rest): it runs now (an outside audit, 2026-12-01: charges pending an
  // hour after a restart with the default 5 s).
  await deps.queue.hasten(gatewaySettleQueue, deps.config.X402_BATCH_SECONDS * 1000);
  await deps.queue.send(gatewaySettleQueue, {});
}
