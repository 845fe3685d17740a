/**
 * "Get test USDC" on the checkout page is a development aid for local chains: it is there in
 * development/test on a local node, refused on a configured (remote) chain, and not mounted at
 * all in production.
 */
import assert from "node:assert/strict";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { startTestService, type TestService } from "../helpers/service.ts";
import { api, createMerchant } from "../helpers/accounts.ts";
import { M } from "../../src/http/messages.ts";

async function post(svc: TestService, path: string, body: unknown) {
  const res = await fetch(`${svc.baseUrl}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.status, type: res.headers.get("content-type"), text: await res.text() };
}

Deno.test("dev faucet: local chains in development only", async (t) => {
  const svc = await startTestService({ env: { RATE_LIMITS: "off" } });
  const others: TestService[] = [];
  try {
    const m = await createMerchant(svc, { businessName: "Faucet Shop" });
    const r = await api(svc)("POST", "/api/merchant/payment-link", {
      cookie: m.cookie,
      body: { amount: "150" },
    });
    assert.equal(r.status, 201, r.text);
    const ref = r.json.reference as string;
    const address = privateKeyToAccount(generatePrivateKey()).address;

    await t.step("test, local node: the page offers it; it funds USDC and gas", async () => {
      const page = await (await fetch(`${svc.baseUrl}/checkout/${ref}`)).text();
      assert.match(page, /Get test USDC/);
      const res = await post(svc, `/checkout/${ref}/dev-faucet`, { address });
      assert.equal(res.status, 200, res.text);
      assert.match(res.type ?? "", /application\/json/);
      const body = JSON.parse(res.text);
      assert.equal(body.amount, "150"); // the payment's amount, being more than 100
      assert.equal(body.usdcBalance, "150");
      const who = address.toLowerCase() as `0x${string}`;
      assert.equal(await svc.deps.chain.usdcBalance("production", who), 150_000_000n);
      assert.ok(await svc.deps.chain.nativeBalance("production", who) > 0n);
      const bad = await post(svc, `/checkout/${ref}/dev-faucet`, { address: "0x12" });
      assert.equal(bad.status, 400);
      assert.equal(JSON.parse(bad.text).error, M.payerAddress);
    });

    await t.step("test, configured remote chains: refused (404), not offered", async () => {
      const remote = await startTestService({ sameDeploymentAs: svc });
      others.push(remote);
      const page = await (await fetch(`${remote.baseUrl}/checkout/${ref}`)).text();
      assert.doesNotMatch(page, /Get test USDC/);
      const res = await post(remote, `/checkout/${ref}/dev-faucet`, { address });
      assert.equal(res.status, 404, res.text);
      assert.deepEqual(JSON.parse(res.text), {
        success: false,
        error: M.devFaucetUnavailable,
      });
    });

    await t.step("production: the route is absent", async () => {
      const prod = await startTestService({
        sameDeploymentAs: svc,
        env: { APP_ENV: "production", SMTP_URL: "smtp://127.0.0.1:2525" },
      });
      others.push(prod);
      const page = await (await fetch(`${prod.baseUrl}/checkout/${ref}`)).text();
      assert.doesNotMatch(page, /Get test USDC/);
      const res = await post(prod, `/checkout/${ref}/dev-faucet`, { address });
      assert.equal(res.status, 404, res.text);
      assert.ok(!prod.app.routes.some((r) => r.path.includes("dev-faucet")));
    });
  } finally {
    for (const o of others) await o.close();
    await svc.close();
  }
});
