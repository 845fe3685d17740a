/** Rate limits through the real routes: per key, shared by two server processes. */
import assert from "node:assert/strict";
import { startTestService } from "../helpers/service.ts";
import { api, createMerchant } from "../helpers/accounts.ts";

Deno.test("rate limits: the 101st request in a minute is refused; another key is not; two processes share the count", async () => {
  const a = await startTestService();
  const b = await startTestService({ sameDeploymentAs: a });
  try {
    // Both processes read the same clock so they agree on the window.
    b.clock.set(a.clock.now());
    const m = await createMerchant(a);
    const key = (await api(a)("POST", "/api/keys", {
      cookie: m.cookie,
      body: { type: "secret", environment: "test" },
    }))
      .json.key as { key: string };
    const calls = [api(a), api(b)];
    const statuses: number[] = [];
    for (let i = 0; i < 100; i++) {
      const r = await calls[i % 2]("GET", "/api/merchant/dashboard", {
        headers: { "x-api-key": m.apiKey },
      });
      statuses.push(r.status);
    }
    assert.deepEqual(new Set(statuses), new Set([200]));
    const refused = await calls[0]("GET", "/api/merchant/dashboard", {
      headers: { "x-api-key": m.apiKey },
    });
    assert.equal(refused.status, 429);
    // The dashboard's errors are `{ error }` only, the rate limit's too.
    assert.deepEqual(refused.json, {
      error: "Rate limit exceeded. Please retry after 30 seconds.",
    });
    const retryAfter = Number(refused.headers.get("retry-after"));
    assert.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After ${retryAfter}`);
    const onB = await calls[1]("GET", "/api/merchant/dashboard", {
      headers: { "x-api-key": m.apiKey },
    });
    assert.equal(onB.status, 429, "the other process sees the same count");

    const other = await calls[1]("GET", "/api/merchant/dashboard", {
      headers: { "x-api-key": key.key },
    });
    assert.equal(other.status, 200, "another key is unaffected");

    a.clock.advance(60_000);
    b.clock.advance(60_000);
    const next = await calls[0]("GET", "/api/merchant/dashboard", {
      headers: { "x-api-key": m.apiKey },
    });
    assert.equal(next.status, 200, "a new window");

    // An operator raises this merchant's limit in the database.
    await a.db
      .sql`insert into rate_limit_overrides (merchant_id, bucket, per_minute) values (${m.id}, 'default', 150)`;
    a.clock.advance(60_000);
    b.clock.advance(60_000);
    let ok = 0;
    for (let i = 0; i < 151; i++) {
      const r = await calls[i % 2]("GET", "/api/merchant/dashboard", {
        headers: { "x-api-key": m.apiKey },
      });
      if (r.status === 200) ok++;
    }
    assert.equal(ok, 150);
  } finally {
    await b.close();
    await a.close();
  }
});
