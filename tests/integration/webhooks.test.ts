/** The webhook engine against a real local receiver that verifies with `standardwebhooks`. */
import assert from "node:assert/strict";
import { Webhook } from "standardwebhooks";
import { startTestService, type TestService } from "../helpers/service.ts";
import { api, createMerchant, type TestMerchant } from "../helpers/accounts.ts";
import { startReceiver } from "../helpers/receiver.ts";
import { waitFor } from "../helpers/poll.ts";
import { attemptDelivery, emit, sweepDue } from "../../src/modules/webhooks/webhooks.service.ts";
import { signedHeaders } from "../../src/modules/webhooks/webhooks.sign.ts";
import { WEBHOOK_MERCHANT_CONCURRENCY } from "../../src/modules/webhooks/webhooks.jobs.ts";

async function secretOf(svc: TestService, m: TestMerchant): Promise<string> {
  const r = await api(svc)("GET", "/api/merchant/webhook-secret", { cookie: m.cookie });
  assert.equal(r.status, 200);
  assert.match(r.json.secret as string, /^whsec_[A-Za-z0-9+/]+=*$/);
  return r.json.secret as string;
}

async function emitOne(
  svc: TestService,
  m: TestMerchant,
  url: string,
  reference = `pay_ref_${crypto.randomUUID()}`,
) {
  return await svc.db.sql.begin((tx) =>
    emit(svc.deps, tx, {
      merchantId: m.id,
      url,
      event: "payment.settled",
      payload: { reference, amount: 12.5, currency: "USDC", status: "SUCCESS" },
    })
  );
}

async function delivery(svc: TestService, id: string) {
  const [d] = await svc.db.sql`select * from webhook_deliveries where id = ${id}`;
  return d;
}

