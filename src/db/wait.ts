/**
 * Waiting for a database that is not there yet. A container's PostgreSQL may still be starting,
 * recovering after a crash, or restarting when a role starts (its health check passes a moment
 * before, or the orchestrator does not wait at all): a role starts once it answers, within a
 * bound, instead of exiting on the first refusal. Anything else (a wrong password, a missing
 * database) fails at once: waiting would not change it.
 */
import type { Logger } from "../log.ts";

/** Not there yet: a refusal that goes away by itself when the server is up. */
const NOT_READY_CODES = new Set([
  "57P03", // cannot_connect_now: starting up, shutting down, in recovery
  "57P01", // admin_shutdown: a restart ended the session
  "57P02", // crash_shutdown
  "53300", // too_many_connections
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EAI_AGAIN",
  "ENOTFOUND", // a container's name is in its network's DNS only while it runs
  "CONNECT_TIMEOUT",
  "CONNECTION_CLOSED",
  "CONNECTION_ENDED",
  "CONNECTION_DESTROYED",
]);

/** The database cannot be reached now but may be soon (not a refusal of what we asked). */
export function databaseNotReady(e: unknown): boolean {
  if (!(e instanceof Error)) return false;
  const code = (e as { code?: unknown }).code;
  if (typeof code === "string") return NOT_READY_CODES.has(code);
  // The queue's driver (pg) says these with no code: pg-pool's own connect timeout, and a
  // connection the server closed (it crashed or restarted).
  return e.message.startsWith("timeout exceeded when trying to connect") ||
    e.message === "Connection terminated unexpectedly";
}

export interface WaitOptions {
  /** Give up after this long (the last error is thrown). */
  timeoutMs: number;
  log?: Logger;
  /** First pause between tries; doubled each time up to `maxPauseMs`. */
  pauseMs?: number;
  maxPauseMs?: number;
  /** Called after each failed try (tests use it to change the world between tries). */
  onRetry?: (attempt: number, error: unknown) => void | Promise<void>;
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

/**
 * Runs `probe` (one round trip) until it succeeds, retrying while the database is not ready,
 * for at most `timeoutMs`. Returns how many tries failed before it answered.
 */
export async function waitForDatabase(
  probe: () => Promise<unknown>,
  opts: WaitOptions,
): Promise<number> {
  const { failed } = await retryWhileNotReady((msLeft) => bounded(probe(), msLeft), opts);
  return failed;
}

export interface RetryOptions extends WaitOptions {
  /** Logged (a warning) at the first failure; "database not ready; waiting" unless said. */
  message?: string;
  /** Asked before each retry: true gives up at once with the last error (a stop was asked). */
  giveUp?: () => boolean;
}

/**
 * Runs `attempt` until it succeeds, again after a pause (250 ms doubling to 2 s) each time it
 * fails because the database is not ready, for at most `timeoutMs` in all; any other failure is
 * thrown at once. `attempt` is told the time left, and is not cut short: one that must end by
 * the deadline bounds itself.
 */
export async function retryWhileNotReady<T>(
  attempt: (msLeft: number) => Promise<T>,
  opts: RetryOptions,
): Promise<{ value: T; failed: number }> {
  const now = opts.now ?? (() => performance.now());
  const sleep = opts.sleep ?? ((ms) => new Promise<void>((r) => setTimeout(r, ms)));
  const deadline = now() + opts.timeoutMs;
  let pause = opts.pauseMs ?? 250;
  const maxPause = opts.maxPauseMs ?? 2_000;
  let last: unknown;
  for (let tries = 1;; tries++) {
    try {
      const value = await attempt(Math.max(1, deadline - now()));
      if (tries > 1) opts.log?.info("database answered", { tries });
      return { value, failed: tries - 1 };
    } catch (e) {
      if (!databaseNotReady(e)) throw e;
      // The last try cut short by the deadline says less than the server's last answer did.
      if (!(e instanceof Error && e.message.startsWith(CUT_SHORT)) || last === undefined) last = e;
      const left = deadline - now();
      if (left <= 0) {
        throw new Error(
          `the database did not answer within ${Math.round(opts.timeoutMs / 1000)} s ` +
            `(DATABASE_STARTUP_WAIT_MS): ${last instanceof Error ? last.message : last}`,
          { cause: last },
        );
      }
      if (opts.giveUp?.()) throw last;
      if (tries === 1) {
        opts.log?.warn(opts.message ?? "database not ready; waiting", {
          error: e instanceof Error ? e.message : String(e),
          waitMs: opts.timeoutMs,
        });
      }
      await opts.onRetry?.(tries, e);
      await sleep(Math.min(pause, left));
      pause = Math.min(pause * 2, maxPause);
    }
  }
}

const CUT_SHORT = "no answer within";

/**
 * `p`, or a CONNECT_TIMEOUT error after `ms`: a connection attempt to an address that never
 * answers is not always cut off by the driver's own connect timeout.
 */
async function bounded<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const e = new Error(`${CUT_SHORT} ${Math.round(ms)} ms`) as Error & { code: string };
      e.code = "CONNECT_TIMEOUT";
      reject(e);
    }, ms);
  });
  try {
    return await Promise.race([p, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
