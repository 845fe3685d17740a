import assert from "node:assert/strict";
import { Hono } from "hono";
import { ManualClock } from "../../src/clock.ts";
import { createSql } from "../../src/db/client.ts";
import { silentLogger } from "../../src/log.ts";
import type { Deps } from "../../src/deps.ts";
import type { AppModule } from "../../src/modules/index.ts";
import {
  clientAddress,
  createRateLimiter,
  enforce,
  groupBucket,
  RATE_WINDOW_MS,
} from "../../src/http/rate-limit.ts";
import { deleteOverride, setOverride } from "../../src/http/rate-limit.repo.ts";
import { rateLimitCleanupJob } from "../../src/http/rate-limit.jobs.ts";
import { createTestDatabase } from "../helpers/db.ts";
import { startTestService, testConfig } from "../helpers/service.ts";

/** A clock 15.5 s into a minute, so the wait until the next window is 44.5 s → 45. */
function clockInWindow(): ManualClock {
  const start = Math.floor(Date.now() / RATE_WINDOW_MS) * RATE_WINDOW_MS;
  return new ManualClock(start + 15_500);
}

async function hits(n: number, fn: () => Promise<{ allowed: boolean }>) {
  const out: boolean[] = [];
  for (let i = 0; i < n; i++) out.push((await fn()).allowed);
  return out;
}