Deno.test("webhooks: signed deliveries, retries on the schedule, replay, timeouts, redirects", async (t) => {
  const svc = await startTestService({ env: { RATE_LIMITS: "off", WEBHOOK_TIMEOUT_MS: "400" } });
  const receiver = startReceiver();
  try {
    const m = await createMerchant(svc);
    const secret = await secretOf(svc, m);

    await t.step(
      "a delivery verifies with the standardwebhooks library; tampering does not",
      async () => {
        const id = await emitOne(svc, m, `${receiver.url}/hook`, "pay_ref_one");
        const got = await waitFor(
          () => receiver.received.find((r) => r.headers["webhook-id"] === id),
          { what: "the delivery" },
        );
        const wh = new Webhook(secret);
        const payload = wh.verify(got.body, got.headers) as Record<string, unknown>;
        assert.deepEqual(payload, {
          event: "payment.settled",
          reference: "pay_ref_one",
          amount: 12.5,
          currency: "USDC",
          status: "SUCCESS",
        });
        assert.equal(got.body, JSON.stringify(payload), "flat body, keys in the emitter's order");
        assert.equal(got.headers["x-service-signature"], got.headers["webhook-signature"]);
        assert.equal(got.headers["content-type"], "application/json");
        const flipped = got.body.replace("one", "onf");
        assert.throws(() => wh.verify(flipped, got.headers));
        const old = signedHeaders(secret, id, new Date(Date.now() - 6 * 60 * 1000), got.body);
        assert.throws(() => wh.verify(got.body, old), /timestamp/i);
        await waitFor(async () => (await delivery(svc, id)).status === "delivered");
        const d = await delivery(svc, id);
        assert.equal(d.attempts, 1);
        assert.equal(d.lastStatusCode, 200);
      },
    );

    await t.step("a rolled-back transaction sends nothing", async () => {
      const before = receiver.received.length;
      await assert.rejects(svc.db.sql.begin(async (tx) => {
        await emit(svc.deps, tx, {
          merchantId: m.id,
          url: `${receiver.url}/rollback`,
          event: "payment.settled",
          payload: { reference: "pay_ref_rb" },
        });
        throw new Error("roll back");
      }));
      const control = await emitOne(svc, m, `${receiver.url}/control`);
      await waitFor(() => receiver.received.some((r) => r.headers["webhook-id"] === control), {
        what: "the control delivery",
      });
      assert.equal(receiver.received.filter((r) => r.path === "/rollback").length, 0);
      assert.equal(receiver.received.length, before + 1);
      const rows = await svc.db
        .sql`select 1 from webhook_deliveries where reference = 'pay_ref_rb'`;
      assert.equal(rows.length, 0);
    });

    await t.step(
      "500 → attempts at +1m, +5m, +30m → undelivered; replay → delivered, same id",
      async () => {
        receiver.respond = (r) => (r.path === "/flaky" ? 500 : 200);
        const t0 = svc.clock.now().getTime();
        const id = await emitOne(svc, m, `${receiver.url}/flaky`, "pay_ref_flaky");
        await waitFor(async () =>
          (await delivery(svc, id)).attempts === 1 && !(await delivery(svc, id)).claimedUntil
        );
        const expectDue = async (afterMs: number) => {
          svc.clock.set(new Date(t0 + afterMs - 1000));
          assert.equal(
            await attemptDelivery(svc.deps, id),
            null,
            `not due before +${afterMs / 1000}s`,
          );
          svc.clock.set(new Date(t0 + afterMs));
          assert.equal(await sweepDue(svc.deps), 1);
        };
        await expectDue(60_000);
        await expectDue(60_000 + 300_000);
        await expectDue(60_000 + 300_000 + 1_800_000);
        const d = await delivery(svc, id);
        assert.equal(d.status, "undelivered");
        assert.equal(d.attempts, 4);
        assert.equal(d.nextAttemptAt, null);
        const attempts = await svc.db.sql<
          { startedAt: Date; statusCode: number; outcome: string }[]
        >`
        select started_at, status_code, outcome from webhook_attempts where delivery_id = ${id} order by attempt`;
        assert.deepEqual(attempts.map((a) => a.startedAt.getTime() - t0), [
          0,
          60_000,
          360_000,
          2_160_000,
        ]);
        assert.ok(attempts.every((a) => a.statusCode === 500 && a.outcome === "failed"));
        svc.clock.advance(3_600_000);
        assert.equal(await sweepDue(svc.deps), 0, "nothing more after undelivered");

        receiver.respond = () => 200;
        const r = await api(svc)("POST", `/api/webhooks/deliveries/${id}/replay`, {
          cookie: m.cookie,
        });
        assert.equal(r.status, 200, r.text);
        assert.equal((r.json.delivery as { status: string }).status, "delivered");
        const ids = receiver.received.filter((x) => x.path === "/flaky").map((x) =>
          x.headers["webhook-id"]
        );
        assert.equal(ids.length, 5);
        assert.ok(ids.every((x) => x === id), "one webhook-id on every attempt and the replay");
        const stamps = receiver.received.filter((x) => x.path === "/flaky").map((x) =>
          x.headers["webhook-timestamp"]
        );
        assert.equal(new Set(stamps).size, stamps.length, "a fresh timestamp each time");
      },
    );

    await t.step("a 301 is a failure and is not followed", async () => {
      receiver.respond = (r) =>
        r.path === "/moved"
          ? new Response(null, { status: 301, headers: { location: `${receiver.url}/target` } })
          : 200;
      const id = await emitOne(svc, m, `${receiver.url}/moved`);
      await waitFor(async () =>
        (await delivery(svc, id)).attempts === 1 && !(await delivery(svc, id)).claimedUntil
      );
      const d = await delivery(svc, id);
      assert.equal(d.status, "pending");
      assert.equal(d.lastStatusCode, 301);
      assert.equal(receiver.received.filter((x) => x.path === "/target").length, 0);
    });

    await t.step(
      "a receiver that never answers times out (short timeout in this test)",
      async () => {
        svc.clock.set(new Date());
        receiver.respond = (r) => (r.path === "/hang" ? "hang" : 200);
        const id = await emitOne(svc, m, `${receiver.url}/hang`);
        await waitFor(async () => (await delivery(svc, id)).lastError !== null, {
          timeoutMs: 5000,
        });
        const d = await delivery(svc, id);
        assert.match(d.lastError, /timed out after 400 ms/);
        assert.equal(d.status, "pending");
        const [a] = await svc.db
          .sql`select duration_ms from webhook_attempts where delivery_id = ${id}`;
        assert.ok(a.durationMs >= 390 && a.durationMs < 3000, `duration ${a.durationMs}`);
      },
    );

    await t.step("the deliveries API filters; secrets roll", async () => {
      svc.clock.set(new Date()); // receivers check signatures against real time
      const call = api(svc);
      const all = await call("GET", "/api/webhooks/deliveries", {
        headers: { "x-api-key": m.apiKey },
      });
      assert.equal(all.status, 200);
      const list = all.json.deliveries as Array<Record<string, unknown>>;
      assert.ok(list.length >= 5);
      for (
        const k of [
          "id",
          "event",
          "reference",
          "url",
          "status",
          "attempts",
          "lastStatusCode",
          "nextAttemptAt",
          "createdAt",
        ]
      ) {
        assert.ok(k in list[0], k);
      }
      const byRef = await call("GET", "/api/webhooks/deliveries?reference=pay_ref_flaky", {
        cookie: m.cookie,
      });
      assert.deepEqual(
        (byRef.json.deliveries as Array<{ reference: string }>).map((d) => d.reference),
        ["pay_ref_flaky"],
      );
      const pending = await call("GET", "/api/webhooks/deliveries?status=pending", {
        cookie: m.cookie,
      });
      assert.ok(
        (pending.json.deliveries as Array<{ status: string; nextAttemptAt: string }>).every((d) =>
          d.status === "pending" && d.nextAttemptAt
        ),
      );
      const bad = await call("GET", "/api/webhooks/deliveries?status=lost", { cookie: m.cookie });
      assert.equal(bad.status, 400);
      const missing = await call("POST", "/api/webhooks/deliveries/msg_nope/replay", {
        cookie: m.cookie,
      });
      assert.deepEqual([missing.status, missing.json.error], [404, "Webhook delivery not found."]);
      const other = await createMerchant(svc);
      const foreign = await call("POST", `/api/webhooks/deliveries/${list[0].id}/replay`, {
        cookie: other.cookie,
      });
      assert.equal(foreign.status, 404, "scoped to the merchant");

      const rolled = await call("POST", "/api/merchant/webhook-secret/roll", { cookie: m.cookie });
      const fresh = rolled.json.secret as string;
      assert.notEqual(fresh, secret);
      const id = await emitOne(svc, m, `${receiver.url}/after-roll`);
      const got = await waitFor(() =>
        receiver.received.find((r) => r.headers["webhook-id"] === id)
      );
      new Webhook(fresh).verify(got.body, got.headers);
      assert.throws(() => new Webhook(secret).verify(got.body, got.headers));
    });
  } finally {
    await receiver.close();
    await svc.close();
  }
});

