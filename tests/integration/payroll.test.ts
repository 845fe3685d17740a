/**
 * Payroll through the API on a real anvil: malformed input (400 naming the index, nothing
 * recorded), a mixed batch (PARTIAL_FAILURE with each recipient's result, balances on chain),
 * an all-bad batch (FAILED), `payroll.completed` once with the spec's fields, GET by batchRef,
 * Idempotency-Key, and an external payer wallet's signature requests (a forged or reused
 * txHash refused, a real transfer accepted, then the batch completes).
 */
import assert from "node:assert/strict";
import {
  createWalletClient,
  defineChain,
  encodeFunctionData,
  getAddress,
  http,
  type PrivateKeyAccount,
} from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { startTestService, type TestService } from "../helpers/service.ts";
import { api, cookieFrom, createMerchant, type TestMerchant } from "../helpers/accounts.ts";
import { startReceiver } from "../helpers/receiver.ts";
import { dashboardClient } from "../helpers/dashboard-client.ts";
import { waitFor } from "../helpers/poll.ts";
import { rpc } from "../helpers/chain.ts";
import { M } from "../../src/http/messages.ts";
import { BatchPayout, TestUSDC } from "../../src/chain/contracts/artifacts/index.ts";
import { chunkId } from "../../src/chain/payroll.ts";
import { formatUsdc, usdcToNumber } from "../../src/money.ts";

const USDC = 1_000_000n;
const P = "production";
const ZERO = "0x0000000000000000000000000000000000000000";

type Result = Record<string, unknown> & { status: string; recipientSCA: string };

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

