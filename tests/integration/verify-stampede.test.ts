/**
 * Verification provisions the payout wallet while the merchant's row is locked: the wallet is
 * written on the same connection, so 50 identical verifications on a pool of 3 verify once and
 * never wait for a second connection (DESIGN §11).
 */
import assert from "node:assert/strict";
import { startTestService } from "../helpers/service.ts";
import { api, createMerchant, mailedCode } from "../helpers/accounts.ts";
import { stampede, succeeded } from "../helpers/stampede.ts";

Deno.test("50 identical verifications on a pool of 3: one verifies, one wallet, the rest 409", async () => {
  const svc = await startTestService({ env: { DATABASE_POOL_MAX: "3", RATE_LIMITS: "off" } });
  try {
    const bystander = await createMerchant(svc);
    const email = `stampede${Date.now()}@example.com`;
    const signup = await api(svc)("POST", "/api/merchant/signup", {
      body: { email, password: "correct horse battery", businessName: "Stampede" },
    });
    assert.equal(signup.status, 201, signup.text);
    const code = await mailedCode(svc, email);
    const r = await stampede(svc, {
      method: "POST",
      path: "/api/merchant/verify",
      body: { email, code },
    }, {
      bystander: {
        method: "GET",
        path: "/api/wallets",
        headers: { "x-api-key": bystander.apiKey },
      },
    });
    assert.equal(succeeded(r).length, 1, JSON.stringify(r.byStatus));
    assert.deepEqual(Object.keys(r.byStatus).sort(), ["200", "409"]);
    const [{ n }] = await svc.db.sql<{ n: number }[]>`
      select count(*)::int as n from merchant_wallets w join merchants m on m.id = w.merchant_id
      where m.email = ${email}`;
    assert.equal(n, 1, "one payout wallet");
  } finally {
    await svc.close();
  }
});
