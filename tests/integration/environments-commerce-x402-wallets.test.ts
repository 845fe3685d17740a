/**
 * Environments are part of identity (issue 23, item 1) in wallets, jobs and x402: a test key
 * (`svc_sec_test_`) sees and moves only testnet money and records, a live key only production's,
 * a dashboard session those of its mode; the other environment's job is a 404 like another
 * merchant's, with nothing sent. x402 (and agents) live on testnet by design: every credential
 * acts there, and none reaches production (docs/decisions.md).
 */
import assert from "node:assert/strict";
import { startTestService } from "../helpers/service.ts";
import { api, createMerchant } from "../helpers/accounts.ts";
import { M } from "../../src/http/messages.ts";

const USDC = 1_000_000n;
const DEST = "0x5B38Da6a701c568545dCfcB03FcB875f56beddC4";

type Wallet = { id: string; address: `0x${string}`; balances: Record<string, string | null> };

Deno.test("environments: wallets, jobs and x402 follow the credential's environment", async (t) => {
  const svc = await startTestService({ env: { RATE_LIMITS: "off" } });
  const call = api(svc);
  const chain = svc.deps.chain;
  try {
    const a = await createMerchant(svc);
    const made = await call("POST", "/api/keys", {
      cookie: a.cookie,
      body: { type: "secret", environment: "test" },
    });
    assert.equal(made.status, 201, made.text);
    const testKey = (made.json.key as { key: string }).key;
    assert.match(testKey, /^svc_sec_test_/);
    const live = { "x-api-key": a.apiKey };
    const test = { "x-api-key": testKey };
    const payout = a.walletAddress!.toLowerCase() as `0x${string}`;
    const payoutId = ((await call("GET", "/api/merchant/wallet", { cookie: a.cookie })).json
      .wallet as { managedWalletId: string }).managedWalletId;
    await chain.mintUsdc({ profile: "production", to: payout, amount: 7n * USDC });
    await chain.mintUsdc({ profile: "testnet", to: payout, amount: 3n * USDC });
    // Transactions other than gas top-ups.
    const sent = async () =>
      (await svc.db.sql`select 1 from chain_transactions where intent_key not like 'gas:%'`)
        .length;

    await t.step(
      "GET /api/wallets and /api/wallets/{id}: the credential's chain only",
      async () => {
        const cases: [Record<string, string>, string | undefined, Record<string, string>][] = [
          [test, undefined, { testnet: "3.000000" }],
          [live, undefined, { production: "7.000000" }],
          [{}, a.cookie, { production: "7.000000" }], // a session in its default mode: live
        ];
        for (const [headers, cookie, balances] of cases) {
          const list = await call("GET", "/api/wallets", { headers, cookie });
          assert.equal(list.status, 200, list.text);
          assert.match(list.headers.get("content-type")!, /application\/json/);
          assert.deepEqual((list.json.wallets as Wallet[])[0].balances, balances);
          const one = await call("GET", `/api/wallets/${payoutId}`, { headers, cookie });
          assert.equal(one.status, 200, one.text);
          assert.deepEqual((one.json.wallet as Wallet).balances, balances);
        }
        // A session switched to test mode is the testnet's, like a test key.
        await svc.db.sql`update merchant_sessions set mode = 'test' where merchant_id = ${a.id}`;
        const r = await call("GET", `/api/wallets/${payoutId}`, { cookie: a.cookie });
        assert.deepEqual((r.json.wallet as Wallet).balances, { testnet: "3.000000" });
        await svc.db.sql`update merchant_sessions set mode = 'live' where merchant_id = ${a.id}`;
      },
    );

    await t.step("merchant withdraw: a test key cannot reach production's balance", async () => {
      const before = await sent();
      const over = await call("POST", "/api/merchant/withdraw", {
        headers: test,
        body: { amount: "5", destinationAddress: DEST },
      });
      assert.equal(over.status, 400, over.text);
      assert.equal(over.json.error, M.withdrawInsufficient);
      assert.equal(over.json.balance, "3.000000", "the testnet balance, not production's 7");
      assert.equal(await sent(), before, "refused before anything was signed");
      const ok = await call("POST", "/api/merchant/withdraw", {
        headers: test,
        body: { amount: "1", destinationAddress: DEST },
      });
      assert.equal(ok.status, 200, ok.text);
      assert.equal(ok.json.chain, "testnet");
      assert.equal(await chain.usdcBalance("testnet", payout), 2n * USDC);
      assert.equal(await chain.usdcBalance("production", payout), 7n * USDC, "production intact");
    });

    // Job ids are the contract's, counted per chain from 1: testnet 1–2 are made first (a live
    // key asks for 2, which production does not have yet), then production 1–3 (a test key asks
    // for 3, which the testnet does not have).
    const wallet = async () => {
      const r = await call("POST", "/api/wallets", { headers: live, body: {} });
      return r.json.wallet as Wallet;
    };
    const [client, provider, evaluator] = [await wallet(), await wallet(), await wallet()];
    const create = async (headers: Record<string, string>) => {
      const r = await call("POST", "/api/jobs/create", {
        headers,
        body: {
          clientWalletId: client.id,
          provider: provider.address,
          evaluator: evaluator.address,
          budget: "1",
          expiresInSeconds: 3600,
          description: "environments",
        },
      });
      assert.equal(r.status, 201, r.text);
      return r.json as { jobId: string; job: { chain: string } };
    };

    await t.step(
      "jobs: the other environment's job is 404 on every action, nothing sent",
      async () => {
        const refusedEverywhere = async (headers: Record<string, string>, jobId: string) => {
          const got = await call("GET", `/api/jobs/${jobId}`, { headers });
          assert.equal(got.status, 404, got.text);
          assert.deepEqual(got.json, { error: M.jobNotFound });
          const actions: [string, Record<string, string>][] = [
            ["fund", { clientWalletId: client.id }],
            ["submit", { providerWalletId: provider.id, deliverableData: "ipfs://x" }],
            ["complete", { evaluatorWalletId: evaluator.id }],
            ["reject", { evaluatorWalletId: evaluator.id }],
            ["refund", { clientWalletId: client.id }],
          ];
          for (const [action, body] of actions) {
            const r = await call("POST", `/api/jobs/${action}`, {
              headers,
              body: { jobId, ...body },
            });
            assert.equal(r.status, 404, `${action}: ${r.text}`);
            assert.deepEqual(r.json, { error: M.jobNotFound });
          }
        };
        for (let i = 1; i <= 2; i++) {
          const j = await create(test);
          assert.equal(j.jobId, String(i));
          assert.equal(j.job.chain, "testnet");
        }
        let before = await sent();
        await refusedEverywhere(live, "2");
        assert.equal(await sent(), before, "no chain effect");
        for (let i = 1; i <= 3; i++) assert.equal((await create(live)).jobId, String(i));
        before = await sent();
        await refusedEverywhere(test, "3");
        assert.equal(await sent(), before, "no chain effect");
        const own = await call("GET", "/api/jobs/2", { headers: test });
        assert.equal(own.status, 200, own.text);
        assert.equal((own.json.job as { chain: string }).chain, "testnet");
        const prod = await call("GET", "/api/jobs/3", { headers: live });
        assert.equal((prod.json.job as { chain: string }).chain, "production");
        assert.equal((await chain.jobs.read("production", 3n)).status, "OPEN");
      },
    );

    await t.step("x402 lives on testnet: a live key and a test key act on the same", async () => {
      const w = await wallet();
      await chain.mintUsdc({ profile: "testnet", to: w.address, amount: 2n * USDC });
      await chain.mintUsdc({ profile: "production", to: w.address, amount: 2n * USDC });
      const dep = await call("POST", "/api/x402/gateway/deposit", {
        headers: live,
        body: { walletId: w.id, amount: "1.5" },
      });
      assert.equal(dep.status, 200, dep.text);
      assert.equal(await chain.usdcBalance("testnet", w.address), 500_000n);
      assert.equal(await chain.usdcBalance("production", w.address), 2n * USDC, "never production");
      const views = await Promise.all(
        [live, test].map((headers) =>
          call("GET", `/api/x402/gateway/balance?walletId=${w.id}`, { headers })
        ),
      );
      for (const v of views) assert.equal(v.status, 200, v.text);
      assert.deepEqual(views[0].json, views[1].json);
      assert.equal((views[0].json.gateway as { available: string }).available, "1.500000");
      const sellers = await Promise.all(
        [a.apiKey, testKey].map((k) =>
          call("GET", "/api/x402/seller/balance", { headers: { authorization: `Bearer ${k}` } })
        ),
      );
      assert.deepEqual(sellers[0].json, sellers[1].json);
      assert.equal((sellers[0].json.wallet as { balance: string }).balance, "2.000000");
    });
  } finally {
    await svc.close();
  }
});
