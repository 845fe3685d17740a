/**
 * The merchant's session cookie rides along on requests another site's page makes. An unsafe API
 * request carrying it is refused when the browser says it comes from another site (src/http/
 * csrf.ts `crossSite`): a body-less POST (rolling the webhook secret, rotating a key) has no
 * Content-Type for the JSON check to refuse, so a cross-site form or a `no-cors` fetch reached it
 * (an outside audit, 2026-12-01, rolled a logged-in merchant's secret from another localhost
 * port). Same-origin pages, and clients that are not browsers, are served as before.
 */
import assert from "node:assert/strict";
import { startTestService } from "../helpers/service.ts";
import { api, createMerchant } from "../helpers/accounts.ts";

const REFUSED =
  "Cross-site request refused: a session cookie is accepted only from this service's own pages.";

Deno.test("API: an unsafe request with the session cookie from another site is refused", async () => {
  const svc = await startTestService({ env: { RATE_LIMITS: "off" } });
  const call = api(svc);
  try {
    const m = await createMerchant(svc);
    const roll = (headers: Record<string, string>) =>
      call("POST", "/api/merchant/webhook-secret/roll", { cookie: m.cookie, headers });
    const stored = async () =>
      (await svc.db.sql`select webhook_secret from merchants where id = ${m.id}`)[0]
        .webhookSecret as string;
    const before = await stored();
    for (
      const headers of <Record<string, string>[]> [
        { origin: "http://evil.example" },
        { origin: "null" },
        { "sec-fetch-site": "cross-site", origin: "http://evil.example" },
        // A sibling subdomain's page (production: same site, another origin).
        { "sec-fetch-site": "same-site", origin: "https://evil.pay.example" },
        // Another port of this host in development: the browser says same-site.
        { "sec-fetch-site": "same-site" },
      ]
    ) {
      const r = await roll(headers);
      assert.equal(r.status, 403, JSON.stringify(headers));
      assert.equal(r.json.error, REFUSED);
    }
    assert.equal(await stored(), before, "nothing was rolled");
    let secret = before;
    // This service's own pages, and a client that is no browser: served.
    for (
      const headers of <Record<string, string>[]> [
        { "sec-fetch-site": "same-origin", origin: svc.baseUrl },
        { origin: svc.baseUrl },
        { "sec-fetch-site": "none" },
        {},
      ]
    ) {
      const r = await roll(headers);
      assert.equal(r.status, 200, `${JSON.stringify(headers)}: ${r.text}`);
      assert.notEqual(r.json.secret, secret);
      secret = r.json.secret as string;
    }
    // A key is no ambient credential: another origin's request with one is served.
    const keyed = await call("POST", "/api/keys", {
      headers: { "x-api-key": m.apiKey, origin: "http://evil.example" },
      body: { type: "secret", environment: "test", label: "from a server" },
    });
    assert.equal(keyed.status, 201, keyed.text);
    // Documented: the route's 403.
    const doc = await (await fetch(`${svc.baseUrl}/api/openapi.json`)).json();
    assert.ok(doc.paths["/api/merchant/webhook-secret/roll"].post.responses["403"]);
  } finally {
    await svc.close();
  }
});
