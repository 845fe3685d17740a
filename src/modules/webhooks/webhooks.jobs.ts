/**
 * `webhooks.deliver` makes one attempt of one delivery (claimed, so a second worker or a
 * duplicate job does nothing); `webhooks.sweep` catches any due attempt whose job went missing.
 */
import { defineCron, defineJob } from "../../queue/registry.ts";
import type { Deps } from "../../deps.ts";
import { attemptDelivery, sweepDue } from "./webhooks.service.ts";
import { deliverWebhookQueue } from "./webhooks.queues.ts";

/**
 * Attempts of one merchant's deliveries at once, across every process (pg-boss groups: a
 * delivery's job is in its merchant's group). A receiver that never answers holds an attempt the
 * whole timeout; without a share per merchant, one merchant's hanging receivers (test-mode events
 * cost nothing) filled every worker and held up every other merchant's events, live ones too, by
 * a timeout per wave (an outside audit, 2026-11-30).
 */
export const WEBHOOK_MERCHANT_CONCURRENCY = 4;

export const deliverWebhookJob = defineJob<{ deliveryId: string }, Deps>({
  ...deliverWebhookQueue,
  work: { localConcurrency: 8, groupConcurrency: WEBHOOK_MERCHANT_CONCURRENCY },
  // The job is the attempt's owner: run again after its worker died (pg-boss saw its heartbeat
  // stop), it takes the dead run's claim over at once.
  handler: async ({ deliveryId }, { deps, jobId }) => {
    await attemptDelivery(deps, deliveryId, `job:${jobId}`);
  },
});

export const sweepWebhooksJob = defineCron<Deps>({
  name: "webhooks.sweep",
  cron: "* * * * *",
  queue: { expireInSeconds: 600 },
  handler: async ({ deps }) => {
    await sweepDue(deps);
  },
});

export const webhookJobs = [deliverWebhookJob, sweepWebhooksJob];