Deno.test("rate limits: fixed windows counted in PostgreSQL", async (t) => {
  const db = await createTestDatabase();
  const config = testConfig({ DATABASE_URL: db.url });
  const clock = clockInWindow();
  const limiter = createRateLimiter({ sql: db.sql, clock, config });
  try {
    await t.step(
      "the 101st hit of a key in a minute is refused until the window ends",
      async () => {
        const allowed = await hits(100, () => limiter.hit("default", "key-a"));
        assert.ok(allowed.every(Boolean), "the first 100 are allowed");
        const refused = await limiter.hit("default", "key-a");
        assert.equal(refused.allowed, false);
        assert.equal(refused.limit, 100);
        assert.equal(refused.remaining, 0);
        assert.equal(refused.retryAfterSeconds, 45);
        clock.advance(44_000);
        assert.equal((await limiter.hit("default", "key-a")).retryAfterSeconds, 1);
      },
    );

    await t.step("a refusal is remembered, uncounted, until its window ends", async () => {
      assert.equal(limiter.refused("default", "key-r"), null, "never refused");
      await hits(100, () => limiter.hit("default", "key-r"));
      assert.equal(limiter.refused("default", "key-r"), null, "at the limit, not over it");
      const [over] = await limiter.hitAll(["default"], "key-r");
      assert.equal(over.allowed, false);
      const remembered = limiter.refused("default", "key-r");
      assert.deepEqual(remembered, { ...over, retryAfterSeconds: remembered!.retryAfterSeconds });
      assert.equal(limiter.refused("anonymous", "key-r"), null, "per bucket");
      const [row] = await db.sql`select count from rate_limit_counters
        where bucket = 'default' and subject = 'key-r'`;
      assert.equal(row.count, 101, "asking counts nothing");
      const at = clock.now();
      clock.advance(remembered!.retryAfterSeconds * 1000);
      assert.equal(limiter.refused("default", "key-r"), null, "the next window");
      clock.set(at);
    });

    await t.step("another key is unaffected", async () => {
      const d = await limiter.hit("default", "key-b");
      assert.deepEqual(d, { allowed: true, limit: 100, remaining: 99, retryAfterSeconds: 0 });
    });

    await t.step("the next window allows again", async () => {
      clock.advance(1_000);
      const d = await limiter.hit("default", "key-a");
      assert.equal(d.allowed, true);
      assert.equal(d.remaining, 99);
    });

    await t.step("a per-merchant override of 150 allows 150", async () => {
      const merchantId = crypto.randomUUID();
      await setOverride(db.sql, merchantId, "default", 150);
      const allowed = await hits(150, () => limiter.hit("default", "key-m", { merchantId }));
      assert.ok(allowed.every(Boolean));
      const refused = await limiter.hit("default", "key-m", { merchantId });
      assert.equal(refused.allowed, false);
      assert.equal(refused.limit, 150);
      // An override for another bucket, or of another merchant, changes nothing here.
      const other = await limiter.hit("default", "key-n", { merchantId: crypto.randomUUID() });
      assert.equal(other.limit, 100);
      // Removing it applies to the very next hit (no cache).
      await deleteOverride(db.sql, merchantId, "default");
      assert.equal((await limiter.hit("default", "key-m", { merchantId })).limit, 100);
    });

    await t.step("the payments bucket refuses the 31st", async () => {
      const allowed = await hits(30, () => limiter.hit("payments", "key-p"));
      assert.ok(allowed.every(Boolean));
      const refused = await limiter.hit("payments", "key-p");
      assert.equal(refused.allowed, false);
      assert.equal(refused.limit, 30);
      // The same key's default bucket counts separately.
      assert.equal((await limiter.hit("default", "key-p")).remaining, 99);
    });

    await t.step("checkout, escrow and streams are 30 each; anonymous is 100", async () => {
      for (const bucket of ["checkout", "escrow", "streams"] as const) {
        assert.equal((await limiter.hit(bucket, "key-g")).limit, 30, bucket);
      }
      assert.equal((await limiter.hit("anonymous", "127.0.0.1")).limit, 100);
    });

    await t.step("RATE_LIMITS=off allows everything without touching the database", async () => {
      const offConfig = testConfig({ DATABASE_URL: db.url, RATE_LIMITS: "off" });
      const closed = createSql(db.url);
      await closed.end();
      // A closed pool would throw on any query, so this also proves no query runs.
      const off = createRateLimiter({ sql: closed, clock, config: offConfig });
      const allowed = await hits(500, () => off.hit("payments", "key-off"));
      assert.ok(allowed.every(Boolean));
    });

    await t.step("a non-uuid merchant id is a programming error", async () => {
      await assert.rejects(
        () => limiter.hit("default", "key-x", { merchantId: "not-a-uuid" }),
        TypeError,
      );
    });

    await t.step("the cleanup job deletes windows older than an hour", async () => {
      const now = clock.now().getTime();
      await db.sql`
        insert into rate_limit_counters (bucket, subject, window_start, count)
        values ('default', 'old', ${new Date(now - 61 * 60_000)}, 1),
               ('default', 'recent', ${new Date(now - 59 * 60_000)}, 1)`;
      await rateLimitCleanupJob.handler({}, {
        deps: { sql: db.sql, clock, log: silentLogger } as unknown as Deps,
        jobId: "test",
        retryCount: 0,
        signal: new AbortController().signal,
      });
      const left = await db.sql<{ subject: string }[]>`
        select subject from rate_limit_counters where subject in ('old', 'recent')`;
      assert.deepEqual(left.map((r) => r.subject), ["recent"]);
      assert.equal(rateLimitCleanupJob.cron, "*/10 * * * *");
    });

    await t.step("measure: one hit (not asserted)", async () => {
      const hot: number[] = [];
      for (let i = 0; i < 400; i++) {
        const t0 = performance.now();
        await limiter.hit("default", "bench-hot");
        hot.push(performance.now() - t0);
      }
      const spread: number[] = [];
      const merchantId = crypto.randomUUID();
      for (let i = 0; i < 400; i++) {
        const t0 = performance.now();
        await limiter.hit("default", `bench-${i}`, { merchantId });
        spread.push(performance.now() - t0);
      }
      console.log(
        `rate-limit hit, sequential, 400 each: one subject p50 ${p(hot, 50)} ms ` +
          `p99 ${p(hot, 99)} ms; new subject + override lookup p50 ${p(spread, 50)} ms ` +
          `p99 ${p(spread, 99)} ms`,
      );
    });
  } finally {
    await db.drop();
  }
});

