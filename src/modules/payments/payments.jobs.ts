/** Payment jobs: the expiry sweep, and watching payer-reported transactions. */
import { z } from "zod";
import { defineCron, defineJob } from "../../queue/registry.ts";
import type { Deps } from "../../deps.ts";
import { expireDue } from "./payments.service.ts";
import { checkSubmitted } from "./payments.checkout.ts";

export const expireSweepJob = defineCron<Deps>({
  name: "payments.expire-sweep",
  cron: "* * * * *",
  handler: async ({ deps }) => {
    await expireDue(deps);
  },
});

/** Looks at a reported transaction every few seconds, for up to about 10 minutes. */
export const checkSubmittedJob = defineJob<{ paymentId: string; attempt: number }, Deps>({
  name: "payments.check-submitted",
  schema: z.object({ paymentId: z.string().uuid(), attempt: z.number().int().min(0) }),
  queue: { retryLimit: 3, retryDelay: 10 },
  handler: async ({ paymentId, attempt }, { deps }) => {
    const outcome = await checkSubmitted(deps, paymentId);
    if (outcome === "again" && attempt < 120) {
      await deps.queue.send(checkSubmittedJob, { paymentId, attempt: attempt + 1 }, {
        startAfter: 5000,
      });
    }
  },
});

export const paymentJobs = [expireSweepJob, checkSubmittedJob];
