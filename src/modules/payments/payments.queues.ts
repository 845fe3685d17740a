/** The payments module's job descriptors: what its services enqueue (handlers: payments.jobs.ts). */
import { z } from "zod";
import { defineQueue } from "../../queue/registry.ts";

/** Looks at a payer-reported transaction every few seconds, for up to about 10 minutes. */
export const checkSubmittedQueue = defineQueue<{ paymentId: string; attempt: number }>({
  name: "payments.check-submitted",
  schema: z.object({ paymentId: z.string().uuid(), attempt: z.number().int().min(0) }),
  queue: { retryLimit: 3, retryDelay: 10 },
});
