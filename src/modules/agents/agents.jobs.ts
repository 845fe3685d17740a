/**
 * Agents' jobs: the on-chain feedback for each payment an agent made (idempotent per payment),
 * and the sweep that finishes half-done deploys (idempotent per step).
 */
import { defineCron, defineJob } from "../../queue/registry.ts";
import type { Deps } from "../../deps.ts";
import { recordPaymentFeedback, resumeProvisioning } from "./agents.service.ts";
import { type FeedbackJob, paymentFeedbackQueue } from "./agents.queues.ts";

export const paymentFeedbackJob = defineJob<FeedbackJob, Deps>({
  ...paymentFeedbackQueue,
  handler: async (data, { deps }) => {
    await recordPaymentFeedback(deps, data);
  },
});

/** How long a deploy may be in flight before the sweep finishes it (three receipts' bounds). */
export const RESUME_AFTER_MS = 10 * 60 * 1000;

/** Finishes agent deploys a crash or a timeout left PROVISIONING. */
export const resumeProvisioningJob = defineCron<Deps>({
  name: "agents.resume-provisioning",
  cron: "* * * * *",
  handler: async ({ deps }) => {
    await resumeProvisioning(deps, { olderThanMs: RESUME_AFTER_MS });
  },
});

export const agentJobs = [paymentFeedbackJob, resumeProvisioningJob];
