/**
 * Failed logins counted per email address, whatever the client's address: the per-address rate
 * limit alone let an account take unlimited password guesses from many addresses (an outside
 * audit: 300 wrong passwords from three loopback addresses, then the right one, 200).
 *
 * Every attempt is counted before its password is checked (so a burst of concurrent guesses gets
 * at most `LOGIN_FAILURES_MAX` checked), and a successful login clears the count. Past the limit
 * in a window, logins for the address answer 429 until the window ends, the right password too.
 * Addresses with no account are counted alike (hashed), so a refusal says nothing of which
 * addresses have accounts. Off with RATE_LIMITS=off, as every rate limit is.
 */
import { createHash } from "node:crypto";
import type { Deps } from "../../deps.ts";
import { DomainError } from "../../errors.ts";
import * as repo from "./merchants.repo.ts";

export const LOGIN_FAILURES_MAX = 10;
export const LOGIN_FAILURE_WINDOW_MS = 15 * 60_000;

function emailHash(normalisedEmail: string): string {
  return createHash("sha256").update(`login:${normalisedEmail}`).digest("hex");
}

/** Counts an attempt for the address; throws `login_throttled` past the limit of its window. */
export async function countLoginAttempt(
  deps: Pick<Deps, "sql" | "clock" | "config">,
  normalisedEmail: string,
): Promise<void> {
  if (deps.config.RATE_LIMITS === "off") return;
  const now = deps.clock.now();
  const w = await repo.countLoginAttempt(deps.sql, emailHash(normalisedEmail), {
    now,
    windowStartsAfter: new Date(now.getTime() - LOGIN_FAILURE_WINDOW_MS),
  });
  if (w.failures > LOGIN_FAILURES_MAX) {
    const ends = w.windowStart.getTime() + LOGIN_FAILURE_WINDOW_MS;
    throw new DomainError("login_throttled", {
      retryAfterSeconds: Math.max(1, Math.ceil((ends - now.getTime()) / 1000)),
    });
  }
}

/** A successful login: the address's count starts again. */
export async function clearLoginFailures(
  deps: Pick<Deps, "sql" | "config">,
  normalisedEmail: string,
): Promise<void> {
  if (deps.config.RATE_LIMITS === "off") return;
  await repo.clearLoginFailures(deps.sql, emailHash(normalisedEmail));
}

/** Deletes the windows that have ended (housekeeping); how many went. */
export async function pruneLoginFailures(deps: Pick<Deps, "sql" | "clock">): Promise<number> {
  const before = new Date(deps.clock.now().getTime() - LOGIN_FAILURE_WINDOW_MS);
  return await repo.deleteLoginWindowsBefore(deps.sql, before);
}
