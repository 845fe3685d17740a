/** Payment jobs: the expiry sweep, and watching payer-reported transactions. */
import { defineCron, defineJob } from "../../queue/registry.ts";
import type { Deps } from "../../deps.ts";
import { expireDue } from "./payments.service.ts";
import { checkSubmitted } from "./payments.checkout.ts";
import { checkSubmittedQueue } from "./payments.queues.ts";

export const expireSweepJob = defineCron<Deps>({
  name: "payments.expire-sweep",
  cron: "* * * * *",
  handler: async ({ deps }) => {
    await expireDue(deps);
  },
});

export const checkSubmittedJob = defineJob<{ paymentId: string; attempt: number }, Deps>({
  ...checkSubmittedQueue,
  handler: async ({ paymentId, attempt }, { deps }) => {
    const outcome = await checkSubmitted(deps, paymentId);
    if (outcome === "again" && attempt < 120) {
      await deps.queue.send(checkSubmittedQueue, { paymentId, attempt: attempt + 1 }, {
        startAfter: 5000,
      });
    }
  },
});

export const paymentJobs = [expireSweepJob, checkSubmittedJob];
