/**
 * Rate limits counted in PostgreSQL, so a limit holds across several server processes.
 *
 * Fixed one-minute windows aligned to the injected clock: a hit is one upsert on
 * (bucket, subject, window start) returning the new count. A fixed window lets a client make up
 * to twice the limit across a window boundary; in exchange a hit is a single statement with no
 * read-modify-write race, and Retry-After is exact (the seconds until the window ends).
 *
 * Limits come from configuration (the spec's numbers are defaults) unless the merchant has a row
 * in `rate_limit_overrides` for the bucket; the override is read in the same statement as the
 * count, so there is no cache and no staleness.
 */
import type { Context } from "hono";
import { getConnInfo } from "hono/deno";
import type { Clock } from "../clock.ts";
import type { Config } from "../config.ts";
import type { Sql } from "../db/client.ts";
import { ApiError } from "./errors.ts";
import { M } from "./messages.ts";
import { countHit, countHits } from "./rate-limit.repo.ts";

export type RateBucket =
  | "default"
  | "payments"
  | "checkout"
  | "escrow"
  | "streams"
  | "anonymous"
  | "rpc";

export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  retryAfterSeconds: number;
}

export interface RateLimiter {
  /** Counts one hit of `subject` (an API key id, a merchant session, or a client address) in `bucket`. */
  hit(bucket: RateBucket, subject: string, opts?: { merchantId?: string }): Promise<RateDecision>;
  /** Counts one hit in each bucket, in one round trip; decisions in the buckets' order. */
  hitAll(
    buckets: RateBucket[],
    subject: string,
    opts?: { merchantId?: string },
  ): Promise<RateDecision[]>;
  /**
   * The refusal this process gave `subject` in `bucket` earlier in the current window, if any,
   * without counting (a window's count only grows, so it would be refused again); else null.
   */
  refused(bucket: RateBucket, subject: string): RateDecision | null;
}

/** At most this many refusals remembered per process (the oldest are forgotten first). */
const MAX_REMEMBERED = 10_000;

export const RATE_WINDOW_MS = 60_000;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
// Subjects are key ids or addresses; a bound keeps a hostile X-Forwarded-For out of the index.
const MAX_SUBJECT = 200;

/** With RATE_LIMITS=off: allowed, and no limit headers (the limit is not finite). */
const UNLIMITED: RateDecision = Object.freeze({
  allowed: true,
  limit: Number.POSITIVE_INFINITY,
  remaining: Number.POSITIVE_INFINITY,
  retryAfterSeconds: 0,
});

/** The configured per-minute limit of a bucket, before any per-merchant override. */
export function configuredLimit(bucket: RateBucket, config: Config): number {
  switch (bucket) {
    case "default":
      return config.RATE_LIMIT_DEFAULT_PER_MINUTE;
    case "payments":
      return config.RATE_LIMIT_PAYMENTS_PER_MINUTE;
    case "checkout":
    case "escrow":
    case "streams":
      return config.RATE_LIMIT_GROUP_PER_MINUTE;
    case "anonymous":
      return config.RATE_LIMIT_ANONYMOUS_PER_MINUTE;
    case "rpc":
      return config.RATE_LIMIT_RPC_PER_MINUTE;
  }
}

