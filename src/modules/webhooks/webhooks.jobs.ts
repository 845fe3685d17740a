/**
 * `webhooks.deliver` makes one attempt of one delivery (claimed, so a second worker or a
 * duplicate job does nothing); `webhooks.sweep` catches any due attempt whose job went missing.
 */
import { defineCron, defineJob } from "../../queue/registry.ts";
import type { Deps } from "../../deps.ts";
import { attemptDelivery, sweepDue } from "./webhooks.service.ts";
import { deliverWebhookQueue } from "./webhooks.queues.ts";

export const deliverWebhookJob = defineJob<{ deliveryId: string }, Deps>({
  ...deliverWebhookQueue,
  work: { localConcurrency: 8 },
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
