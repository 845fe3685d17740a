/** The webhooks module's job descriptors: what its service enqueues (handlers: webhooks.jobs.ts). */
import { z } from "zod";
import { defineQueue } from "../../queue/registry.ts";

export const deliverWebhookQueue = defineQueue<{ deliveryId: string }>({
  name: "webhooks.deliver",
  schema: z.object({ deliveryId: z.string().min(1) }),
  queue: { retryLimit: 3, retryDelay: 30, expireInSeconds: 180 },
});
