/**
 * Streams and money safety (DESIGN §11), on the default local chains with a small pool
 * (DATABASE_POOL_MAX=5): a key sees and moves only its environment's streams (the dashboard: its
 * session's mode); a stream completes within seconds of its end although the local chain mines
 * only on demand (stoppedAt the true end, `stream.completed`), and a stop after the end completes
 * it too; 50 identical withdrawals and 50 identical stops at once: one stop moves money, no
 * withdrawal pays more than accrued or reverts, the rest are clean 4xx, `/readyz` and another
 * merchant served throughout; the texts of an x-api-key route without a key and of a withdrawal
 * to a wallet that is not the stream's receiver.
 */
import assert from "node:assert/strict";
import { startTestService } from "../helpers/service.ts";
import { api, createMerchant } from "../helpers/accounts.ts";
import { dashboardClient } from "../helpers/dashboard-client.ts";
import { rpc } from "../helpers/chain.ts";
import { waitFor } from "../helpers/poll.ts";
import { stampede, succeeded } from "../helpers/stampede.ts";
import { M } from "../../src/http/messages.ts";
import type { ProfileName } from "../../src/chain/index.ts";

const USDC = 1_000_000n;
const HOOK = "http://127.0.0.1:9/hooks";

type Stream = Record<string, unknown> & { reference: string };

