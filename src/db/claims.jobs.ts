/**
 * Claims housekeeping: a claim whose owner died stays in `resource_claims` until someone claims
 * the same resource again (it is taken over then); most resources are never claimed again (a
 * stream's reference, an idempotency key), so the lapsed rows are deleted here.
 */
import { defineCron } from "../queue/registry.ts";
import type { Deps } from "../deps.ts";
import { sweepLapsedClaims } from "./claims.ts";

export const claimsCleanupJob = defineCron<Deps>({
  name: "claims.cleanup",
  cron: "*/10 * * * *",
  queue: { expireInSeconds: 300 },
  handler: async ({ deps }) => {
    const deleted = await sweepLapsedClaims(deps.sql);
    if (deleted > 0) deps.log.debug("lapsed claims deleted", { deleted });
  },
});
