/**
 * No request can wedge the service (issue 23, items 2 and 5): 50 identical requests at once at
 * each money-moving endpoint of jobs, x402 and wallets, on a service with a pool of 5
 * connections. Every answer arrives within the bound, `/readyz` and another merchant's read are
 * served throughout (tests/helpers/stampede.ts), exactly one request moves money (checked on
 * chain), the rest are clean 400s decided before anything was signed (copies of one signed
 * deposit relayed for an outside payer: one transaction, every copy answers it), and no
 * transaction reverts.
 */
import assert from "node:assert/strict";
import { startTestService } from "../helpers/service.ts";
import { api, createMerchant } from "../helpers/accounts.ts";
import { stampede, type StampedeResult, succeeded } from "../helpers/stampede.ts";
import { M } from "../../src/http/messages.ts";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { signedDeposit } from "../helpers/x402.ts";

const USDC = 1_000_000n;
const address = () =>
  `0x${
    Array.from(crypto.getRandomValues(new Uint8Array(20)), (b) => b.toString(16).padStart(2, "0"))
      .join("")
  }` as `0x${string}`;

/** One 2xx, every other answer a 400 with `error` (and the slowest answer, for the report). */
function oneMovedMoney(r: StampedeResult, error: string) {
  const slowest = Math.max(...r.answers.map((a) => a.ms));
  console.log(
    `  slowest of ${r.answers.length}: ${slowest} ms; /readyz answered ${r.readyChecks}×`,
  );
  assert.equal(succeeded(r).length, 1, `exactly one succeeded: ${JSON.stringify(r.byStatus)}`);
  assert.deepEqual(r.byStatus, { 200: 1, 400: r.answers.length - 1 });
  for (const a of r.answers.filter((a) => a.status === 400)) assert.equal(a.json.error, error);
}

