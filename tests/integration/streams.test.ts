/**
 * Streams through the API on real anvil chains, the service's manual clock kept on chain time
 * (evm_increaseTime + evm_mine, then the clock set to the head block's timestamp): accrual at
 * several points against the vault's own view, withdraw then stop (exact split), a non-sender
 * stop (502), the minimum rate, concurrent stops (one transaction), the drain job's completion
 * (crash-safe), list derived values and metrics field by field, and the events.
 */
import assert from "node:assert/strict";
import { startTestService } from "../helpers/service.ts";
import { api, createMerchant } from "../helpers/accounts.ts";
import { rpc } from "../helpers/chain.ts";
import { waitFor } from "../helpers/poll.ts";
import { M } from "../../src/http/messages.ts";
import { enqueueDue } from "../../src/modules/streams/streams.service.ts";

const USDC = 1_000_000n;
const P = "production";
const HOOK = "http://127.0.0.1:9/hooks";

type Stream = Record<string, unknown> & { reference: string };

Deno.test("streams API", async (t) => {
  const svc = await startTestService({ env: { RATE_LIMITS: "off" } });
  const call = api(svc);
  const chain = svc.deps.chain;
  const rpcUrl = chain.runtime(P).rpcUrl;
  const sql = svc.db.sql;
  /** Chain time forward by `seconds`, one block mined, the service clock set to that block. */
  const travel = async (seconds: number) => {
    if (seconds) await rpc(rpcUrl, "evm_increaseTime", [seconds]);
    await rpc(rpcUrl, "evm_mine", []);
    await syncClock();
  };
  const syncClock = async () => {
    const block = await chain.runtime(P).client.getBlock();
    svc.clock.set(new Date(Number(block.timestamp) * 1000));
    return block.timestamp;
  };
  const units = (n: unknown) => BigInt(Math.round(Number(n) * 1e6));
  try {
    const a = await createMerchant(svc);
    const other = await createMerchant(svc);
    const h = { "x-api-key": a.apiKey };
    const sender = a.walletAddress!.toLowerCase();
    const w = await call("POST", "/api/wallets", { headers: h, body: { label: "Receiver" } });
    assert.equal(w.status, 201, w.text);
    const receiver = (w.json.wallet as { address: string }).address.toLowerCase();
    await chain.mintUsdc({ profile: P, to: sender as `0x${string}`, amount: 1_000n * USDC });
    await syncClock();
    const list = async (query = "") => {
      const r = await call("GET", `/api/payments/stream${query}`, { headers: h });
      assert.equal(r.status, 200, r.text);
      return r.json as { metrics: Record<string, number>; streams: Stream[] };
    };
    const one = async (reference: string) => (await list(`?reference=${reference}`)).streams[0];
    const create = async (rate: string, deposit: string, extra: Record<string, unknown> = {}) => {
      const r = await call("POST", "/api/payments/stream", {
        headers: h,
        body: {
          senderSCA: sender,
          receiverSCA: receiver,
          ratePerSecond: rate,
          totalDeposited: deposit,
          ...extra,
        },
      });
      assert.equal(r.status, 200, r.text);
      await syncClock();
      return r.json as Record<string, unknown> & { reference: string; txHash: string };
    };
    const vaultAccrued = (reference: string) => chain.streams.accrued(P, reference);

    await t.step(
      "create refuses missing fields, a rate below 0.000001, and others' wallets",
      async () => {
        const missing = await call("POST", "/api/payments/stream", {
          headers: h,
          body: { senderSCA: sender, receiverSCA: receiver, ratePerSecond: "1" },
        });
        assert.equal(missing.status, 400);
        assert.equal(missing.json.error, M.streamFieldsRequired);
        assert.deepEqual(Object.keys((missing.json.hint as { example: object }).example), [
          "senderSCA",
          "receiverSCA",
          "ratePerSecond",
          "totalDeposited",
        ]);
        for (const rate of ["0.0000001", "0", "0.0000005", "-1", "abc"]) {
          const r = await call("POST", "/api/payments/stream", {
            headers: h,
            body: {
              senderSCA: sender,
              receiverSCA: receiver,
              ratePerSecond: rate,
              totalDeposited: "1",
            },
          });
          assert.equal(r.status, 400, rate);
          assert.equal(r.json.error, M.streamRate, rate);
        }
        const foreign = await call("POST", "/api/payments/stream", {
          headers: { "x-api-key": other.apiKey },
          body: {
            senderSCA: sender,
            receiverSCA: receiver,
            ratePerSecond: "1",
            totalDeposited: "1",
          },
        });
        assert.equal(foreign.status, 403);
        assert.equal(foreign.json.error, M.streamSenderNotControlled);
        const tooMuch = await call("POST", "/api/payments/stream", {
          headers: h,
          body: {
            senderSCA: sender,
            receiverSCA: receiver,
            ratePerSecond: "1",
            totalDeposited: "5000",
          },
        });
        assert.equal(tooMuch.status, 400);
        assert.equal(tooMuch.json.error, M.streamInsufficientBalance);
        const noKey = await call("GET", "/api/payments/stream");
        assert.equal(noKey.status, 401);
      },
    );

    let main: string;
    await t.step(
      "create: the response exactly, accrual vs the vault at several points",
      async () => {
        const r = await create("0.001", "10", { webhookUrl: HOOK });
        main = r.reference;
        assert.match(main, /^stream_[0-9a-z]+_[0-9a-z]+$/);
        const stream = r.stream as Record<string, unknown>;
        assert.deepEqual(stream, {
          reference: main,
          status: "ACTIVE",
          senderSCA: stream.senderSCA,
          receiverSCA: stream.receiverSCA,
          ratePerSecond: 0.001,
          totalDeposited: 10,
          totalStreamed: 0,
          currency: "USDC",
          contractAddress: stream.contractAddress,
        });
        assert.equal((stream.senderSCA as string).toLowerCase(), sender);
        assert.equal((stream.receiverSCA as string).toLowerCase(), receiver);
        assert.equal(
          (stream.contractAddress as string).toLowerCase(),
          chain.contract(P, "StreamVault").toLowerCase(),
        );
        assert.equal(r.estimatedDurationSeconds, 10_000);
        const view = await chain.streams.get(P, main);
        assert.equal(view.deposit, 10n * USDC);
        assert.equal(view.rate, 1_000n);
        assert.equal(
          r.estimatedEndTime,
          new Date((Number(view.startTime) + 10_000) * 1000).toISOString(),
        );
        assert.match(r.explorerUrl as string, new RegExp(`/tx/${r.txHash}$`));
        assert.deepEqual(Object.keys(r.nextSteps as object), ["stop", "withdraw", "status"]);
        for (const dt of [0, 1, 37, 1_000, 2_345]) {
          await travel(dt);
          const { accrued, at } = await vaultAccrued(main);
          assert.equal(BigInt(svc.clock.now().getTime() / 1000), at);
          const s = await one(main);
          assert.equal(units(s.currentStreamed), accrued, `at +${dt}`);
          assert.equal(units(s.remainingBalance), 10n * USDC - accrued);
          const elapsed = at - view.startTime;
          assert.equal(s.secondsRemaining, 10_000 - Number(elapsed));
          assert.equal(s.percentComplete, Math.round(Number(accrued) / 10 / 1e6 * 100 * 100) / 100);
          assert.equal(s.status, "ACTIVE");
          assert.equal(s.stoppedAt, null);
        }
      },
    );

    await t.step("withdraw, then a non-sender stop (502), then the sender's stop", async () => {
      const before = await chain.usdcBalance(P, receiver as `0x${string}`);
      const wd = await call("POST", "/api/payments/stream/withdraw", {
        headers: h,
        body: { reference: main, receiverSCA: receiver },
      });
      assert.equal(wd.status, 200, wd.text);
      const view = await chain.streams.get(P, main);
      assert.equal(units(wd.json.totalStreamed), view.withdrawn);
      assert.equal(units(wd.json.amountWithdrawn), view.withdrawn);
      assert.equal(await chain.usdcBalance(P, receiver as `0x${string}`) - before, view.withdrawn);
      assert.deepEqual(Object.keys(wd.json).sort(), [
        "amountWithdrawn",
        "explorerUrl",
        "reference",
        "success",
        "totalStreamed",
        "txHash",
      ]);
      await syncClock();
      await travel(500);
      const wrong = await call("POST", "/api/payments/stream/stop", {
        headers: h,
        body: { reference: main, callerSCA: receiver },
      });
      assert.equal(wrong.status, 502, wrong.text);
      assert.equal(wrong.json.error, M.chainReverted);
      assert.match(wrong.json.hint as string, /only the stream's sender/);
      assert.equal((await one(main)).status, "ACTIVE");

      const senderBefore = await chain.usdcBalance(P, sender as `0x${string}`);
      const receiverBefore = await chain.usdcBalance(P, receiver as `0x${string}`);
      const stop = await call("POST", "/api/payments/stream/stop", {
        headers: h,
        body: { reference: main, callerSCA: sender },
      });
      assert.equal(stop.status, 200, stop.text);
      const after = await chain.streams.get(P, main);
      assert.equal(after.status, "Stopped");
      const streamed = units(stop.json.totalStreamed);
      const refunded = units(stop.json.refundedToSender);
      assert.equal(streamed, after.withdrawn);
      assert.equal(streamed + refunded, 10n * USDC);
      assert.equal(streamed, after.rate * (after.stopTime - after.startTime));
      assert.equal(await chain.usdcBalance(P, sender as `0x${string}`) - senderBefore, refunded);
      assert.equal(
        await chain.usdcBalance(P, receiver as `0x${string}`) - receiverBefore,
        streamed - view.withdrawn,
      );
      assert.deepEqual(stop.json.stream, {
        reference: main,
        status: "STOPPED",
        totalStreamed: Number(stop.json.totalStreamed),
        stoppedAt: new Date(Number(after.stopTime) * 1000).toISOString(),
      });
      const again = await call("POST", "/api/payments/stream/stop", {
        headers: h,
        body: { reference: main, callerSCA: sender },
      });
      assert.equal(again.json.error, "Stream is already STOPPED.");
      const unknown = await call("POST", "/api/payments/stream/stop", {
        headers: h,
        body: { reference: "stream_nope_x", callerSCA: sender },
      });
      assert.equal(unknown.json.error, "Stream not found.");
      assert.equal(unknown.status, 404);
      // Elapsed time ends at stoppedAt.
      await travel(1_000);
      const s = await one(main);
      assert.equal(s.status, "STOPPED");
      assert.equal(units(s.currentStreamed), streamed);
      assert.equal(units(s.totalStreamed), streamed);
      assert.equal(units(s.remainingBalance), refunded);
      assert.equal(s.secondsRemaining, 0);
      // Events in the deliveries table, with the spec's fields.
      const rows = await sql<{ event: string; payload: string }[]>`
        select event, payload from webhook_deliveries where reference = ${main} order by created_at, event`;
      const events = Object.fromEntries(rows.map((r) => [r.event, JSON.parse(r.payload)]));
      assert.deepEqual(Object.keys(events.get ? {} : events).sort(), [
        "stream.created",
        "stream.stopped",
        "stream.withdrawn",
      ]);
      assert.deepEqual(Object.keys(events["stream.created"]), [
        "event",
        "reference",
        "senderSCA",
        "receiverSCA",
        "ratePerSecond",
        "totalDeposited",
        "estimatedDurationSeconds",
      ]);
      assert.deepEqual(events["stream.stopped"], {
        event: "stream.stopped",
        reference: main,
        totalStreamed: Number(stop.json.totalStreamed),
        refundedToSender: Number(stop.json.refundedToSender),
        txHash: stop.json.txHash,
        stoppedAt: (stop.json.stream as { stoppedAt: string }).stoppedAt,
        explorerUrl: stop.json.explorerUrl,
      });
      assert.deepEqual(events["stream.withdrawn"], {
        event: "stream.withdrawn",
        reference: main,
        receiverSCA: (await one(main)).receiverSCA,
        amountWithdrawn: Number(wd.json.amountWithdrawn),
        totalStreamed: Number(wd.json.totalStreamed),
      });
    });

    await t.step("two concurrent stops: one transaction, one success", async () => {
      const r = await create("0.000001", "1");
      await travel(10);
      const [x, y] = await Promise.all([0, 1].map(() =>
        call("POST", "/api/payments/stream/stop", {
          headers: h,
          body: { reference: r.reference, callerSCA: sender },
        })
      ));
      assert.deepEqual([x.status, y.status].sort(), [200, 400]);
      const loser = x.status === 400 ? x : y;
      assert.equal(loser.json.error, "Stream is already STOPPED.");
      const txs = await sql`
        select 1 from chain_transactions where intent_key like ${`stream-stop:${r.reference}:%`}`;
      assert.equal(txs.length, 1);
    });

    await t.step("the drain job completes a fully streamed stream, once", async () => {
      const r = await create("0.000010", "0.0001", { webhookUrl: HOOK }); // 10 s
      const crashed = await create("0.000010", "0.0001"); // drained "before a crash"
      await travel(30);
      const before = await chain.usdcBalance(P, receiver as `0x${string}`);
      // A drain whose withdrawal was mined but never recorded (the process died there).
      await chain.streams.withdraw(
        P,
        crashed.reference,
        "operator",
        `stream-drain:${crashed.reference}`,
      );
      assert.equal((await one(crashed.reference)).status, "ACTIVE");
      assert.equal(await enqueueDue(svc.deps), 2);
      await enqueueDue(svc.deps); // a second sweep while the first jobs run: no second payment
      for (const ref of [r.reference, crashed.reference]) {
        await waitFor(async () => (await one(ref)).status === "COMPLETED", {
          timeoutMs: 30_000,
          what: `${ref} completed`,
        });
        const txs =
          await sql`select 1 from chain_transactions where intent_key = ${`stream-drain:${ref}`}`;
        assert.equal(txs.length, 1);
        const s = await one(ref);
        assert.equal(s.totalStreamed, 0.0001);
        assert.equal(s.currentStreamed, 0.0001);
        assert.equal(s.remainingBalance, 0);
        assert.equal(s.percentComplete, 100);
        assert.equal(s.secondsRemaining, 0);
      }
      assert.equal(await chain.usdcBalance(P, receiver as `0x${string}`) - before, 200n);
      const [completed] = await sql<{ payload: string }[]>`
        select payload from webhook_deliveries where reference = ${r.reference} and event = 'stream.completed'`;
      assert.deepEqual(JSON.parse(completed.payload), {
        event: "stream.completed",
        reference: r.reference,
        receiverSCA: (await one(r.reference)).receiverSCA,
        amountWithdrawn: 0.0001,
        totalStreamed: 0.0001,
      });
    });

    await t.step("list: order, filters, derived values and metrics field by field", async () => {
      const live = await create("0.000003", "1"); // 333,334 s
      const second = await create("0.5", "100"); // 200 s
      await travel(7);
      const all = await list();
      assert.deepEqual(
        all.streams.map((s) => s.reference).slice(0, 2),
        [second.reference, live.reference],
      );
      const startedAt = all.streams.map((s) => Date.parse(s.startedAt as string));
      assert.deepEqual(startedAt, [...startedAt].sort((x, y) => y - x));
      const byStatus = (st: string) => all.streams.filter((s) => s.status === st).length;
      const active = all.streams.filter((s) => s.status === "ACTIVE");
      const aLive = await vaultAccrued(live.reference);
      const aSecond = await vaultAccrued(second.reference);
      const sLive = all.streams.find((s) => s.reference === live.reference)!;
      assert.equal(units(sLive.currentStreamed), aLive.accrued);
      assert.equal(sLive.remainingBalance, Number((1_000_000n - aLive.accrued).toString()) / 1e6);
      assert.equal(sLive.secondsRemaining, Math.ceil((1_000_000 - Number(aLive.accrued)) / 3));
      assert.equal(sLive.percentComplete, Math.round(Number(aLive.accrued) / 100) / 100);
      const sSecond = all.streams.find((s) => s.reference === second.reference)!;
      assert.equal(units(sSecond.currentStreamed), aSecond.accrued);
      assert.equal(
        sSecond.secondsRemaining,
        Math.ceil((100e6 - Number(aSecond.accrued)) / 500_000),
      );
      assert.deepEqual(all.metrics, {
        total: all.streams.length,
        active: byStatus("ACTIVE"),
        stopped: byStatus("STOPPED"),
        completed: byStatus("COMPLETED"),
        totalLockedUSDC: Number(
          (1_000_000n - aLive.accrued + 100_000_000n - aSecond.accrued).toString(),
        ) / 1e6,
        totalRatePerSecond: 0.500003,
      });
      assert.equal(active.length, 2);
      assert.deepEqual(all.metrics.total, 6);
      assert.deepEqual(all.metrics.stopped, 2);
      assert.deepEqual(all.metrics.completed, 2);
      const stopped = await list("?status=STOPPED");
      assert.equal(stopped.streams.length, 2);
      assert.equal(stopped.metrics.total, 2);
      assert.equal(
        (await list(`?sender=${sender.toUpperCase().replace("0X", "0x")}`)).streams.length,
        6,
      );
      assert.equal((await list(`?receiver=${sender}`)).streams.length, 0);
      const bad = await call("GET", "/api/payments/stream?status=PAUSED", { headers: h });
      assert.equal(bad.status, 400);
      // Another merchant sees none of them.
      const theirs = await call("GET", "/api/payments/stream", {
        headers: { "x-api-key": other.apiKey },
      });
      assert.equal((theirs.json.streams as unknown[]).length, 0);
    });

    await t.step("a repeated create is a second stream", async () => {
      const x = await create("0.000001", "0.5");
      const y = await create("0.000001", "0.5");
      assert.notEqual(x.reference, y.reference);
      assert.notEqual(x.txHash, y.txHash);
    });

    await t.step(
      "a create retried after a 408 with its Idempotency-Key locks one stream",
      async () => {
        const body = {
          senderSCA: sender,
          receiverSCA: receiver,
          ratePerSecond: "0.000001",
          totalDeposited: "0.25",
        };
        const headers = { ...h, "Idempotency-Key": "stream-retry-1" };
        const first = await call("POST", "/api/payments/stream", { headers, body });
        assert.equal(first.status, 200, first.text);
        // What the middleware does when a request ends in 408: the key is released, and the
        // client's retry runs the handler again.
        await sql`delete from idempotency_keys`;
        const retry = await call("POST", "/api/payments/stream", { headers, body });
        assert.equal(retry.status, 200, retry.text);
        assert.equal(retry.json.reference, first.json.reference);
        assert.equal(retry.json.txHash, first.json.txHash);
        const [n] = await sql<{ n: number }[]>`
        select count(*)::int as n from streams where reference = ${first.json.reference as string}`;
        assert.equal(n.n, 1);
        // The same key for another request is refused, with nothing sent.
        await sql`delete from idempotency_keys`;
        const other = await call("POST", "/api/payments/stream", {
          headers,
          body: { ...body, totalDeposited: "0.5" },
        });
        assert.equal(other.status, 400, other.text);
        assert.equal(
          other.json.error,
          "This Idempotency-Key was already used with a different request.",
        );
      },
    );
  } finally {
    await svc.close();
  }
});
