/**
 * Crash safety of the actions that lock funds in a contract (issue 23, item 3): a job's fund
 * (approve, then fund into AgenticCommerce), a gateway deposit (into GatewayVault), an outside
 * payer's signed deposit relayed into it and its signed withdrawal relayed out, and a withdrawal
 * started on a vault with a delay, each sent through a second process of the deployment that
 * SIGKILLs itself before the broadcast, after it (anvil mines at once), or after the receipt was
 * recorded. The surviving process (the
 * chain's transaction recovery, then the jobs' catch-up once the dead process's claim lapsed)
 * ends every case in a complete record, the money moved once, or in nothing locked.
 */
import assert from "node:assert/strict";
import { startTestService, type TestService } from "../helpers/service.ts";
import { startCrashWorker } from "../helpers/processes.ts";
import { api, createMerchant } from "../helpers/accounts.ts";
import { catchUpPending, getJob, onChain } from "../../src/modules/commerce/commerce.service.ts";
import { waitFor } from "../helpers/poll.ts";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { signedDeposit, signedWithdrawal, useDelayedVault } from "../helpers/x402.ts";

const USDC = 1_000_000n;
const POINTS = ["record", "broadcast", "receipt"] as const;

/** Sends `body` to `path` through a worker that dies at `at` on an intent matching `intent`. */
async function throughDyingWorker(
  svc: TestService,
  opts: { intent: string; at: string; path: string; headers: Record<string, string> },
  body: unknown,
) {
  const started = await startCrashWorker(svc, "money-worker", {
    KILL_INTENT: opts.intent,
    KILL_AT: opts.at,
  });
  const worker = started.child;
  try {
    const answer = await fetch(`${started.baseUrl}${opts.path}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...opts.headers },
      body: JSON.stringify(body),
    }).then((r) => r.status, () => null);
    const status = await worker.status;
    assert.equal(status.signal, "SIGKILL", "the worker died by its own SIGKILL");
    assert.equal(answer, null, "no answer got out");
  } finally {
    worker.stdout.cancel().catch(() => {});
    try {
      worker.kill("SIGKILL");
    } catch { /* already gone */ }
    await worker.status;
  }
}

/**
 * The surviving process's transaction recovery, run after run until nothing is left open: the
 * first re-broadcasts a transaction left signed, a later one records its receipt. A node mines
 * a re-broadcast transaction a moment after it answers, so two runs back to back are not always
 * enough (seen once in CI: the second run found no receipt yet).
 */
async function recover(svc: TestService, profile: "production" | "testnet") {
  const chainId = svc.deps.chain.chainId(profile);
  await waitFor(async () => {
    await svc.deps.chain.recover(profile, { minAgeMs: 0 });
    const [open] = await svc.db.sql<{ n: number }[]>`
      select count(*)::int as n from chain_transactions
      where chain_id = ${chainId} and status in ('signed', 'broadcast')`;
    return open.n === 0;
  }, { timeoutMs: 20_000, intervalMs: 50, what: "recovery to leave no transaction open" });
}

/**
 * Sends `body` through a worker that dies at `at` on the first intent starting with `prefix`,
 * checks the intent was recorded before its broadcast, runs the survivor's recovery, and returns
 * that transaction, confirmed.
 */
async function killedThenRecovered(
  svc: TestService,
  profile: "production" | "testnet",
  opts: { prefix: string; at: string; path: string; headers: Record<string, string> },
  body: unknown,
) {
  await throughDyingWorker(svc, {
    intent: `^${opts.prefix}`,
    at: opts.at,
    path: opts.path,
    headers: opts.headers,
  }, body);
  const [tx] = await svc.db.sql<{ intentKey: string }[]>`
    select intent_key from chain_transactions where intent_key like ${`${opts.prefix}%`}
    order by created_at desc limit 1`;
  assert.ok(tx, `the intent ${opts.prefix}… was recorded before its broadcast`);
  await recover(svc, profile);
  const mined = (await svc.deps.chain.intent(profile, tx.intentKey))!;
  assert.equal(mined.status, "confirmed");
  return mined;
}

/** As after the claims' time to live: a dead owner's claims lapse (the database's clock). */
async function lapseClaims(svc: TestService) {
  await svc.db.sql`
    update resource_claims set expires_at = clock_timestamp() - interval '1 second'`;
}

Deno.test("job fund: killed before broadcast, after it, after the receipt → FUNDED once", async (t) => {
  // The survivor's sweep is the test's to run: no every-minute one beside it.
  const svc = await startTestService({ env: { RATE_LIMITS: "off" }, crons: false });
  const call = api(svc);
  const chain = svc.deps.chain;
  const profile = "production" as const;
  try {
    const a = await createMerchant(svc);
    const key = { "x-api-key": a.apiKey };
    const wallet = async () => {
      const r = await call("POST", "/api/wallets", { headers: key, body: {} });
      assert.equal(r.status, 201, r.text);
      return r.json.wallet as { id: string; address: `0x${string}` };
    };
    const client = await wallet();
    const provider = await wallet();
    const evaluator = await wallet();
    await chain.mintUsdc({ profile, to: client.address, amount: 100n * USDC });
    const escrow = chain.jobs.address(profile);
    const create = async () => {
      const r = await call("POST", "/api/jobs/create", {
        headers: key,
        body: {
          clientWalletId: client.id,
          provider: provider.address,
          evaluator: evaluator.address,
          budget: "2",
          expiresInSeconds: 3600,
          description: "crash",
        },
      });
      assert.equal(r.status, 201, r.text);
      return r.json.jobId as string;
    };
    /**
     * The surviving process's sweep of pending actions, run by the test once the dead owner's
     * claim lapsed: it settles the job's action (1), unless the service's own every-minute sweep
     * (commerce.jobs.ts) took it first at a minute's turn (0; seen once under load). Either way
     * the action ends settled.
     */
    const sweep = async (jobId: string) => {
      const settled = await catchUpPending(svc.deps);
      await waitFor(async () => (await getJob(svc.deps, profile, jobId)).pendingAction === null, {
        what: "the job's pending action settled by a sweep",
      });
      assert.ok(settled <= 1, `one action was pending, ${settled} settled`);
    };
    const fundThroughWorker = async (jobId: string, intentSuffix: string, at: string) => {
      await throughDyingWorker(svc, {
        intent: `^job:\\d+:0x[0-9a-f]+:${jobId}:fund:.*:${intentSuffix}$`,
        at,
        path: "/api/jobs/fund",
        headers: key,
      }, { jobId, clientWalletId: client.id });
      const left = await getJob(svc.deps, profile, jobId);
      assert.equal(left.status, "OPEN", "the dead process recorded no result");
      assert.equal(left.pendingAction, "fund", "the action was recorded before its transactions");
      return left.pendingIntent!;
    };

    for (const at of POINTS) {
      await t.step(`the fund transaction: killed at ${at} → FUNDED with its hashes`, async () => {
        const jobId = await create();
        const [clientBefore, escrowBefore] = await Promise.all([
          chain.usdcBalance(profile, client.address),
          chain.usdcBalance(profile, escrow),
        ]);
        const intent = await fundThroughWorker(jobId, "fund", at);

        // The surviving process: its transaction recovery (re-broadcasts a signed transaction,
        // records a receipt), then the catch-up once the dead owner's claim has lapsed.
        await recover(svc, profile);
        assert.equal(await catchUpPending(svc.deps), 0, "a live claim is left alone");
        await lapseClaims(svc);
        await sweep(jobId);

        const row = await getJob(svc.deps, profile, jobId);
        const [approve, fund] = await Promise.all([
          chain.intent(profile, `${intent}:approve`),
          chain.intent(profile, `${intent}:fund`),
        ]);
        assert.equal(fund?.status, "confirmed");
        assert.equal(row.status, "FUNDED");
        assert.equal(row.pendingAction, null);
        assert.equal(row.approveTxHash, approve!.txHash);
        assert.equal(row.fundTxHash, fund!.txHash);
        assert.equal((await onChain(svc.deps, row)).status, "FUNDED");
        assert.equal(await chain.usdcBalance(profile, client.address), clientBefore - 2n * USDC);
        assert.equal(await chain.usdcBalance(profile, escrow), escrowBefore + 2n * USDC);
        assert.equal(await catchUpPending(svc.deps), 0, "nothing left to settle");
        const again = await call("POST", "/api/jobs/fund", {
          headers: key,
          body: { jobId, clientWalletId: client.id },
        });
        assert.equal(again.status, 400, again.text);
        assert.equal(await chain.usdcBalance(profile, escrow), escrowBefore + 2n * USDC);
      });
    }

    await t.step(
      "complete killed once broadcast (mined, not recorded): its hash is read with its status",
      async () => {
        // Before: the job read COMPLETED with completeTx null until chain recovery's sweep (a
        // minute on) recorded the receipt, and the pending action waited for it too.
        const jobId = await create();
        const post = (path: string, body: unknown) => call("POST", path, { headers: key, body });
        const funded = await post("/api/jobs/fund", { jobId, clientWalletId: client.id });
        assert.equal(funded.status, 200, funded.text);
        const submitted = await post("/api/jobs/submit", {
          jobId,
          providerWalletId: provider.id,
          deliverableData: "ipfs://crash",
        });
        assert.equal(submitted.status, 200, submitted.text);
        await throughDyingWorker(svc, {
          intent: `^job:\\d+:0x[0-9a-f]+:${jobId}:complete:`,
          // Broadcast to a node that mines at once: mined, its receipt not recorded.
          at: "broadcast",
          path: "/api/jobs/complete",
          headers: key,
        }, { jobId, evaluatorWalletId: evaluator.id });
        const [sent] = await svc.db.sql<{ intentKey: string; status: string }[]>`
        select intent_key, status from chain_transactions
        where intent_key like ${`%:${jobId}:complete:%`}`;
        assert.ok(
          ["signed", "broadcast"].includes(sent.status),
          `the dead process never recorded its receipt: ${sent.status}`,
        );
        // No recovery run: the read itself records the receipt the node has.
        const read = await call("GET", `/api/jobs/${jobId}`, { headers: key });
        assert.equal(read.status, 200, read.text);
        const mined = (await chain.intent(profile, sent.intentKey))!;
        assert.equal(mined.status, "confirmed");
        const job = read.json.job as { status: string; completeTx: string | null };
        assert.equal(job.status, "COMPLETED");
        assert.equal(job.completeTx, mined.txHash);
        await lapseClaims(svc);
        assert.equal(await catchUpPending(svc.deps), 1, "settled at once, not after recovery");
        const row = await getJob(svc.deps, profile, jobId);
        assert.equal(row.pendingAction, null);
        assert.equal(row.completeTxHash, mined.txHash);
        assert.equal(row.reason, "deliverable-approved");
      },
    );

    await t.step("killed before the approval is broadcast: nothing locked", async () => {
      const jobId = await create();
      const clientBefore = await chain.usdcBalance(profile, client.address);
      const escrowBefore = await chain.usdcBalance(profile, escrow);
      const intent = await fundThroughWorker(jobId, "approve", "record");
      await recover(svc, profile);
      await lapseClaims(svc);
      await sweep(jobId);
      const row = await getJob(svc.deps, profile, jobId);
      assert.equal(row.status, "OPEN");
      assert.equal(row.pendingAction, null);
      assert.equal(row.fundTxHash, null);
      assert.equal(await chain.intent(profile, `${intent}:fund`), null, "no fund was ever signed");
      assert.equal((await onChain(svc.deps, row)).status, "OPEN");
      assert.equal(await chain.usdcBalance(profile, client.address), clientBefore);
      assert.equal(await chain.usdcBalance(profile, escrow), escrowBefore);
      // The job is still fundable, once.
      const r = await call("POST", "/api/jobs/fund", {
        headers: key,
        body: { jobId, clientWalletId: client.id },
      });
      assert.equal(r.status, 200, r.text);
      assert.equal(await chain.usdcBalance(profile, escrow), escrowBefore + 2n * USDC);
    });
  } finally {
    await svc.close();
  }
});

Deno.test("gateway deposit: killed before broadcast, after it, after the receipt → deposited once", async (t) => {
  const svc = await startTestService({ env: { RATE_LIMITS: "off" } });
  const call = api(svc);
  const chain = svc.deps.chain;
  const profile = "testnet" as const;
  try {
    const a = await createMerchant(svc);
    const r = await call("POST", "/api/wallets", { headers: { "x-api-key": a.apiKey }, body: {} });
    const w = r.json.wallet as { id: string; address: `0x${string}` };
    await chain.mintUsdc({ profile, to: w.address, amount: 20n * USDC });
    const vault = chain.gateway.vaultAddress(profile);

    for (const [i, at] of POINTS.entries()) {
      await t.step(`killed at ${at}: the deposit completes once; a retry finds it`, async () => {
        const idem = `deposit-crash-${i}`;
        const headers = { "x-api-key": a.apiKey, "idempotency-key": idem };
        const body = { walletId: w.id, amount: "1" };
        const [gatewayBefore, walletBefore, vaultBefore] = await Promise.all([
          chain.gateway.balance(profile, w.address),
          chain.usdcBalance(profile, w.address),
          chain.usdcBalance(profile, vault),
        ]);
        await throughDyingWorker(svc, {
          intent: `^x402-deposit:${w.id}:`,
          at,
          path: "/api/x402/gateway/deposit",
          headers,
        }, body);
        const [tx] = await svc.db.sql<{ intentKey: string; status: string; txHash: string }[]>`
          select intent_key, status, tx_hash from chain_transactions
          where intent_key like ${`x402-deposit:${w.id}:%`} order by created_at desc limit 1`;
        assert.ok(tx, "the deposit's intent was recorded before its broadcast");

        await recover(svc, profile);
        const mined = (await chain.intent(profile, tx.intentKey))!;
        assert.equal(mined.status, "confirmed");
        const gateway = await chain.gateway.balance(profile, w.address);
        assert.equal(gateway.available, gatewayBefore.available + USDC, "in the gateway balance");
        assert.equal(await chain.usdcBalance(profile, w.address), walletBefore - USDC);
        assert.equal(await chain.usdcBalance(profile, vault), vaultBefore + USDC);

        // The retry with the same Idempotency-Key (its in-progress record released, as after its
        // owner died) answers with the first transaction and deposits nothing more.
        await svc.db.sql`delete from idempotency_keys`;
        await lapseClaims(svc);
        const retry = await call("POST", "/api/x402/gateway/deposit", { headers, body });
        assert.equal(retry.status, 200, retry.text);
        assert.equal(retry.json.txHash, mined.txHash);
        const after = await chain.gateway.balance(profile, w.address);
        assert.equal(after.available, gatewayBefore.available + USDC, "deposited once");
        assert.equal(await chain.usdcBalance(profile, vault), vaultBefore + USDC);
      });
    }
  } finally {
    await svc.close();
  }
});

Deno.test("relayed payer deposit: killed before broadcast, after it, after the receipt → once", async (t) => {
  const svc = await startTestService({ env: { RATE_LIMITS: "off" } });
  const call = api(svc);
  const chain = svc.deps.chain;
  const profile = "testnet" as const;
  try {
    // An outside payer: USDC, no gas, its key never seen by the service.
    const payer = privateKeyToAccount(generatePrivateKey());
    const address = payer.address.toLowerCase() as `0x${string}`;
    await chain.mintUsdc({ profile, to: address, amount: 20n * USDC });
    const vault = chain.gateway.vaultAddress(profile);

    for (const at of POINTS) {
      await t.step(
        `killed at ${at}: deposited once; the same signed deposit again finds it`,
        async () => {
          const body = await signedDeposit(svc, payer, { value: USDC });
          const nonce = body.authorization.nonce;
          const [gatewayBefore, vaultBefore] = await Promise.all([
            chain.gateway.balance(profile, address),
            chain.usdcBalance(profile, vault),
          ]);
          const mined = await killedThenRecovered(svc, profile, {
            prefix: `x402-payer-deposit:${address}:${nonce}:`,
            at,
            path: "/api/x402/payer/deposit",
            headers: {},
          }, body);
          const gateway = await chain.gateway.balance(profile, address);
          assert.equal(gateway.available, gatewayBefore.available + USDC, "in the gateway balance");
          assert.equal(await chain.usdcBalance(profile, vault), vaultBefore + USDC);

          await lapseClaims(svc);
          const retry = await call("POST", "/api/x402/payer/deposit", { body });
          assert.equal(retry.status, 200, retry.text);
          assert.equal(retry.json.txHash, mined.txHash);
          const after = await chain.gateway.balance(profile, address);
          assert.equal(after.available, gatewayBefore.available + USDC, "deposited once");
          assert.equal(await chain.usdcBalance(profile, vault), vaultBefore + USDC);
        },
      );
    }
    assert.equal(await chain.runtime(profile).client.getBalance({ address }), 0n, "never any gas");
  } finally {
    await svc.close();
  }
});

Deno.test("withdrawal start on a delayed vault: killed before broadcast, after it, after the receipt → once", async (t) => {
  const svc = await startTestService({ env: { RATE_LIMITS: "off" } });
  const call = api(svc);
  const chain = svc.deps.chain;
  const profile = "testnet" as const;
  try {
    const a = await createMerchant(svc);
    const seller = a.walletAddress!.toLowerCase() as `0x${string}`;
    // The dying worker reads the deployment's vault from the database: both processes use the
    // delayed one.
    const vault = await useDelayedVault(svc, 3600n, [seller], 5n * USDC);
    await svc.db.sql`
      update chain_contracts set address = ${vault.toLowerCase()}
      where chain_id = ${chain.chainId(profile)} and name = 'GatewayVault'`;
    const walletId = ((await call("GET", "/api/merchant/wallet", { cookie: a.cookie })).json
      .wallet as { managedWalletId: string }).managedWalletId;

    for (const [i, at] of POINTS.entries()) {
      await t.step(`killed at ${at}: started once; the retry with its key finds it`, async () => {
        const headers = {
          authorization: `Bearer ${a.apiKey}`,
          "idempotency-key": `start-crash-${i}`,
        };
        const body = { amount: "1" };
        const before = await chain.gateway.balance(profile, seller);
        const mined = await killedThenRecovered(svc, profile, {
          prefix: `x402-withdraw-start:${walletId}:`,
          at,
          path: "/api/x402/seller/balance/withdraw/start",
          headers,
        }, body);
        const started = await chain.gateway.balance(profile, seller);
        assert.equal(started.withdrawing, before.withdrawing + USDC, "started once");

        await svc.db.sql`delete from idempotency_keys`;
        await lapseClaims(svc);
        const retry = await call("POST", "/api/x402/seller/balance/withdraw/start", {
          headers,
          body,
        });
        assert.equal(retry.status, 200, retry.text);
        assert.equal(retry.json.txHash, mined.txHash);
        const after = await chain.gateway.balance(profile, seller);
        assert.equal(after.withdrawing, before.withdrawing + USDC, "still started once");
        assert.equal(after.available, before.available - USDC);
      });
    }
  } finally {
    await svc.close();
  }
});

Deno.test("an outside payer's signed withdrawal: killed before broadcast, after it, after the receipt → paid once", async (t) => {
  const svc = await startTestService({ env: { RATE_LIMITS: "off" } });
  const call = api(svc);
  const chain = svc.deps.chain;
  const profile = "testnet" as const;
  try {
    const payer = privateKeyToAccount(generatePrivateKey());
    const address = payer.address.toLowerCase() as `0x${string}`;
    await chain.mintUsdc({ profile, to: address, amount: 5n * USDC });
    const deposited = await call("POST", "/api/x402/payer/deposit", {
      body: await signedDeposit(svc, payer, { value: 5n * USDC }),
    });
    assert.equal(deposited.status, 200, deposited.text);

    for (const at of POINTS) {
      await t.step(
        `killed at ${at}: paid once; the same signed withdrawal again finds it`,
        async () => {
          const to = privateKeyToAccount(generatePrivateKey()).address
            .toLowerCase() as `0x${string}`;
          const body = await signedWithdrawal(svc, payer, { to, value: USDC });
          const before = await chain.gateway.balance(profile, address);
          const mined = await killedThenRecovered(svc, profile, {
            prefix: `x402-payer-relay-withdraw:${address}:${body.authorization.nonce}:`,
            at,
            path: "/api/x402/payer/withdraw",
            headers: {},
          }, body);
          assert.equal(await chain.usdcBalance(profile, to), USDC);

          await lapseClaims(svc);
          const retry = await call("POST", "/api/x402/payer/withdraw", { body });
          assert.equal(retry.status, 200, retry.text);
          assert.equal(retry.json.txHash, mined.txHash);
          assert.equal(await chain.usdcBalance(profile, to), USDC, "paid once");
          const after = await chain.gateway.balance(profile, address);
          assert.equal(after.available, before.available - USDC);
        },
      );
    }
    await t.step(
      "killed once mined: the withdrawal is not counted twice before recovery",
      async () => {
        // The payer has 2 left. A withdrawal of 1 mined by a process killed before it recorded the
        // receipt was counted as still in flight against a balance it had already taken: the
        // payer's maxAmount read 0 (and a withdrawal of the last 1 was refused) for a minute.
        const to = privateKeyToAccount(generatePrivateKey()).address.toLowerCase() as `0x${string}`;
        const body = await signedWithdrawal(svc, payer, { to, value: USDC });
        await throughDyingWorker(svc, {
          intent: `^x402-payer-relay-withdraw:${address}:${body.authorization.nonce}:`,
          at: "broadcast",
          path: "/api/x402/payer/withdraw",
          headers: {},
        }, body);
        assert.equal(await chain.usdcBalance(profile, to), USDC, "mined");
        const onChain = await chain.gateway.balance(profile, address);
        assert.equal(onChain.withdrawable, USDC);
        // No recovery run.
        const view = await call("GET", `/api/x402/payer/balance?address=${address}`);
        assert.equal(view.status, 200, view.text);
        assert.equal((view.json.withdrawal as { maxAmount: string }).maxAmount, "1.000000");
        await lapseClaims(svc);
        const last = await signedWithdrawal(svc, payer, { to, value: USDC });
        const paid = await call("POST", "/api/x402/payer/withdraw", { body: last });
        assert.equal(paid.status, 200, paid.text);
        assert.equal(await chain.usdcBalance(profile, to), 2n * USDC);
      },
    );
    assert.equal(await chain.runtime(profile).client.getBalance({ address }), 0n, "never any gas");
  } finally {
    await svc.close();
  }
});