Deno.test("50 identical requests at once, pool of 5: one moves money, the rest 400", async (t) => {
  const svc = await startTestService({ env: { RATE_LIMITS: "off", DATABASE_POOL_MAX: "5" } });
  const call = api(svc);
  const chain = svc.deps.chain;
  try {
    const [a, b] = await Promise.all([createMerchant(svc), createMerchant(svc)]);
    const key = { "x-api-key": a.apiKey };
    const bystander = { method: "GET", path: "/api/wallets", headers: { "x-api-key": b.apiKey } };
    const wallet = async () => {
      const r = await call("POST", "/api/wallets", { headers: key, body: {} });
      assert.equal(r.status, 201, r.text);
      return r.json.wallet as { id: string; address: `0x${string}` };
    };
    const [client, provider, evaluator, payer] = [
      await wallet(),
      await wallet(),
      await wallet(),
      await wallet(),
    ];
    const payout = a.walletAddress!.toLowerCase() as `0x${string}`;
    const payoutId = ((await call("GET", "/api/merchant/wallet", { cookie: a.cookie })).json
      .wallet as { managedWalletId: string }).managedWalletId;
    await Promise.all([
      chain.mintUsdc({ profile: "production", to: client.address, amount: 30n * USDC }),
      chain.mintUsdc({ profile: "production", to: payout, amount: 10n * USDC }),
      chain.mintUsdc({ profile: "testnet", to: payer.address, amount: 5n * USDC }),
      chain.mintUsdc({ profile: "testnet", to: payout, amount: 5n * USDC }),
    ]);
    const post = async (path: string, body: unknown, headers: Record<string, string> = key) => {
      const r = await call("POST", path, { headers, body });
      assert.equal(r.status >= 200 && r.status < 300, true, `${path}: ${r.text}`);
      return r.json;
    };
    const job = async (steps: ("fund" | "submit")[]) => {
      const created = await post("/api/jobs/create", {
        clientWalletId: client.id,
        provider: provider.address,
        evaluator: evaluator.address,
        budget: "5",
        expiresInSeconds: 3600,
        description: "stampede",
      });
      const jobId = created.jobId as string;
      if (steps.includes("fund")) {
        await post("/api/jobs/fund", { jobId, clientWalletId: client.id });
      }
      if (steps.includes("submit")) {
        await post("/api/jobs/submit", {
          jobId,
          providerWalletId: provider.id,
          deliverableData: "ipfs://bafy-stampede",
        });
      }
      return jobId;
    };
    const escrow = chain.jobs.address("production");
    const sent = async (like: string) =>
      (await svc.db.sql`select 1 from chain_transactions where intent_key like ${like}`).length;

    await t.step("jobs/fund ×50 on one job: funded once", async () => {
      const jobId = await job([]);
      const [clientBefore, escrowBefore] = await Promise.all([
        chain.usdcBalance("production", client.address),
        chain.usdcBalance("production", escrow),
      ]);
      const r = await stampede(svc, {
        method: "POST",
        path: "/api/jobs/fund",
        headers: key,
        body: { jobId, clientWalletId: client.id },
      }, { bystander });
      oneMovedMoney(r, M.jobWrongStatus);
      assert.equal(await chain.usdcBalance("production", escrow), escrowBefore + 5n * USDC);
      assert.equal(
        await chain.usdcBalance("production", client.address),
        clientBefore - 5n * USDC,
      );
      assert.equal(await sent(`job:%:${jobId}:fund:%:fund`), 1, "one fund transaction");
    });

    await t.step("jobs/submit ×50: submitted once", async () => {
      const jobId = await job(["fund"]);
      const r = await stampede(svc, {
        method: "POST",
        path: "/api/jobs/submit",
        headers: key,
        body: { jobId, providerWalletId: provider.id, deliverableData: "ipfs://bafy-one" },
      }, { bystander });
      oneMovedMoney(r, M.jobWrongStatus);
      assert.equal(await sent(`job:%:${jobId}:submit:%`), 1, "one submit transaction");
      const got = await call("GET", `/api/jobs/${jobId}`, { headers: key });
      assert.equal((got.json.job as { status: string }).status, "SUBMITTED");
    });

    await t.step("jobs/complete ×50: the provider is paid once", async () => {
      const jobId = await job(["fund", "submit"]);
      const before = await chain.usdcBalance("production", provider.address);
      const r = await stampede(svc, {
        method: "POST",
        path: "/api/jobs/complete",
        headers: key,
        body: { jobId, evaluatorWalletId: evaluator.id },
      }, { bystander });
      oneMovedMoney(r, M.jobWrongStatus);
      assert.equal(await chain.usdcBalance("production", provider.address), before + 5n * USDC);
      assert.equal(await sent(`job:%:${jobId}:complete:%`), 1, "one complete transaction");
    });

    await t.step("x402 gateway withdraw ×50 from one wallet: paid once, the rest 400", async () => {
      await post("/api/x402/gateway/deposit", { walletId: payer.id, amount: "5" });
      const to = address();
      const r = await stampede(svc, {
        method: "POST",
        path: "/api/x402/gateway/withdraw",
        headers: key,
        body: { walletId: payer.id, amount: "3", destinationAddress: to },
      }, { bystander });
      oneMovedMoney(r, M.x402WithdrawExceeds);
      for (const x of r.answers.filter((x) => x.status === 400)) {
        assert.equal(x.json.withdrawable, "2.000000");
      }
      assert.equal(await chain.usdcBalance("testnet", to), 3n * USDC);
      assert.equal((await chain.gateway.balance("testnet", payer.address)).available, 2n * USDC);
    });

    await t.step(
      "x402 payer deposit ×50 of one signed deposit: sent once, all answer it",
      async () => {
        // An outside payer with USDC and no gas: the relayer sends its deposit once.
        const outsider = privateKeyToAccount(generatePrivateKey());
        const from = outsider.address.toLowerCase() as `0x${string}`;
        await chain.mintUsdc({ profile: "testnet", to: from, amount: 3n * USDC });
        const body = await signedDeposit(svc, outsider, { value: 2n * USDC });
        const r = await stampede(svc, { method: "POST", path: "/api/x402/payer/deposit", body }, {
          bystander,
        });
        assert.deepEqual(r.byStatus, { 200: r.answers.length }, "every copy answers the deposit");
        assert.equal(new Set(r.answers.map((x) => x.json.txHash)).size, 1, "one transaction");
        assert.equal(await sent(`x402-payer-deposit:${from}:%`), 1, "one deposit signed");
        assert.equal((await chain.gateway.balance("testnet", from)).available, 2n * USDC);
        assert.equal(await chain.usdcBalance("testnet", from), 1n * USDC);
      },
    );

    await t.step("x402 seller withdraw ×50: paid once, the rest 400", async () => {
      await post("/api/x402/gateway/deposit", { walletId: payoutId, amount: "5" });
      const to = address();
      const r = await stampede(svc, {
        method: "POST",
        path: "/api/x402/seller/balance/withdraw",
        headers: { authorization: `Bearer ${a.apiKey}` },
        body: { amount: "3", destinationAddress: to },
      }, { bystander });
      oneMovedMoney(r, M.x402WithdrawExceeds);
      assert.equal(await chain.usdcBalance("testnet", to), 3n * USDC);
      assert.equal((await chain.gateway.balance("testnet", payout)).available, 2n * USDC);
    });

    await t.step(
      "merchant withdraw ×50 from one wallet: sent once, the rest 400 with balance",
      async () => {
        const to = address();
        const r = await stampede(svc, {
          method: "POST",
          path: "/api/merchant/withdraw",
          headers: key,
          body: { amount: "6", destinationAddress: to },
        }, { bystander });
        oneMovedMoney(r, M.withdrawInsufficient);
        for (const x of r.answers.filter((x) => x.status === 400)) {
          assert.equal(x.json.balance, "4.000000");
        }
        assert.equal(await chain.usdcBalance("production", to), 6n * USDC);
        assert.equal(await chain.usdcBalance("production", payout), 4n * USDC);
        assert.equal(await sent(`withdraw:${payoutId}:%`), 1, "one transfer signed");
      },
    );

    await t.step("nothing reverted: every refusal came before broadcast", async () => {
      const [{ n }] = await svc.db.sql<{ n: number }[]>`
        select count(*)::int as n from chain_transactions where status in ('reverted', 'failed')`;
      assert.equal(n, 0);
      // The process's own liveness claim (src/db/liveness.ts) lives as long as it does.
      const [{ open }] = await svc.db.sql<{ open: number }[]>`
        select count(*)::int as open from resource_claims where resource not like 'process:%'`;
      assert.equal(open, 0, "every claim was given back");
    });
  } finally {
    await svc.close();
  }
});
