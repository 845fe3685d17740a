/**
 * x402's listings and balances are the merchant's on one chain, whatever key's environment acts
 * on them, so an Idempotency-Key is the merchant's there too (an outside audit, 2026-12-01): a
 * retry under the other environment's key finds the first answer, and the same key for another
 * request is refused, rather than making a second listing or withdrawal.
 */
import assert from "node:assert/strict";
import { startTestService } from "../helpers/service.ts";
import { api, createMerchant } from "../helpers/accounts.ts";
import { M } from "../../src/http/messages.ts";

Deno.test("x402: an Idempotency-Key is the merchant's, whichever environment's key sends it", async () => {
  const svc = await startTestService({ env: { RATE_LIMITS: "off" } });
  const call = api(svc);
  try {
    const m = await createMerchant(svc);
    const k = await call("POST", "/api/keys", {
      cookie: m.cookie,
      body: { type: "secret", environment: "test" },
    });
    assert.equal(k.status, 201, k.text);
    const test = { authorization: `Bearer ${(k.json.key as { key: string }).key}` };
    const live = { authorization: `Bearer ${m.apiKey}` };
    const body = {
      slug: "idem-shared",
      upstreamUrl: "http://127.0.0.1:9/",
      price: "0.01",
      methods: ["GET"],
    };
    const send = (auth: Record<string, string>, b: unknown) =>
      call("POST", "/api/x402/listings", {
        headers: { ...auth, "idempotency-key": "listing-1" },
        body: b,
      });
    const first = await send(test, body);
    assert.equal(first.status, 201, first.text);
    const retry = await send(live, body);
    assert.equal(retry.status, 201, retry.text);
    assert.equal(retry.headers.get("idempotent-replayed"), "true");
    assert.deepEqual(retry.json, first.json);
    const other = await send(live, { ...body, slug: "idem-other" });
    assert.equal(other.status, 400, other.text);
    assert.equal(other.json.error, M.idempotencyMismatch);
    const listed = await call("GET", "/api/x402/listings", { headers: live });
    const slugs = (listed.json.listings as { slug: string }[]).map((l) => l.slug);
    assert.deepEqual(slugs.filter((s) => s.startsWith("idem-")), ["idem-shared"]);
  } finally {
    await svc.close();
  }
});
