/** Merchant-account housekeeping: failed-login windows are worthless once they have ended. */
import { defineCron } from "../../queue/registry.ts";
import type { Deps } from "../../deps.ts";
import { pruneLoginFailures } from "./merchants.login-throttle.ts";

export const loginFailuresCleanupJob = defineCron<Deps>({
  name: "merchants.login-failures-cleanup",
  cron: "*/10 * * * *",
  queue: { expireInSeconds: 300 },
  handler: async ({ deps }) => {
    const deleted = await pruneLoginFailures(deps);
    if (deleted > 0) deps.log.debug("ended failed-login windows deleted", { deleted });
  },
});

export const merchantJobs = [loginFailuresCleanupJob];
