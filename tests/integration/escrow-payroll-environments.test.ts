/**
 * Environments are part of identity (DESIGN §11) for escrow and payroll: a test key
 * (`svc_sec_test_`, testnet) against the merchant's live (production) records and the merchant's
 * live key against its test records get 404 with the not-found text on every escrow and payroll
 * route, nothing is signed or broadcast, no balance moves and the contract's view is unchanged;
 * lists show only the credential's environment; a payroll Idempotency-Key is the environment's
 * own; the dashboard follows the session's mode. The owner's own key then does act (the routes
 * could have moved money).
 */
import assert from "node:assert/strict";
import { type PrivateKeyAccount } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { startTestService, type TestService } from "../helpers/service.ts";
import { api, cookieFrom, createMerchant, type TestMerchant } from "../helpers/accounts.ts";
import { dashboardClient } from "../helpers/dashboard-client.ts";
import { M } from "../../src/http/messages.ts";
import type { ProfileName } from "../../src/chain/profiles.ts";

const USDC = 1_000_000n;
const PROFILES: ProfileName[] = ["production", "testnet"];
const fresh = () => privateKeyToAccount(generatePrivateKey()).address;

/** Links `account` as the merchant's external payout wallet (SIWE, as the dashboard does). */
async function linkExternal(svc: TestService, m: TestMerchant, account: PrivateKeyAccount) {
  const call = api(svc);
  const c = await call("GET", `/api/merchant/wallet/connect?address=${account.address}`, {
    cookie: m.cookie,
  });
  assert.equal(c.status, 200, c.text);
  const nonce = cookieFrom(c.headers, "wallet_connect_nonce")!;
  const message = c.json.message as string;
  const r = await call("POST", "/api/merchant/wallet/connect", {
    cookie: `${m.cookie}; ${nonce}`,
    body: {
      address: account.address,
      message,
      signature: await account.signMessage({ message }),
      walletKind: "EXTENSION_WALLET",
    },
  });
  assert.equal(r.status, 200, r.text);
}

/** A secret key of the test environment (testnet) with the escrow and payroll scopes. */
async function testKey(svc: TestService, m: TestMerchant): Promise<string> {
  const r = await api(svc)("POST", "/api/keys", {
    headers: { "x-api-key": m.apiKey },
    body: { type: "secret", environment: "test", label: "test", scopes: ["escrow", "payroll"] },
  });
  assert.equal(r.status, 201, r.text);
  const key = (r.json.key as { key: string }).key;
  assert.match(key, /^svc_sec_test_/);
  return key;
}

