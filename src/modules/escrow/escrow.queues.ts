/** The escrow module's job descriptors: what its service enqueues (handlers: escrow.jobs.ts). */
import { z } from "zod";
import { defineQueue } from "../../queue/registry.ts";

/**
 * Refunds one escrow at its expiry, if it is still ACTIVE then. Enqueued with the escrow, in the
 * transaction that records it, to start at `expiresAt`; retried while the chain's clock lags.
 */
export const refundExpiredQueue = defineQueue<{ reference: string }>({
  name: "escrow.refund-expired",
  schema: z.object({ reference: z.string().min(1).max(64) }),
  queue: { retryLimit: 10, retryDelay: 30 },
});