Deno.test("webhooks: two worker processes send each delivery once per attempt", async () => {
  const a = await startTestService({ env: { RATE_LIMITS: "off" } });
  const b = await startTestService({ sameDeploymentAs: a, env: { RATE_LIMITS: "off" } });
  const receiver = startReceiver();
  try {
    const m = await createMerchant(a);
    const ids: string[] = [];
    for (let i = 0; i < 30; i++) ids.push(await emitOne(i % 2 ? a : b, m, `${receiver.url}/pair`));
    await waitFor(() => receiver.received.length >= 30, { what: "30 deliveries" });
    // Sweeps from both processes at once find nothing left to send.
    await Promise.all([sweepDue(a.deps), sweepDue(b.deps)]);
    const counts = new Map<string, number>();
    for (const r of receiver.received) {
      counts.set(r.headers["webhook-id"], (counts.get(r.headers["webhook-id"]) ?? 0) + 1);
    }
    assert.equal(counts.size, 30);
    assert.ok([...counts.values()].every((n) => n === 1));
    assert.deepEqual([...counts.keys()].sort(), ids.sort());
  } finally {
    await receiver.close();
    await b.close();
    await a.close();
  }
});

Deno.test("webhooks: one merchant's hanging receivers do not hold up another merchant's events", async () => {
  // The attempt timeout is long (as in production) and the hanging receiver never answers until
  // released: only a share per merchant lets the other merchant's event through meanwhile.
  const svc = await startTestService({ env: { RATE_LIMITS: "off", WEBHOOK_TIMEOUT_MS: "60000" } });
  const receiver = startReceiver();
  receiver.respond = (r) => (r.path.startsWith("/hang") ? "hang" : 200);
  try {
    const flooder = await createMerchant(svc);
    const other = await createMerchant(svc);
    // More hanging deliveries than every worker of the process together can attempt at once.
    const FLOOD = 100;
    for (let i = 0; i < FLOOD; i++) await emitOne(svc, flooder, `${receiver.url}/hang/${i}`);
    await waitFor(
      () => receiver.received.filter((r) => r.path.startsWith("/hang")).length >= 1,
      { what: "the first hanging attempt" },
    );
    const id = await emitOne(svc, other, `${receiver.url}/fast`);
    // Well inside the hanging attempts' 60 s timeout.
    await waitFor(() => receiver.received.some((r) => r.headers["webhook-id"] === id), {
      what: "the other merchant's event, while the flood hangs",
      timeoutMs: 20_000,
    });
    const hung = receiver.received.filter((r) => r.path.startsWith("/hang")).length;
    assert.ok(hung <= WEBHOOK_MERCHANT_CONCURRENCY, `${hung} hanging attempts at once`);
    await waitFor(async () => (await delivery(svc, id)).status === "delivered", {
      what: "the other merchant's delivery recorded delivered",
      timeoutMs: 20_000,
    });

    // A second merchant hanging too (an outside audit, 2026-12-01: two were enough to take every
    // worker, and a delivered event stayed counted against its merchant's share until the
    // hanging attempts fetched with it timed out). Each of a third merchant's events still
    // arrives while both hang.
    const second = await createMerchant(svc);
    for (let i = 0; i < 40; i++) await emitOne(svc, second, `${receiver.url}/hang/b${i}`);
    await waitFor(
      () => receiver.received.filter((r) => r.path.startsWith("/hang/b")).length >= 1,
      { what: "the second merchant's first hanging attempt" },
    );
    const healthy = await createMerchant(svc);
    for (let i = 0; i < 6; i++) {
      const next = await emitOne(svc, healthy, `${receiver.url}/fast/${i}`);
      await waitFor(() => receiver.received.some((r) => r.headers["webhook-id"] === next), {
        what: `the healthy merchant's event ${i}, while two merchants' receivers hang`,
        timeoutMs: 20_000,
      });
    }
    const hanging = receiver.received.filter((r) => r.path.startsWith("/hang")).length;
    assert.ok(
      hanging <= 2 * WEBHOOK_MERCHANT_CONCURRENCY,
      `${hanging} hanging attempts at once`,
    );

    // A replay of a delivery whose attempt is still in flight starts no second attempt beside it
    // (it cleared the attempt's claim: two requests with one id at once, an outside audit).
    const inFlight = receiver.received.find((r) => r.path.startsWith("/hang/b"))!;
    const inFlightId = inFlight.headers["webhook-id"];
    const replayed = await api(svc)("POST", `/api/webhooks/deliveries/${inFlightId}/replay`, {
      headers: { "x-api-key": second.apiKey },
    });
    assert.equal(replayed.status, 200, replayed.text);
    assert.equal(
      receiver.received.filter((r) => r.headers["webhook-id"] === inFlightId).length,
      1,
      "one request for the delivery while its attempt is in flight",
    );
  } finally {
    await receiver.close();
    await svc.close();
  }
});
