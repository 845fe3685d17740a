/**
 * The hosted checkout page as a browser gets it: over its rate limit a page, not JSON shown as
 * text; no buttons that need the script before it runs; no QR code once nothing can be paid.
 */
import assert from "node:assert/strict";
import { startTestService } from "../helpers/service.ts";
import { api, createMerchant } from "../helpers/accounts.ts";

const LIMIT = 3;

Deno.test("checkout page: a page over the rate limit; nothing to press that cannot work", async (t) => {
  const svc = await startTestService({ env: { RATE_LIMIT_GROUP_PER_MINUTE: String(LIMIT) } });
  try {
    const m = await createMerchant(svc);
    const link = await api(svc)("POST", "/api/merchant/payment-link", {
      cookie: m.cookie,
      body: { amount: "2.5", description: "Page" },
    });
    assert.equal(link.status, 201, link.text);
    const ref = link.json.reference as string;
    const open = (headers: Record<string, string>) =>
      fetch(`${svc.baseUrl}/checkout/${ref}`, { headers });
    const browser = { accept: "text/html,application/xhtml+xml,*/*;q=0.8" };

    await t.step("payable: the pay buttons wait for the script; the QR code is there", async () => {
      const r = await open(browser);
      const html = await r.text();
      assert.equal(r.status, 200);
      assert.match(html, /<button id="pay-button" type="button" class="primary" hidden="">/);
      assert.match(html, /<p class="dev-faucet" hidden="">/);
      assert.match(html, /<section id="qr" class="qr"/);
    });

    await t.step(
      "over the limit: a browser gets a page with Retry-After, a script JSON",
      async () => {
        for (let i = 1; i < LIMIT; i++) {
          assert.equal((await (await open(browser)).text()).length > 0, true);
        }
        const page = await open(browser);
        const html = await page.text();
        assert.equal(page.status, 429);
        assert.match(page.headers.get("content-type")!, /^text\/html/);
        assert.ok(Number(page.headers.get("retry-after")) > 0);
        assert.match(html, /<h1>Too many requests<\/h1>/);
        assert.match(html, /Rate limit exceeded\. Please retry after 30 seconds\./);
        const script = await open({ accept: "*/*" });
        assert.equal(script.status, 429);
        assert.deepEqual(await script.json(), {
          success: false,
          error: "Rate limit exceeded. Please retry after 30 seconds.",
        });
        const swap = await open({ ...browser, "hx-request": "true" });
        assert.equal(swap.status, 429);
        assert.match(swap.headers.get("content-type")!, /^application\/json/);
        await swap.body?.cancel();
      },
    );

    await t.step("expired: no QR code, no pay panel", async () => {
      svc.clock.advance(61_000); // a new rate-limit window
      await svc.db.sql`update payments set expires_at = now() - interval '1 minute'
        where reference = ${ref}`;
      const r = await open(browser);
      const html = await r.text();
      assert.equal(r.status, 200);
      assert.match(html, /<h2>Expired<\/h2>/);
      assert.doesNotMatch(html, /id="qr"/);
      assert.doesNotMatch(html, /phone wallet/);
      assert.match(html, /<section id="pay-panel" class="pay-panel" hidden="">/);
    });
  } finally {
    await svc.close();
  }
});
