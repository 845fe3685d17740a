/** The agents module's job descriptors (handlers: agents.jobs.ts). */
import { z } from "zod";
import { defineQueue } from "../../queue/registry.ts";

export interface FeedbackJob {
  /** The payment the feedback is about: one feedback per payment, ever. */
  paymentId: string;
  /** `8004:{chainId}:{tokenId}`. */
  agentId: string;
  success: boolean;
  /** What was called (`/x402/<slug>`), the feedback's endpoint. */
  endpoint: string;
}

/**
 * Records one x402 payment's outcome as the operator's feedback in the reputation registry.
 * Enqueued when the payment ends, so the paid call never waits for it; retried while the chain is
 * unavailable.
 */
export const paymentFeedbackQueue = defineQueue<FeedbackJob>({
  name: "agents.payment-feedback",
  schema: z.object({
    paymentId: z.string().min(1).max(100),
    agentId: z.string().min(1).max(120),
    success: z.boolean(),
    endpoint: z.string().max(200),
  }),
  queue: { retryLimit: 10, retryDelay: 30 },
});
