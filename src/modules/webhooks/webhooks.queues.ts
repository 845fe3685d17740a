/** The webhooks module's job descriptors: what its service enqueues (handlers: webhooks.jobs.ts). */
import { z } from "zod";
import { defineQueue } from "../../queue/registry.ts";

export const deliverWebhookQueue = defineQueue<{ deliveryId: string }>({
  name: "webhooks.deliver",
  schema: z.object({ deliveryId: z.string().min(1) }),
  // A retry of this job means its attempt failed to run (its worker died, the database was
  // away): run it again soon. A receiver's failure is not a job failure (the next attempt is a new
  // job on the retry schedule).
  queue: { retryLimit: 3, retryDelay: 2, expireInSeconds: 180 },
});
