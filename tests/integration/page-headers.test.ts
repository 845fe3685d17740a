/**
 * Every HTML page carries a Content-Security-Policy and refuses to be framed: the checkout, the
 * explorer and error pages got none (an outside audit, 2026-12-01, framed a checkout page from
 * another site and clicked its buttons). The dashboard keeps its own stricter policy; JSON
 * answers carry none.
 */
import assert from "node:assert/strict";
import { startTestService } from "../helpers/service.ts";
import { api, createMerchant } from "../helpers/accounts.ts";

Deno.test("pages: a policy and no framing on every HTML page", async () => {
  const svc = await startTestService({ env: { RATE_LIMITS: "off" } });
  try {
    const m = await createMerchant(svc);
    const init = await api(svc)("POST", "/api/payments/initialize", {
      headers: { "x-api-key": m.apiKey },
      body: { amount: "1", description: "framed?" },
    });
    assert.equal(init.status, 201, init.text);
    const get = async (path: string) => {
      const r = await fetch(`${svc.baseUrl}${path}`, { redirect: "manual" });
      await r.body?.cancel();
      return r;
    };
    for (
      const [path, status] of [
        [`/checkout/${init.json.reference}`, 200],
        [`/explorer/testnet/tx/0x${"ab".repeat(32)}`, 404],
        ["/no-such-page", 404],
      ] as const
    ) {
      const r = await get(path);
      assert.equal(r.status, status, path);
      assert.match(r.headers.get("content-type") ?? "", /^text\/html/, path);
      const csp = r.headers.get("content-security-policy") ?? "";
      assert.match(csp, /frame-ancestors 'none'/, path);
      assert.match(csp, /script-src 'self'(;|$)/, `${path}: no inline code`);
      assert.equal(r.headers.get("x-frame-options"), "DENY", path);
      assert.equal(r.headers.get("x-content-type-options"), "nosniff", path);
    }
    const dashboard = await get("/dashboard/login");
    assert.match(dashboard.headers.get("content-security-policy") ?? "", /style-src 'self';/);
    const json = await get("/api/openapi.json");
    assert.equal(json.headers.get("content-security-policy"), null);
  } finally {
    await svc.close();
  }
});