Deno.test("environments: escrow and payroll records are found by merchant and environment", async (t) => {
  const svc = await startTestService({ env: { RATE_LIMITS: "off" } });
  const call = api(svc);
  const chain = svc.deps.chain;
  const sql = svc.db.sql;
  try {
    const a = await createMerchant(svc);
    const live = a.apiKey;
    const test = await testKey(svc, a);
    const wallet = async () => {
      const r = await call("POST", "/api/wallets", { headers: { "x-api-key": live }, body: {} });
      assert.equal(r.status, 201, r.text);
      return r.json.wallet as { id: string; address: `0x${string}` };
    };
    const depositor = await wallet();
    const beneficiary = await wallet();
    for (const profile of PROFILES) {
      await chain.mintUsdc({ profile, to: depositor.address, amount: 100n * USDC });
    }
    const txCount = async () =>
      (await sql`select count(*)::int as n from chain_transactions`)[0].n as number;
    /** Every balance the escrow routes could move, on both chains. */
    const balances = async () =>
      await Promise.all(
        PROFILES.flatMap((p) => [
          chain.usdcBalance(p, depositor.address),
          chain.usdcBalance(p, beneficiary.address),
          chain.usdcBalance(p, chain.contract(p, "EscrowVault")),
        ]),
      );

    const create = async (key: string) => {
      const r = await call("POST", "/api/escrow/create", {
        headers: { authorization: `Bearer ${key}` },
        body: {
          depositorWalletId: depositor.id,
          beneficiarySCA: beneficiary.address,
          amount: "5",
          expiresInSeconds: 3600,
        },
      });
      assert.equal(r.status, 201, r.text);
      return r.json as { reference: string; escrow: { chain: string } };
    };
    const liveEscrow = await create(live);
    const testEscrow = await create(test);

    await t.step("escrow: each key's prefix picks its chain", () => {
      assert.equal(liveEscrow.escrow.chain, "production");
      assert.equal(testEscrow.escrow.chain, "testnet");
    });

    const crossings = [
      { name: "test key on a live escrow", key: test, e: liveEscrow, own: testEscrow },
      { name: "live key on a test escrow", key: live, e: testEscrow, own: liveEscrow },
    ];
    for (const { name, key, e, own } of crossings) {
      await t.step(`escrow, ${name}: 404 everywhere, nothing sent, nothing moved`, async () => {
        const sent = await txCount();
        const before = await balances();
        const actions: [string, Record<string, unknown>][] = [
          ["release", { callerSCA: depositor.address }],
          ["confirm", { callerSCA: beneficiary.address }],
          ["dispute", { callerSCA: depositor.address, reason: "not mine to dispute" }],
          ["refund", {}],
        ];
        for (const [action, body] of actions) {
          const forms: Record<string, string>[] = [
            { authorization: `Bearer ${key}` },
            { "x-api-key": key },
          ];
          for (const auth of forms) {
            const r = await call("POST", `/api/escrow/${action}`, {
              headers: auth,
              body: { reference: e.reference, ...body },
            });
            assert.equal(r.status, 404, `${action}: ${r.text}`);
            assert.match(r.headers.get("content-type")!, /application\/json/);
            assert.deepEqual(r.json, { success: false, error: M.escrowNotFound });
          }
        }
        const one = await call("GET", `/api/escrow?reference=${e.reference}`, {
          headers: { "x-api-key": key },
        });
        assert.equal(one.status, 404, one.text);
        assert.match(one.headers.get("content-type")!, /application\/json/);
        assert.equal(one.json.error, M.escrowNotFound);
        const list = await call("GET", "/api/escrow", { headers: { "x-api-key": key } });
        assert.equal(list.status, 200);
        const refs = (list.json.escrows as { reference: string }[]).map((x) => x.reference);
        assert.deepEqual(refs, [own.reference], "only the key's own environment is listed");

        assert.equal(await txCount(), sent, "nothing was signed or broadcast");
        assert.deepEqual(await balances(), before, "no balance moved");
        const onChain = await chain.escrow.read(
          e.escrow.chain as ProfileName,
          e.reference,
        );
        assert.equal(onChain.status, "ACTIVE");
        assert.equal(onChain.confirmed, false);
      });
    }

    await t.step("dashboard: the session's mode picks the environment", async () => {
      const d = dashboardClient(svc);
      const b = await d.open(a, "/dashboard/escrow");
      const livePage = await d.get(b, "/dashboard/escrow");
      assert.equal(livePage.status, 200);
      assert.ok(livePage.text.includes(liveEscrow.reference));
      assert.ok(!livePage.text.includes(testEscrow.reference));
      // Acting on the other mode's escrow from the page: not found, nothing sent.
      const sent = await txCount();
      const act = await d.post(b, "/dashboard/escrow/act", {
        reference: testEscrow.reference,
        action: "release",
        callerSCA: depositor.address,
      });
      assert.equal(act.status, 404, act.text);
      assert.ok(act.text.includes(M.escrowNotFound));
      // The session switched to test mode (as the dashboard's switch records it).
      await sql`update merchant_sessions set mode = 'test' where merchant_id = ${a.id}`;
      const testPage = await d.get(b, "/dashboard/escrow");
      assert.ok(testPage.text.includes(testEscrow.reference));
      assert.ok(!testPage.text.includes(liveEscrow.reference));
      const back = await d.post(b, "/dashboard/escrow/act", {
        reference: liveEscrow.reference,
        action: "release",
        callerSCA: depositor.address,
      });
      assert.equal(back.status, 404, back.text);
      assert.equal(await txCount(), sent);
      await sql`update merchant_sessions set mode = 'live' where merchant_id = ${a.id}`;
    });

    await t.step("escrow: each key still acts on its own environment's escrow", async () => {
      for (
        const [key, e, p] of [[live, liveEscrow, "production"], [
          test,
          testEscrow,
          "testnet",
        ]] as const
      ) {
        const before = await chain.usdcBalance(p, beneficiary.address);
        const r = await call("POST", "/api/escrow/release", {
          headers: { authorization: `Bearer ${key}` },
          body: { reference: e.reference, callerSCA: depositor.address },
        });
        assert.equal(r.status, 200, r.text);
        assert.equal(await chain.usdcBalance(p, beneficiary.address), before + 5n * USDC);
      }
    });

    // Payroll: the merchant's managed payout wallet pays on both chains.
    const payer = a.walletAddress!.toLowerCase() as `0x${string}`;
    for (const profile of PROFILES) {
      await chain.mintUsdc({ profile, to: payer, amount: 50n * USDC });
    }
    const run = (key: string, body: unknown, headers: Record<string, string> = {}) =>
      call("POST", "/api/payroll/run", { headers: { "x-api-key": key, ...headers }, body });

    await t.step("payroll: GET by batchRef answers 404 across environments", async () => {
      const liveRun = await run(live, { recipients: [{ recipientSCA: fresh(), amount: "1" }] });
      const testRun = await run(test, { recipients: [{ recipientSCA: fresh(), amount: "1" }] });
      assert.equal(liveRun.status, 200, liveRun.text);
      assert.equal(testRun.status, 200, testRun.text);
      for (
        const [key, ref, own] of [
          [test, liveRun.json.batchRef, testRun.json.batchRef],
          [live, testRun.json.batchRef, liveRun.json.batchRef],
        ] as [string, string, string][]
      ) {
        const r = await call("GET", `/api/payroll/run?batchRef=${ref}`, {
          headers: { "x-api-key": key },
        });
        assert.equal(r.status, 404, r.text);
        assert.match(r.headers.get("content-type")!, /application\/json/);
        assert.equal(r.json.error, M.payrollNotFound);
        const mine = await call("GET", `/api/payroll/run?batchRef=${own}`, {
          headers: { "x-api-key": key },
        });
        assert.equal(mine.status, 200, mine.text);
      }
    });

    await t.step("payroll: one Idempotency-Key names one batch per environment", async () => {
      const to = fresh();
      const body = { recipients: [{ recipientSCA: to, amount: "2" }] };
      const headers = { "idempotency-key": "same-key-both-environments" };
      const first = await run(live, body, headers);
      assert.equal(first.status, 200, first.text);
      assert.equal(first.json.status, "COMPLETED");
      const other = await run(test, body, headers);
      assert.equal(other.status, 200, other.text);
      assert.equal(other.json.status, "COMPLETED");
      assert.notEqual(other.json.batchRef, first.json.batchRef, "not the live batch");
      for (const p of PROFILES) assert.equal(await chain.usdcBalance(p, to), 2n * USDC);
      const again = await run(test, body, headers);
      assert.equal(again.json.batchRef, other.json.batchRef, "the test key's retry finds its own");
      const rows = await sql`
        select chain_id from payroll_batches
        where batch_ref in (${first.json.batchRef as string}, ${other.json.batchRef as string})`;
      assert.equal(new Set(rows.map((r) => r.chainId)).size, 2);
    });

    await t.step("payroll: sign requests are listed and accepted per environment", async () => {
      const e = await createMerchant(svc);
      const eTest = await testKey(svc, e);
      await linkExternal(svc, e, privateKeyToAccount(generatePrivateKey()));
      const liveRun = await run(e.apiKey, { recipients: [{ recipientSCA: fresh(), amount: "1" }] });
      assert.equal(liveRun.status, 200, liveRun.text);
      assert.equal(liveRun.json.status, "AWAITING_SIGNATURES");
      const list = (key: string) =>
        call("GET", "/api/merchant/wallet/sign-requests", { headers: { "x-api-key": key } });
      const liveList = await list(e.apiKey);
      const requests = liveList.json.signRequests as { id: string; chainId: number }[];
      assert.equal(requests.length, 1);
      assert.equal(requests[0].chainId, chain.chainId("production"));
      const testList = await list(eTest);
      assert.equal(testList.status, 200);
      assert.deepEqual(testList.json.signRequests, [], "a test key does not see live requests");

      const sent = await txCount();
      const submit = await call("POST", `/api/merchant/wallet/sign-requests/${requests[0].id}`, {
        headers: { "x-api-key": eTest },
        body: { txHash: `0x${"ab".repeat(32)}` },
      });
      assert.equal(submit.status, 404, submit.text);
      assert.match(submit.headers.get("content-type")!, /application\/json/);
      assert.equal(submit.json.error, M.signRequestNotFound);
      assert.equal(await txCount(), sent);

      const testRun = await run(eTest, { recipients: [{ recipientSCA: fresh(), amount: "1" }] });
      assert.equal(testRun.status, 200, testRun.text);
      const testReqs = (await list(eTest)).json.signRequests as { id: string; chainId: number }[];
      assert.deepEqual(testReqs.map((r) => r.chainId), [chain.chainId("testnet")]);
      assert.deepEqual(
        ((await list(e.apiKey)).json.signRequests as { id: string }[]).map((r) => r.id),
        [requests[0].id],
        "the live key does not see test requests",
      );
      const back = await call("POST", `/api/merchant/wallet/sign-requests/${testReqs[0].id}`, {
        headers: { "x-api-key": e.apiKey },
        body: { txHash: `0x${"cd".repeat(32)}` },
      });
      assert.equal(back.status, 404, back.text);
      assert.equal(back.json.error, M.signRequestNotFound);
    });
  } finally {
    await svc.close();
  }
});
