/**
 * API answers are not cached: the dashboard endpoint echoes the API key and the webhook-secret
 * endpoint the signing secret (an outside audit found neither marked `no-store`).
 */
import assert from "node:assert/strict";
import { startTestService } from "../helpers/service.ts";
import { api, createMerchant } from "../helpers/accounts.ts";

Deno.test("API answers carry Cache-Control: no-store, errors too", async () => {
  const svc = await startTestService({ env: { RATE_LIMITS: "off" } });
  const call = api(svc);
  try {
    const m = await createMerchant(svc);
    const answers = [
      await call("GET", "/api/merchant/dashboard", { headers: { "x-api-key": m.apiKey } }),
      await call("GET", "/api/merchant/webhook-secret", { cookie: m.cookie }),
      await call("GET", "/api/wallets", { headers: { "x-api-key": m.apiKey } }),
      await call("GET", "/api/wallets"),
      await call("GET", "/api/no-such-route"),
    ];
    assert.deepEqual(answers.map((r) => r.status), [200, 200, 200, 401, 404]);
    for (const r of answers) assert.equal(r.headers.get("cache-control"), "no-store", r.text);
  } finally {
    await svc.close();
  }
});