export function createRateLimiter(deps: { sql: Sql; clock: Clock; config: Config }): RateLimiter {
  const { sql, clock, config } = deps;
  const off = config.RATE_LIMITS === "off";
  const decide = (bucket: RateBucket, count: number, override: number | null, now: number) => {
    const windowStart = Math.floor(now / RATE_WINDOW_MS) * RATE_WINDOW_MS;
    const limit = override ?? configuredLimit(bucket, config);
    const allowed = count <= limit;
    const untilNextWindow = Math.ceil((windowStart + RATE_WINDOW_MS - now) / 1000);
    return {
      allowed,
      limit,
      remaining: Math.max(0, limit - count),
      retryAfterSeconds: allowed ? 0 : Math.max(1, untilNextWindow),
    };
  };
  // Refusals of the current window, by bucket and subject: the decision and the window's end.
  const refusals = new Map<string, { decision: RateDecision; until: number }>();
  const refusalKey = (bucket: RateBucket, subject: string) =>
    `${bucket}\u0000${subject.slice(0, MAX_SUBJECT)}`;
  const remember = (bucket: RateBucket, subject: string, d: RateDecision, now: number) => {
    if (d.allowed) return;
    if (refusals.size >= MAX_REMEMBERED) {
      for (const [k, r] of refusals) if (r.until <= now) refusals.delete(k);
      for (const k of refusals.keys()) {
        if (refusals.size < MAX_REMEMBERED) break;
        refusals.delete(k);
      }
    }
    const until = (Math.floor(now / RATE_WINDOW_MS) + 1) * RATE_WINDOW_MS;
    refusals.set(refusalKey(bucket, subject), { decision: d, until });
  };
  return {
    refused(bucket, subject) {
      if (off) return null;
      const key = refusalKey(bucket, subject);
      const r = refusals.get(key);
      if (!r) return null;
      const now = clock.now().getTime();
      if (now >= r.until) {
        refusals.delete(key);
        return null;
      }
      return { ...r.decision, retryAfterSeconds: Math.max(1, Math.ceil((r.until - now) / 1000)) };
    },
    async hitAll(buckets, subject, opts = {}) {
      if (off) return buckets.map(() => UNLIMITED);
      if (buckets.length === 1) return [await this.hit(buckets[0], subject, opts)];
      if (opts.merchantId !== undefined && !UUID.test(opts.merchantId)) {
        throw new TypeError(`rate limiter: merchantId must be a uuid, got ${opts.merchantId}`);
      }
      const now = clock.now().getTime();
      const rows = await countHits(sql, {
        buckets,
        subject: subject.slice(0, MAX_SUBJECT),
        windowStart: new Date(Math.floor(now / RATE_WINDOW_MS) * RATE_WINDOW_MS),
        merchantId: opts.merchantId ?? null,
      });
      return buckets.map((b) => {
        const r = rows.find((x) => x.bucket === b)!;
        const d = decide(b, r.count, r.override, now);
        remember(b, subject, d, now);
        return d;
      });
    },
    async hit(bucket, subject, opts = {}) {
      if (off) return UNLIMITED;
      if (opts.merchantId !== undefined && !UUID.test(opts.merchantId)) {
        throw new TypeError(`rate limiter: merchantId must be a uuid, got ${opts.merchantId}`);
      }
      const now = clock.now().getTime();
      const windowStart = Math.floor(now / RATE_WINDOW_MS) * RATE_WINDOW_MS;
      const { count, override } = await countHit(sql, {
        bucket,
        subject: subject.slice(0, MAX_SUBJECT),
        windowStart: new Date(windowStart),
        merchantId: opts.merchantId ?? null,
      });
      const d = decide(bucket, count, override, now);
      remember(bucket, subject, d, now);
      return d;
    },
  };
}

/** Throws ApiError 429 with Retry-After when any decision refuses; sets X-RateLimit-Limit/Remaining headers on the context otherwise. */
export function enforce(
  c: Context,
  decisions: RateDecision[],
  opts: { bare?: boolean } = {},
): void {
  const refused = decisions.filter((d) => !d.allowed);
  if (refused.length > 0) {
    // The spec's text says 30 seconds whatever the wait; the header carries the real one.
    const wait = Math.max(...refused.map((d) => d.retryAfterSeconds));
    const tightest = refused.reduce((a, b) => (b.limit < a.limit ? b : a));
    throw new ApiError(429, M.rateLimited, {
      bare: opts.bare,
      headers: {
        "Retry-After": String(wait),
        "X-RateLimit-Limit": String(tightest.limit),
        "X-RateLimit-Remaining": "0",
      },
    });
  }
  const counted = decisions.filter((d) => Number.isFinite(d.limit));
  if (counted.length === 0) return;
  const tightest = counted.reduce((a, b) => (b.remaining < a.remaining ? b : a));
  c.header("X-RateLimit-Limit", String(tightest.limit));
  c.header("X-RateLimit-Remaining", String(tightest.remaining));
}

/** The client address: the socket's remote address, or the first X-Forwarded-For hop when config.TRUST_PROXY. */
export function clientAddress(c: Context, config: Pick<Config, "TRUST_PROXY">): string {
  if (config.TRUST_PROXY) {
    // Only sound when the proxy replaces (not appends to) a client-sent X-Forwarded-For.
    const first = c.req.header("x-forwarded-for")?.split(",")[0]?.trim();
    if (first) return first.slice(0, MAX_SUBJECT);
  }
  try {
    return getConnInfo(c).remote.address ?? "unknown";
  } catch {
    // No connection info (in-process app.request()): every such caller shares one subject.
    return "unknown";
  }
}

/**
 * The group bucket of a request, counted on top of "default" (or "anonymous"): streams live
 * under /api/payments/stream but form their own group; payment-link creation shares the
 * payments bucket. Undefined for endpoints with only the general limit.
 */
export function groupBucket(method: string, path: string): RateBucket | undefined {
  const under = (prefix: string) => path === prefix || path.startsWith(`${prefix}/`);
  if (under("/api/payments/stream") || under("/api/streams")) return "streams";
  if (under("/api/payments")) return "payments";
  if (method.toUpperCase() === "POST" && under("/api/merchant/payment-link")) return "payments";
  if (under("/api/checkout")) return "checkout";
  if (under("/api/escrow")) return "escrow";
  return undefined;
}
