/** Chain jobs: the transaction recovery sweep. */
import { defineCron } from "../queue/registry.ts";
import type { Deps } from "../deps.ts";

export const recoverTransactionsJob = defineCron<Deps>({
  name: "chain.recover-transactions",
  cron: "* * * * *",
  queue: { expireInSeconds: 300 },
  handler: async ({ deps }) => {
    for (const profile of deps.chain.profiles()) await deps.chain.recover(profile);
  },
});

export const chainJobs = [recoverTransactionsJob];