Deno.test("streams: environments, completion on time, 50 at once, texts", async (t) => {
  const svc = await startTestService({ env: { RATE_LIMITS: "off", DATABASE_POOL_MAX: "5" } });
  const call = api(svc);
  const chain = svc.deps.chain;
  const sql = svc.db.sql;
  const units = (n: unknown) => BigInt(Math.round(Number(n) * 1e6));
  try {
    const m = await createMerchant(svc);
    const other = await createMerchant(svc);
    const k = await call("POST", "/api/keys", {
      cookie: m.cookie,
      body: { type: "secret", environment: "test" },
    });
    assert.equal(k.status, 201, k.text);
    const live = { "x-api-key": m.apiKey };
    const test = { "x-api-key": (k.json.key as { key: string }).key };
    const sender = m.walletAddress!.toLowerCase() as `0x${string}`;
    const w = await call("POST", "/api/wallets", { headers: live, body: { label: "Receiver" } });
    assert.equal(w.status, 201, w.text);
    const receiver = (w.json.wallet as { address: string }).address.toLowerCase() as `0x${string}`;
    for (const p of ["production", "testnet"] as const) {
      await chain.mintUsdc({ profile: p, to: sender, amount: 1_000n * USDC });
    }
    const create = async (
      headers: Record<string, string>,
      rate: string,
      deposit: string,
      extra: Record<string, unknown> = {},
    ) => {
      const r = await call("POST", "/api/payments/stream", {
        headers,
        body: {
          senderSCA: sender,
          receiverSCA: receiver,
          ratePerSecond: rate,
          totalDeposited: deposit,
          ...extra,
        },
      });
      assert.equal(r.status, 200, r.text);
      assert.match(r.headers.get("content-type") ?? "", /application\/json/);
      return r.json as Record<string, unknown> & { reference: string; txHash: string };
    };
    const list = async (headers: Record<string, string>, query = "") => {
      const r = await call("GET", `/api/payments/stream${query}`, { headers });
      assert.equal(r.status, 200, r.text);
      return r.json as { metrics: Record<string, number>; streams: Stream[] };
    };
    const one = async (headers: Record<string, string>, reference: string) =>
      (await list(headers, `?reference=${reference}`)).streams[0];
    // By name: the service clock stands still here, so created_at does not order them.
    const events = async (reference: string) =>
      (await sql<{ event: string; payload: string }[]>`
        select event, payload from webhook_deliveries where reference = ${reference}
        order by event`).map((r) => ({ event: r.event, ...JSON.parse(r.payload) }));
    const txCount = async () =>
      (await sql<{ n: number }[]>`select count(*)::int as n from chain_transactions`)[0].n;

    await t.step("a key sees and acts on its own environment's streams only", async () => {
      const prod = await create(live, "0.000001", "1");
      const tnet = await create(test, "0.000001", "1");
      assert.equal(
        (tnet.stream as { contractAddress: string }).contractAddress.toLowerCase(),
        chain.contract("testnet", "StreamVault").toLowerCase(),
      );
      assert.equal((await chain.streams.get("testnet", tnet.reference)).status, "Active");
      assert.equal((await chain.streams.get("production", tnet.reference)).status, "None");

      const seen = async (headers: Record<string, string>, query = "") =>
        (await list(headers, query)).streams.map((s) => s.reference);
      assert.deepEqual(await seen(live), [prod.reference]);
      assert.deepEqual(await seen(test), [tnet.reference]);
      assert.deepEqual(await seen(live, `?reference=${tnet.reference}`), []);
      assert.deepEqual(await seen(test, `?reference=${prod.reference}`), []);
      for (const q of [`?status=ACTIVE`, `?sender=${sender}`, `?receiver=${receiver}`]) {
        assert.deepEqual(await seen(live, q), [prod.reference], q);
        assert.deepEqual(await seen(test, q), [tnet.reference], q);
      }
      assert.equal((await list(live)).metrics.total, 1);
      assert.equal((await list(test)).metrics.totalLockedUSDC > 0, true);

      // The other environment's stream: 404 exactly like another merchant's, nothing sent.
      const before = await txCount();
      const vaults = async () =>
        await Promise.all(
          (["production", "testnet"] as ProfileName[]).flatMap((p) =>
            [prod.reference, tnet.reference].map((r) => chain.streams.get(p, r))
          ),
        );
      const stateBefore = await vaults();
      const cross: Array<[Record<string, string>, string]> = [
        [live, tnet.reference],
        [test, prod.reference],
      ];
      for (const [headers, reference] of cross) {
        const stop = await call("POST", "/api/payments/stream/stop", {
          headers,
          body: { reference, callerSCA: sender },
        });
        assert.equal(stop.status, 404, stop.text);
        assert.match(stop.headers.get("content-type") ?? "", /application\/json/);
        assert.equal(stop.json.error, "Stream not found.");
        const wd = await call("POST", "/api/payments/stream/withdraw", {
          headers,
          body: { reference, receiverSCA: receiver },
        });
        assert.equal(wd.status, 404, wd.text);
        assert.equal(wd.json.error, "Stream not found.");
      }
      assert.equal(await txCount(), before, "no transaction for the other environment");
      assert.deepEqual(await vaults(), stateBefore);
      assert.equal((await one(live, prod.reference)).status, "ACTIVE");
      assert.equal((await one(test, tnet.reference)).status, "ACTIVE");

      // The dashboard shows the session's mode: live → production, test → testnet.
      const d = dashboardClient(svc);
      const b = await d.open(m, "/dashboard/streams");
      const livePage = await d.get(b, "/dashboard/streams");
      assert.equal(livePage.status, 200);
      assert.ok(livePage.text.includes(prod.reference));
      assert.ok(!livePage.text.includes(tnet.reference));
      await sql`update merchant_sessions set mode = 'test' where merchant_id = ${m.id}`;
      const testPage = await d.get(b, "/dashboard/streams/live", { "hx-request": "true" });
      assert.equal(testPage.status, 200);
      assert.ok(testPage.text.includes(tnet.reference));
      assert.ok(!testPage.text.includes(prod.reference));
      // A form shown before the switch is refused (its token is the live mode's); the page shown
      // in test mode brings its own.
      const stale = await d.post(b, `/dashboard/streams/${prod.reference}/stop`, {});
      assert.equal(stale.status, 403);
      await d.get(b, "/dashboard/streams");
      const crossStop = await d.post(b, `/dashboard/streams/${prod.reference}/stop`, {});
      assert.equal(crossStop.status, 404);
      assert.match(crossStop.text, /Stream not found\./);
      await sql`update merchant_sessions set mode = 'live' where merchant_id = ${m.id}`;
      assert.equal(await txCount(), before);
    });

    await t.step("texts: x-api-key without a key; a wallet that is not the receiver", async () => {
      const expected = "Authentication required. Provide a valid API key in the x-api-key header.";
      const requests: Array<[string, string, unknown]> = [
        ["GET", "/api/payments/stream", undefined],
        ["POST", "/api/payments/stream", {}],
        ["POST", "/api/payments/stream/stop", {}],
        ["POST", "/api/payments/stream/withdraw", {}],
      ];
      for (const [method, path, body] of requests) {
        const asBearer: Record<string, string> = { authorization: `Bearer ${m.apiKey}` };
        for (const headers of [asBearer, {}]) {
          const r = await call(method, path, { headers, body });
          assert.equal(r.status, 401, `${method} ${path}`);
          assert.match(r.headers.get("content-type") ?? "", /application\/json/);
          assert.equal(r.json.error, expected, `${method} ${path}`);
        }
      }
      // A route that takes a bearer key keeps the spec's text.
      const wallets = await call("GET", "/api/wallets");
      assert.equal(wallets.status, 401);
      assert.equal(wallets.json.error, M.authRequired);

      const s = await create(live, "0.000001", "1");
      const notReceiver = await call("POST", "/api/payments/stream/withdraw", {
        headers: live,
        body: { reference: s.reference, receiverSCA: sender }, // controlled, but the sender
      });
      assert.equal(notReceiver.status, 403, notReceiver.text);
      assert.match(notReceiver.headers.get("content-type") ?? "", /application\/json/);
      assert.equal(notReceiver.json.error, "receiverSCA is not this stream's receiver.");
      const stranger = await call("POST", "/api/payments/stream/withdraw", {
        headers: live,
        body: { reference: s.reference, receiverSCA: "0x000000000000000000000000000000000000dEaD" },
      });
      assert.equal(stranger.status, 403, stranger.text);
      assert.equal(stranger.json.error, "receiverSCA must be a wallet you control.");
    });

    await t.step(
      "a short stream completes on the local chain within seconds of its end",
      async () => {
        // 3 seconds. The service clock (a ManualClock) does not move: the drain goes by the chain.
        const r = await create(live, "0.000010", "0.00003", { webhookUrl: HOOK });
        const before = await chain.usdcBalance("production", receiver);
        const done = await waitFor(async () => {
          const s = await one(live, r.reference);
          return s.status === "COMPLETED" ? s : null;
        }, { timeoutMs: 60_000, intervalMs: 200, what: `${r.reference} completed` });
        const end = Date.parse(done.startedAt as string) + 3_000;
        assert.equal(done.stoppedAt, new Date(end).toISOString(), "stoppedAt is the true end");
        assert.equal(done.stoppedAt, r.estimatedEndTime);
        assert.equal(done.totalStreamed, 0.00003);
        assert.equal(done.secondsRemaining, 0);
        assert.equal((await chain.streams.get("production", r.reference)).status, "Completed");
        assert.equal(await chain.usdcBalance("production", receiver) - before, 30n);
        assert.deepEqual((await events(r.reference)).map((e) => e.event), [
          "stream.completed",
          "stream.created",
        ]);
        assert.deepEqual((await events(r.reference))[0], {
          event: "stream.completed",
          reference: r.reference,
          receiverSCA: done.receiverSCA,
          amountWithdrawn: 0.00003,
          totalStreamed: 0.00003,
        });
      },
    );

    await t.step("50 identical withdrawals and 50 identical stops at once", async () => {
      const bystander = {
        method: "GET",
        path: "/api/payments/stream",
        headers: { "x-api-key": other.apiKey },
      };
      const w = await create(live, "0.001", "100", { webhookUrl: HOOK });
      const s = await create(live, "0.001", "100", { webhookUrl: HOOK });
      // A minute of accrual on chain (the withdrawals mine blocks as they go on).
      await rpc(chain.runtime("production").rpcUrl, "evm_increaseTime", [60]);

      const receiverBefore = await chain.usdcBalance("production", receiver);
      const withdrawals = await stampede(svc, {
        method: "POST",
        path: "/api/payments/stream/withdraw",
        headers: live,
        body: { reference: w.reference, receiverSCA: receiver },
      }, { bystander, boundMs: 120_000 });
      const paid = succeeded(withdrawals);
      assert.ok(paid.length >= 1, JSON.stringify(withdrawals.byStatus));
      for (const a of withdrawals.answers.filter((a) => a.status !== 200)) {
        assert.equal(a.status, 400, a.text);
        assert.equal(a.json.error, M.streamNothingToWithdraw);
      }
      const vault = await chain.streams.get("production", w.reference);
      const { accrued } = await chain.streams.accrued("production", w.reference);
      const sum = paid.reduce((x, a) => x + units(a.json.amountWithdrawn), 0n);
      assert.equal(sum, vault.withdrawn, "the answers add up to what the vault paid");
      assert.ok(vault.withdrawn <= accrued, "never more than accrued");
      assert.equal(await chain.usdcBalance("production", receiver) - receiverBefore, sum);
      const sent = await sql<{ status: string }[]>`
        select status from chain_transactions where intent_key like ${`stream-withdraw:${w.reference}:%`}`;
      assert.equal(sent.length, paid.length, "one transaction per paid answer, none refused");
      assert.ok(sent.every((x) => x.status === "confirmed"));
      assert.equal((await one(live, w.reference)).totalStreamed, Number(sum) / 1e6);
      assert.equal(
        (await events(w.reference)).filter((e) => e.event === "stream.withdrawn").length,
        paid.length,
      );

      const senderBefore = await chain.usdcBalance("production", sender);
      const receiverBeforeStop = await chain.usdcBalance("production", receiver);
      const stops = await stampede(svc, {
        method: "POST",
        path: "/api/payments/stream/stop",
        headers: live,
        body: { reference: s.reference, callerSCA: sender },
      }, { bystander, boundMs: 120_000 });
      assert.equal(stops.byStatus[200], 1, JSON.stringify(stops.byStatus));
      assert.equal(stops.byStatus[400], 49, JSON.stringify(stops.byStatus));
      for (const a of stops.answers.filter((a) => a.status === 400)) {
        assert.equal(a.json.error, "Stream is already STOPPED.");
      }
      const stop = succeeded(stops)[0].json;
      const streamed = units(stop.totalStreamed);
      const refunded = units(stop.refundedToSender);
      assert.equal(streamed + refunded, 100n * USDC);
      const after = await chain.streams.get("production", s.reference);
      assert.equal(after.status, "Stopped");
      assert.equal(after.withdrawn, streamed);
      assert.equal(await chain.usdcBalance("production", sender) - senderBefore, refunded);
      assert.equal(await chain.usdcBalance("production", receiver) - receiverBeforeStop, streamed);
      const stopTxs = await sql`
        select 1 from chain_transactions where intent_key like ${`stream-stop:${s.reference}:%`}`;
      assert.equal(stopTxs.length, 1, "one stop on chain");
      assert.equal(
        (await events(s.reference)).filter((e) => e.event === "stream.stopped").length,
        1,
      );

      const [reverted] = await sql<{ n: number }[]>`
        select count(*)::int as n from chain_transactions
        where intent_key like 'stream-%' and status in ('reverted', 'failed')`;
      assert.equal(reverted.n, 0, "no stream transaction reverted or was refused");
    });

    await t.step("a stop after the end completes the stream instead", async () => {
      const r = await create(live, "0.000001", "0.001", { webhookUrl: HOOK }); // 1,000 s
      const senderBefore = await chain.usdcBalance("production", sender);
      const receiverBefore = await chain.usdcBalance("production", receiver);
      // Past the end on chain (no block mined: the stop's own reading mines one).
      await rpc(chain.runtime("production").rpcUrl, "evm_increaseTime", [2_000]);
      const stop = await call("POST", "/api/payments/stream/stop", {
        headers: live,
        body: { reference: r.reference, callerSCA: sender },
      });
      assert.equal(stop.status, 400, stop.text);
      assert.match(stop.headers.get("content-type") ?? "", /application\/json/);
      assert.equal(stop.json.error, "Stream is already COMPLETED.");
      const s = await one(live, r.reference);
      assert.equal(s.status, "COMPLETED");
      assert.equal(s.stoppedAt, r.estimatedEndTime, "stoppedAt is the end, not the stop");
      assert.equal(s.totalStreamed, 0.001);
      assert.equal((await chain.streams.get("production", r.reference)).status, "Completed");
      assert.equal(await chain.usdcBalance("production", receiver) - receiverBefore, 1000n);
      assert.equal(await chain.usdcBalance("production", sender), senderBefore, "no refund");
      assert.deepEqual((await events(r.reference)).map((e) => e.event), [
        "stream.completed",
        "stream.created",
      ]);
      const stops = await sql`
        select 1 from chain_transactions where intent_key like ${`stream-stop:${r.reference}:%`}`;
      assert.equal(stops.length, 0, "no stop was sent");
    });
  } finally {
    await svc.close();
  }
});
