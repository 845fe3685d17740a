/**
 * The automatic refund at expiry, for the jobs (escrow.jobs.ts): one escrow, or every ACTIVE one
 * past expiry. Both go through the service's locked refund, so they are idempotent.
 */
import type { Deps } from "../../deps.ts";
import { DomainError } from "../../errors.ts";
import * as repo from "./escrow.repo.ts";
import { refund } from "./escrow.service.ts";

/**
 * The automatic refund of one escrow at expiry (jobs). Idempotent: "skipped" when it is no
 * longer ACTIVE (a DISPUTED one waits for the arbiter), "early" when our clock or the chain's
 * says it has not expired yet.
 */
export async function refundExpired(
  deps: Deps,
  reference: string,
): Promise<"refunded" | "skipped" | "early"> {
  try {
    await refund(deps, null, reference);
    return "refunded";
  } catch (e) {
    if (!(e instanceof DomainError)) throw e;
    if (e.code === "escrow_wrong_state" || e.code === "escrow_not_found") return "skipped";
    if (e.code === "escrow_not_expired") return "early";
    throw e;
  }
}

/** Refunds every ACTIVE escrow past expiry (the per-minute sweep); returns how many. */
export async function sweepExpired(deps: Deps, limit = 100): Promise<number> {
  let refunded = 0;
  for (const reference of await repo.dueForRefund(deps.sql, deps.clock.now(), limit)) {
    try {
      if (await refundExpired(deps, reference) === "refunded") refunded++;
    } catch (e) {
      deps.log.warn("escrow refund failed", { reference, error: e });
    }
  }
  return refunded;
}
