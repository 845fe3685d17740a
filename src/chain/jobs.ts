/** Chain jobs: the transaction recovery sweep. */
import { z } from "zod";
import { defineJob } from "../queue/registry.ts";
import type { Deps } from "../deps.ts";

export const recoverTransactionsJob = defineJob<Record<string, never>, Deps>({
  name: "chain.recover-transactions",
  schema: z.object({}).strict() as unknown as z.ZodType<Record<string, never>>,
  cron: "* * * * *",
  queue: { policy: "singleton", retryLimit: 0, expireInSeconds: 300 },
  handler: async (_data, { deps }) => {
    for (const profile of deps.chain.profiles()) await deps.chain.recover(profile);
  },
});

export const chainJobs = [recoverTransactionsJob];