Deno.test("payroll API", async (t) => {
  const svc = await startTestService({ env: { RATE_LIMITS: "off" } });
  const receiver = startReceiver();
  const call = api(svc);
  const chain = svc.deps.chain;
  const sql = svc.db.sql;
  const balance = (a: string) => chain.usdcBalance(P, a as `0x${string}`);
  try {
    const a = await createMerchant(svc);
    const other = await createMerchant(svc);
    const h = { "x-api-key": a.apiKey };
    const payer = a.walletAddress!.toLowerCase() as `0x${string}`;
    await chain.mintUsdc({ profile: P, to: payer, amount: 100n * USDC });
    const funded = await balance(payer);
    const run = (body: unknown, headers: Record<string, string> = h) =>
      call("POST", "/api/payroll/run", { headers, body });
    const batchCount = async () => (await sql`select count(*)::int as n from payroll_batches`)[0].n;

    await t.step("malformed input: 400 naming the index, nothing recorded", async () => {
      const none = await run({ recipients: [{ recipientSCA: fresh(), amount: "1" }] }, {});
      assert.equal(none.status, 401);
      assert.equal(none.json.error, "Authentication required.");
      for (const body of [{}, { recipients: [] }, { recipients: "x" }]) {
        const r = await run(body);
        assert.equal(r.status, 400, r.text);
        assert.equal(r.json.error, M.payrollRecipientsRequired);
        const example = r.json.example as { recipients: unknown[] };
        assert.ok(Array.isArray(example.recipients) && example.recipients.length > 0);
      }
      const good = { recipientSCA: fresh(), amount: "1.5" };
      const cases: [unknown, number, string][] = [
        [{ recipientSCA: "0x1234", amount: "1" }, 2, "recipientSCA"],
        [{ amount: "1" }, 2, "recipientSCA"],
        [{ recipientSCA: fresh(), amount: "1.1234567" }, 2, "amount"],
        [{ recipientSCA: fresh(), amount: "-1" }, 2, "amount"],
        [{ recipientSCA: fresh(), amount: 1e21 }, 2, "amount"],
        [{ recipientSCA: fresh(), amount: "1e3" }, 2, "amount"],
        [{ recipientSCA: fresh(), amount: " 1" }, 2, "amount"],
        [{ recipientSCA: fresh() }, 2, "amount"],
        [{ recipientSCA: fresh(), amount: true }, 2, "amount"],
        [{ recipientSCA: fresh(), amount: "1", label: 7 }, 2, "label"],
        ["nope", 2, "must be an object"],
      ];
      for (const [bad, index, what] of cases) {
        const r = await run({ recipients: [good, good, bad, good] });
        assert.equal(r.status, 400, JSON.stringify(bad));
        assert.equal(r.json.index, index);
        assert.ok((r.json.error as string).startsWith(`recipients[${index}]`), r.text);
        assert.ok((r.json.error as string).includes(what), r.text);
      }
      const tooMany = await run({
        recipients: Array.from({ length: 5001 }, () => good),
      });
      assert.equal(tooMany.status, 400);
      assert.equal(tooMany.json.error, M.payrollTooMany);
      // Each amount at its most, 1,100 of them: a sum past what the batch's total can hold.
      const huge = await run({
        recipients: Array.from({ length: 1100 }, () => ({ ...good, amount: "8589934591.999999" })),
      });
      assert.equal(huge.status, 400, huge.text);
      assert.equal(huge.json.error, M.payrollTotalTooLarge);
      // A recipient that is our escrow vault: paid there, the USDC would be stranded.
      const vault = chain.runtime(P).contracts.EscrowVault!;
      const stranded = await run({
        recipients: [good, { recipientSCA: vault, amount: "1" }],
      });
      assert.equal(stranded.status, 400, stranded.text);
      assert.equal(stranded.json.error, M.payrollRecipientContract);
      assert.match(stranded.json.hint as string, /^recipients\[1\]\.recipientSCA is 0x/);
      const hook = await run({ recipients: [good], webhookUrl: "ftp://x" });
      assert.equal(hook.status, 400);
      assert.equal(hook.json.error, M.webhookUrlInvalid);
      assert.equal(await batchCount(), 0);
      assert.equal(await balance(payer), funded);
    });

    let mixedRef = "";
    let mixedTotal = 0;
    const r1 = fresh(), r2 = fresh(), r3 = fresh(), r4 = fresh();
    await t.step("a mixed batch ends PARTIAL_FAILURE with each recipient's result", async () => {
      const start = await balance(payer);
      const all = formatUsdc(start, { decimals: "fixed" });
      const r = await run({
        recipients: [
          { recipientSCA: r1, amount: "1.5", label: "Alice" },
          { recipientSCA: ZERO, amount: "2" }, // refused by the token
          { recipientSCA: r2, amount: 0 }, // zero: FAILED, never sent
          { recipientSCA: r3, amount: all }, // more than the payer has left by then
          { recipientSCA: r4, amount: 3.25 },
        ],
        description: "March",
        webhookUrl: `${receiver.url}/payroll`,
      });
      assert.equal(r.status, 200, r.text);
      assert.match(r.json.batchRef as string, /^payroll_[a-z0-9]+_[a-z0-9]+$/);
      mixedRef = r.json.batchRef as string;
      assert.equal(r.json.status, "PARTIAL_FAILURE");
      assert.equal(r.json.totalAmount, usdcToNumber(start + 6_750_000n));
      assert.equal(r.json.recipientCount, 5);
      assert.equal(r.json.successCount, 2);
      assert.equal(r.json.failedCount, 3);
      assert.equal(r.json.pendingSignatureCount, 0);
      const results = r.json.results as Result[];
      assert.deepEqual(results.map((x) => [x.recipientSCA, x.status, x.amount, x.label]), [
        [getAddress(r1), "SUCCESS", "1.500000", "Alice"],
        [ZERO, "FAILED", "2.000000", null],
        [getAddress(r2), "FAILED", "0.000000", null],
        [getAddress(r3), "FAILED", all, null],
        [getAddress(r4), "SUCCESS", "3.250000", null],
      ]);
      assert.match(results[0].txHash as string, /^0x[0-9a-f]{64}$/);
      assert.equal(results[0].explorerUrl, chain.explorerTxUrl(P, results[0].txHash as string));
      assert.equal(results[4].txHash, results[0].txHash, "one chunk, one transaction");
      const memos = await sql`
        select r.memo from payroll_recipients r join payroll_batches b on b.id = r.batch_id
        where b.batch_ref = ${mixedRef} order by r.idx`;
      assert.deepEqual(memos.map((x) => x.memo), ["Alice", "March", "March", "March", "March"]);
      assert.equal(results[2].error, "Amount must be greater than 0.");
      assert.ok(typeof results[1].error === "string" && results[1].error.length > 0);
      assert.equal(results[1].txHash, undefined);
      assert.equal(await balance(r1), 1_500_000n);
      assert.equal(await balance(r4), 3_250_000n);
      assert.equal(await balance(r3), 0n);
      assert.equal(await balance(payer), start - 4_750_000n);
      mixedTotal = usdcToNumber(start + 6_750_000n);
    });

    await t.step("payroll.completed is sent once with the spec's fields", async () => {
      const got = await waitFor(
        () => receiver.received.find((x) => x.body.includes(mixedRef)),
        { what: "the payroll webhook", timeoutMs: 15_000 },
      );
      const body = JSON.parse(got.body);
      assert.deepEqual(Object.keys(body), [
        "event",
        "batchRef",
        "status",
        "totalAmount",
        "successCount",
        "failedCount",
        "results",
      ]);
      assert.equal(body.event, "payroll.completed");
      assert.equal(body.status, "PARTIAL_FAILURE");
      assert.equal(body.totalAmount, mixedTotal);
      assert.deepEqual([body.successCount, body.failedCount], [2, 3]);
      assert.equal(body.results.length, 5);
      const rows = await sql`
        select count(*)::int as n from webhook_deliveries where reference = ${mixedRef}`;
      assert.equal(rows[0].n, 1);
    });

    await t.step(
      "GET by batchRef: the resource; 400 missing, 404 unknown or another's",
      async () => {
        const r = await call("GET", `/api/payroll/run?batchRef=${mixedRef}`, { headers: h });
        assert.equal(r.status, 200, r.text);
        const b = r.json.batch as Record<string, unknown>;
        assert.equal(b.batchRef, mixedRef);
        assert.equal(b.payerSCA, getAddress(payer));
        assert.equal(b.payerWalletId, "managed");
        assert.equal(b.currency, "USDC");
        assert.equal(b.status, "PARTIAL_FAILURE");
        assert.equal(b.webhookUrl, `${receiver.url}/payroll`);
        assert.ok(b.completedAt && b.createdAt);
        assert.equal((b.results as unknown[]).length, 5);
        const missing = await call("GET", "/api/payroll/run", { headers: h });
        assert.equal(missing.status, 400);
        assert.equal(missing.json.error, M.payrollBatchRefRequired);
        const unknown = await call("GET", "/api/payroll/run?batchRef=payroll_x_y", { headers: h });
        assert.equal(unknown.status, 404);
        const foreign = await call("GET", `/api/payroll/run?batchRef=${mixedRef}`, {
          headers: { "x-api-key": other.apiKey },
        });
        assert.equal(foreign.status, 404);
        assert.equal(foreign.json.error, M.payrollNotFound);
      },
    );

    await t.step("dashboard routes: CSRF, ownership, a preview that is not CSV", async () => {
      const d = dashboardClient(svc);
      const ba = await d.open(a, "/dashboard/payroll");
      const page = await d.get(ba, "/dashboard/payroll");
      assert.equal(page.status, 200);
      assert.ok(page.text.includes(mixedRef), "the history lists the batch");
      const csv = `${fresh()},1,x\n`;
      const refused = await d.post(ba, "/dashboard/payroll/run", { csv, runKey: "k1" }, {
        token: null,
      });
      assert.equal(refused.status, 403);
      const bad = await d.post(ba, "/dashboard/payroll/run", {
        csv: `"${fresh()},1\n`,
        runKey: "k2",
      });
      assert.equal(bad.status, 400);
      assert.match(bad.text, /The file is not valid CSV/);
      const bo = await d.open(other, "/dashboard/payroll");
      const foreign = await d.get(bo, `/dashboard/payroll/batches/${mixedRef}`, {
        "hx-request": "true",
      });
      assert.equal(foreign.status, 404);
      assert.equal(await batchCount(), 1, "nothing was started by the refused forms");
    });

    await t.step("all bad: FAILED, with its webhook", async () => {
      const r = await run({
        recipients: [{ recipientSCA: ZERO, amount: "1" }, { recipientSCA: fresh(), amount: "0" }],
        webhookUrl: `${receiver.url}/payroll`,
      });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.json.status, "FAILED");
      assert.deepEqual([r.json.successCount, r.json.failedCount], [0, 2]);
      const ref = r.json.batchRef as string;
      const got = await waitFor(() => receiver.received.find((x) => x.body.includes(ref)), {
        what: "the FAILED webhook",
        timeoutMs: 15_000,
      });
      assert.equal(JSON.parse(got.body).status, "FAILED");
    });

    await t.step(
      "Idempotency-Key: a retry answers the same batch and pays nothing twice",
      async () => {
        const to = fresh();
        const body = { recipients: [{ recipientSCA: to, amount: "2" }] };
        const headers = { ...h, "idempotency-key": "payroll-retry-1" };
        const first = await run(body, headers);
        assert.equal(first.status, 200, first.text);
        assert.equal(first.json.status, "COMPLETED");
        const again = await run(body, headers);
        assert.equal(again.status, 200);
        assert.equal(again.json.batchRef, first.json.batchRef);
        const other = await run({ recipients: [{ recipientSCA: to, amount: "3" }] }, headers);
        assert.equal(other.status, 400);
        assert.equal(await balance(to), 2n * USDC);
      },
    );

    await t.step("outlasting the wait: PROCESSING with the results so far, then done", async () => {
      // Blocks held back, and a short wait: the answer comes while the chunk is in the mempool.
      const cfg = svc.deps.config as { PAYROLL_WAIT_MS: number };
      const rpcUrl = chain.runtime(P).rpcUrl;
      const to = fresh();
      let ref = "";
      await rpc(rpcUrl, "evm_setAutomine", [false]);
      try {
        cfg.PAYROLL_WAIT_MS = 300;
        const r = await run({
          recipients: [{ recipientSCA: fresh(), amount: "0" }, { recipientSCA: to, amount: "1" }],
        });
        assert.equal(r.status, 200, r.text);
        assert.equal(r.json.status, "PROCESSING");
        assert.deepEqual((r.json.results as Result[]).map((x) => x.status), ["FAILED"]);
        assert.match(r.json.message as string, /^Processing: 1 of 2 recipients done\./);
        ref = r.json.batchRef as string;
      } finally {
        cfg.PAYROLL_WAIT_MS = 25_000;
        await rpc(rpcUrl, "evm_setAutomine", [true]);
        await rpc(rpcUrl, "evm_mine", []);
      }
      const done = await waitFor(async () => {
        const g = await call("GET", `/api/payroll/run?batchRef=${ref}`, { headers: h });
        const b = g.json.batch as { status: string; results: Result[] };
        return b.status === "PROCESSING" ? null : b;
      }, { what: "the batch to finish in the background", timeoutMs: 30_000 });
      assert.equal(done.status, "PARTIAL_FAILURE");
      assert.deepEqual(done.results.map((x) => x.status), ["FAILED", "SUCCESS"]);
      assert.equal(await balance(to), USDC);
    });

    await t.step("external wallet: sign requests; forged and reused hashes refused", async () => {
      const e = await createMerchant(svc);
      const wallet = privateKeyToAccount(generatePrivateKey());
      await linkExternal(svc, e, wallet);
      await chain.mintUsdc({ profile: P, to: wallet.address, amount: 10n * USDC });
      await chain.grantGas(P, wallet.address);
      const eh = { "x-api-key": e.apiKey };
      const to1 = fresh(), to2 = fresh();
      const r = await run({
        recipients: [
          { recipientSCA: to1, amount: "1", label: "Ann" },
          { recipientSCA: to2, amount: "2" },
        ],
        description: "April",
        webhookUrl: `${receiver.url}/payroll`,
      }, eh);
      assert.equal(r.status, 200, r.text);
      assert.equal(r.json.status, "AWAITING_SIGNATURES");
      assert.equal(r.json.pendingSignatureCount, 2);
      const results = r.json.results as Result[];
      assert.ok(results.every((x) => x.status === "PENDING_SIGNATURE" && x.requestId));
      const ref = r.json.batchRef as string;

      const list = await call("GET", "/api/merchant/wallet/sign-requests", { cookie: e.cookie });
      assert.equal(list.status, 200, list.text);
      const reqs = list.json.signRequests as Record<string, string | number>[];
      assert.deepEqual(reqs.map((x) => [x.recipientSCA, x.amountUnits, x.index, x.memo]), [
        [getAddress(to1), "1000000", 0, "Ann"],
        [getAddress(to2), "2000000", 1, "April"],
      ]);
      assert.equal(reqs[0].token, chain.contract(P, "TestUSDC"));
      const byKey = await call("GET", "/api/merchant/wallet/sign-requests", { headers: eh });
      assert.equal((byKey.json.signRequests as unknown[]).length, 2);
      const none = await call("GET", "/api/merchant/wallet/sign-requests", {
        headers: { "x-api-key": a.apiKey },
      });
      assert.deepEqual(none.json.signRequests, []);

      const rt = chain.runtime(P);
      const client = createWalletClient({
        account: wallet,
        chain: defineChain({
          id: rt.chainId,
          name: "local",
          nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
          rpcUrls: { default: { http: [rt.rpcUrl] } },
        }),
        transport: http(rt.rpcUrl),
      });
      const send = async (to: string, amount: bigint) => {
        const hash = await client.sendTransaction({
          to: chain.contract(P, "TestUSDC"),
          data: encodeFunctionData({
            abi: TestUSDC.abi,
            functionName: "transfer",
            args: [to as `0x${string}`, amount],
          }),
        });
        await waitFor(() => rt.client.getTransactionReceipt({ hash }), { what: "receipt" });
        return hash;
      };
      const submit = (id: unknown, txHash: string) =>
        call("POST", `/api/merchant/wallet/sign-requests/${id}`, {
          cookie: e.cookie,
          body: { txHash },
        });

      const malformed = await submit(reqs[0].id, "0x12");
      assert.equal(malformed.status, 400);
      assert.equal(malformed.json.error, M.signTxHash);
      const unknownTx = await submit(reqs[0].id, `0x${"ab".repeat(32)}`);
      assert.equal(unknownTx.status, 400);
      assert.equal(unknownTx.json.error, M.signTxNotFound);
      const wrongAmount = await send(to1, 999_999n);
      const forged1 = await submit(reqs[0].id, wrongAmount);
      assert.equal(forged1.status, 400);
      assert.equal(forged1.json.error, M.signTxMismatch);
      // A payment by someone else (the merchant's managed-wallet peer) to the right recipient.
      const notMine = await chain.transferUsdc({
        profile: P,
        from: {
          walletId: (await sql`select managed_wallet_id from merchants where id = ${a.id}`)[0]
            .managedWalletId,
        },
        to: to1,
        amount: USDC,
        intentKey: `test-not-mine:${to1}`,
      });
      const forged2 = await submit(reqs[0].id, notMine.txHash);
      assert.equal(forged2.json.error, M.signTxMismatch);
      const foreign = await call("POST", `/api/merchant/wallet/sign-requests/${reqs[0].id}`, {
        headers: { "x-api-key": a.apiKey },
        body: { txHash: wrongAmount },
      });
      assert.equal(foreign.status, 404);

      const paid1 = await send(to1, USDC);
      const ok1 = await submit(reqs[0].id, paid1);
      assert.equal(ok1.status, 200, ok1.text);
      assert.deepEqual(ok1.json.batch, {
        batchRef: ref,
        status: "AWAITING_SIGNATURES",
        pendingSignatureCount: 1,
      });
      const again = await submit(reqs[0].id, paid1);
      assert.equal(again.status, 409);
      // The same transaction for the other request: refused even though it is real.
      const reused = await submit(reqs[1].id, paid1);
      assert.equal(reused.status, 409);
      assert.equal(reused.json.error, M.signTxReused);
      assert.equal(receiver.received.filter((x) => x.body.includes(ref)).length, 0);

      const paid2 = await send(to2, 2n * USDC);
      const ok2 = await submit(reqs[1].id, paid2);
      assert.equal(ok2.status, 200, ok2.text);
      assert.equal((ok2.json.batch as { status: string }).status, "COMPLETED");
      const got = await waitFor(() => receiver.received.find((x) => x.body.includes(ref)), {
        what: "the webhook after the last signature",
        timeoutMs: 15_000,
      });
      const body = JSON.parse(got.body);
      assert.equal(body.status, "COMPLETED");
      assert.deepEqual(
        body.results.map((x: Result) => [x.status, x.txHash]),
        [["SUCCESS", paid1], ["SUCCESS", paid2]],
      );
      const after = await call("GET", "/api/merchant/wallet/sign-requests", { cookie: e.cookie });
      assert.deepEqual(after.json.signRequests, []);

      // The last two reported at once: the batch still completes, once.
      const r2 = await run({
        recipients: [{ recipientSCA: fresh(), amount: "0.5" }, {
          recipientSCA: fresh(),
          amount: "0.25",
        }],
        webhookUrl: `${receiver.url}/payroll`,
      }, eh);
      const ref2 = r2.json.batchRef as string;
      const pending = (await call("GET", "/api/merchant/wallet/sign-requests", { headers: eh }))
        .json.signRequests as Record<string, string>[];
      const hashes: string[] = [];
      for (const p of pending) hashes.push(await send(p.recipientSCA, BigInt(p.amountUnits)));
      const both = await Promise.all(pending.map((p, i) => submit(p.id, hashes[i])));
      assert.deepEqual(both.map((x) => x.status), [200, 200]);
      const final = await call("GET", `/api/payroll/run?batchRef=${ref2}`, { headers: eh });
      assert.equal((final.json.batch as { status: string }).status, "COMPLETED");
      await waitFor(() => receiver.received.find((x) => x.body.includes(ref2)), {
        what: "the second batch's webhook",
        timeoutMs: 15_000,
      });
      const n =
        await sql`select count(*)::int as n from webhook_deliveries where reference = ${ref2}`;
      assert.equal(n[0].n, 1);

      // One transaction reported for its request many times at once: one is accepted; every
      // other is told the request is not pending any more, never that its transaction was used
      // by another request (it was used by this one). Each round holds the first report on the
      // batch's row until the others are sent, so their reads run around its commit (the audit's
      // race, timing-dependent: without the fix one round in two showed it, and each of three
      // runs of this file failed).
      const r3 = await run({
        recipients: [0.1, 0.2, 0.3].map((x) => ({ recipientSCA: fresh(), amount: String(x) })),
      }, eh);
      const reqs3 = ((await call("GET", "/api/merchant/wallet/sign-requests", { headers: eh }))
        .json.signRequests as Record<string, string>[]).filter((x) =>
          x.batchRef === r3.json.batchRef
        );
      assert.equal(reqs3.length, 3);
      for (const req of reqs3) {
        const paid = await send(req.recipientSCA, BigInt(req.amountUnits));
        let first!: ReturnType<typeof submit>;
        let rest: ReturnType<typeof submit>[] = [];
        await sql.begin(async (tx) => {
          await tx`select 1 from payroll_batches where batch_ref = ${req.batchRef} for update`;
          first = submit(req.id, paid);
          await waitFor(async () => {
            const [{ waiting }] = await sql`
              select count(*)::int as waiting from pg_stat_activity
              where datname = current_database() and wait_event_type = 'Lock'
                and query ilike '%payroll_batches%'`;
            return waiting === 1;
          }, { what: "the first report waiting on its batch" });
          rest = Array.from({ length: 49 }, () => submit(req.id, paid));
        });
        const tally: Record<string, number> = {};
        for (const x of await Promise.all([first, ...rest])) {
          const k = `${x.status} ${x.json.error ?? ""}`;
          tally[k] = (tally[k] ?? 0) + 1;
        }
        assert.deepEqual(tally, { "200 ": 1, [`409 ${M.signRequestNotPending}`]: 49 });
      }
    });

    await t.step(
      "a chunk paid by an earlier transaction, several lookup windows back: its events are found",
      async () => {
        const batchRef = `fix2_${crypto.randomUUID().slice(0, 8)}`;
        const recipient = fresh();
        // A zero amount needs no allowance: the chunk is paid, with one Payout event.
        const req = {
          batchRef,
          chunk: 0,
          payer: fresh(),
          recipients: [recipient],
          amounts: [0n],
          firstIndex: 0,
        };
        const first = await chain.payroll.submitChunk(P, req);
        await chain.sender.wait(P, first);
        // Several lookup windows (of 4 blocks here) later, another transaction pays it again.
        await rpc(chain.runtime(P).rpcUrl, "anvil_mine", ["0xa"]);
        const again = await chain.sender.submit({
          profile: P,
          from: "operator",
          to: chain.contract(P, "BatchPayout"),
          data: encodeFunctionData({
            abi: BatchPayout.abi,
            functionName: "pay",
            args: [chunkId(batchRef, 0), req.payer, req.recipients, req.amounts, 0n],
          }),
          gas: 300_000n,
          intentKey: `fix2:${batchRef}:again`,
        });
        const out = await chain.payroll.chunkResults(P, again, batchRef, 0, {
          since: new Date(),
          window: 4n,
        });
        assert.equal(out.txHash, first.txHash);
        assert.deepEqual(out.results, [
          { index: 0, recipient: recipient.toLowerCase(), amount: 0n, ok: true },
        ]);
      },
    );
  } finally {
    await receiver.close();
    await svc.close();
  }
});
