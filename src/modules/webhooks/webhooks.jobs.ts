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

/**
 * A process's attempts at once. Attempts wait on other parties' servers, not on this process, so
 * there are many; it takes this / WEBHOOK_MERCHANT_CONCURRENCY merchants whose receivers all hang
 * to hold up everyone else's events (two did with 8: an outside audit, 2026-12-01).
 */
export const WEBHOOK_ATTEMPTS_AT_ONCE = 16;

export const deliverWebhookJob = defineJob<{ deliveryId: string }, Deps>({
  ...deliverWebhookQueue,
  work: {
    localConcurrency: WEBHOOK_ATTEMPTS_AT_ONCE,
    groupConcurrency: WEBHOOK_MERCHANT_CONCURRENCY,
    // One job per fetch: pg-boss settles a fetched batch when its last job ends, so a delivered
    // event fetched with hanging ones stayed active (its worker taken, its merchant's share
    // counted) until they timed out.
    batchSize: 1,
    // New deliveries wake the workers (NOTIFY); the poll only finds retries come due, minutes
    // apart, so these workers poll every 5 s rather than every second.
    notifyPollingIntervalSeconds: 5,
  },
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