Deno.test("rate limits: two processes (two pools) share one count", async () => {
  const db = await createTestDatabase();
  const other = createSql(db.url, { max: 5, name: "test-second-process" });
  const config = testConfig({ DATABASE_URL: db.url });
  const clock = clockInWindow();
  const a = createRateLimiter({ sql: db.sql, clock, config });
  const b = createRateLimiter({ sql: other, clock, config });
  try {
    const all = await Promise.all([
      ...Array.from({ length: 60 }, () => a.hit("default", "shared-key")),
      ...Array.from({ length: 60 }, () => b.hit("default", "shared-key")),
    ]);
    assert.equal(all.filter((d) => d.allowed).length, 100);
    assert.equal(all.filter((d) => !d.allowed).length, 20);
    const [row] = await db.sql<{ count: number }[]>`
      select count from rate_limit_counters where subject = 'shared-key'`;
    assert.equal(row.count, 120);
  } finally {
    await other.end({ timeout: 1 });
    await db.drop();
  }
});

Deno.test("rate limits: over HTTP, the 101st anonymous request gets the spec's 429", async () => {
  const limitedModule: AppModule = {
    name: "rate-limit-test",
    api: (deps) => {
      const limiter = createRateLimiter(deps);
      const app = new Hono();
      app.get("/api/test/limited", async (c) => {
        enforce(c, [await limiter.hit("anonymous", clientAddress(c, deps.config))]);
        return c.json({ success: true, address: clientAddress(c, deps.config) });
      });
      return app;
    },
  };
  const svc = await startTestService({ modules: [limitedModule], env: { CHAINS: "testnet" } });
  svc.clock.set(clockInWindow().now());
  const url = `${svc.baseUrl}/api/test/limited`;
  try {
    for (let i = 1; i <= 100; i++) {
      const res = await fetch(url);
      assert.equal(res.status, 200, `request ${i}`);
      const body = await res.json();
      if (i === 1) assert.equal(body.address, "127.0.0.1");
      assert.equal(res.headers.get("x-ratelimit-limit"), "100");
      assert.equal(res.headers.get("x-ratelimit-remaining"), String(100 - i));
    }
    const res = await fetch(url);
    assert.equal(res.status, 429);
    assert.equal(res.headers.get("retry-after"), "45");
    assert.match(res.headers.get("content-type") ?? "", /application\/json/);
    assert.deepEqual(await res.json(), {
      success: false,
      error: "Rate limit exceeded. Please retry after 30 seconds.",
    });
    svc.clock.advance(45_000);
    const next = await fetch(url);
    assert.equal(next.status, 200, "the next window allows again");
    await next.body?.cancel();
  } finally {
    await svc.close();
  }
});

Deno.test("rate limits: client address and group buckets", async () => {
  const app = new Hono();
  const trusted = { TRUST_PROXY: true };
  const untrusted = { TRUST_PROXY: false };
  app.get("/", (c) => c.json({ t: clientAddress(c, trusted), u: clientAddress(c, untrusted) }));
  const res = await app.request("/", { headers: { "x-forwarded-for": " 203.0.113.7, 10.0.0.1" } });
  // app.request() has no socket, so the untrusted answer is the shared "unknown".
  assert.deepEqual(await res.json(), { t: "203.0.113.7", u: "unknown" });

  assert.equal(groupBucket("POST", "/api/payments/initialize"), "payments");
  assert.equal(groupBucket("GET", "/api/payments/verify/pay_ref_1"), "payments");
  assert.equal(groupBucket("POST", "/api/payments/stream"), "streams");
  assert.equal(groupBucket("POST", "/api/payments/stream/stop"), "streams");
  assert.equal(groupBucket("POST", "/api/merchant/payment-link"), "payments");
  assert.equal(groupBucket("GET", "/api/merchant/payment-link"), undefined);
  assert.equal(groupBucket("POST", "/api/escrow/dispute"), "escrow");
  assert.equal(groupBucket("GET", "/api/checkout/pay_ref_1"), "checkout");
  assert.equal(groupBucket("GET", "/api/paymentsx"), undefined);
  assert.equal(groupBucket("GET", "/api/agents"), undefined);
});

function p(samples: number[], pct: number): string {
  const sorted = [...samples].sort((x, y) => x - y);
  const i = Math.min(sorted.length - 1, Math.floor((pct / 100) * sorted.length));
  return sorted[i].toFixed(2);
}
