/**
 * Live updates (SSE) fed by the database's events: a settlement recorded by one process reaches
 * a checkout page's stream open on another (a real `web` child process), the dashboard's stream
 * carries only the signed-in merchant's events in the session's mode, refusals (no session, an
 * unknown payment, too many streams), and a bounded shutdown with streams open.
 */
import assert from "node:assert/strict";
import { startTestService, type TestService } from "../helpers/service.ts";
import { api, createMerchant, type TestMerchant } from "../helpers/accounts.ts";
import { deploymentEnv, type ServiceProcess, startProcess } from "../helpers/processes.ts";
import { openSse, type SseStream } from "../helpers/sse.ts";
import { settleFromLog } from "../../src/modules/payments/payments.service.ts";
import { setSessionMode } from "../../src/modules/merchants/merchants.service.ts";
import { MAX_STREAMS_PER_MERCHANT } from "../../src/modules/dashboard/live.routes.ts";
import { LiveStreams } from "../../src/http/sse.ts";

/** Records the payment's settlement as the log watcher does, in `svc`'s process. */
async function settle(svc: TestService, reference: string) {
  const [p] = await svc.deps.sql<{ chainId: number; payTo: string; amount: bigint }[]>`
    select chain_id, pay_to, amount from payments where reference = ${reference}`;
  const txHash = `0x${crypto.randomUUID().replaceAll("-", "").padEnd(64, "0")}`;
  const outcome = await svc.deps.sql.begin((tx) =>
    settleFromLog(svc.deps, tx, {
      chainId: p.chainId,
      reference,
      payer: "0x00000000000000000000000000000000000000a1",
      payTo: p.payTo,
      amount: p.amount,
      txHash,
      logIndex: 0,
      blockNumber: 1n,
    })
  );
  assert.equal(outcome, "settled");
}

async function newPayment(svc: TestService, key: string): Promise<string> {
  const r = await api(svc)("POST", "/api/payments/initialize", {
    headers: { "x-api-key": key },
    body: { amount: "1.25" },
  });
  assert.equal(r.status, 201, r.text);
  return (r.json.data as { reference?: string })?.reference ?? (r.json.reference as string);
}

async function testKey(svc: TestService, m: TestMerchant): Promise<string> {
  const k = await api(svc)("POST", "/api/keys", {
    cookie: m.cookie,
    body: { type: "secret", environment: "test", label: "test key" },
  });
  assert.equal(k.status, 201, k.text);
  return (k.json.key as { key: string }).key;
}

Deno.test("live events (SSE) across processes, scoped, bounded", async (t) => {
  const svc = await startTestService({ env: { RATE_LIMITS: "off" } });
  let web: ServiceProcess | undefined;
  const open: SseStream[] = [];
  try {
    const alice = await createMerchant(svc, { businessName: "Alice" });
    const bob = await createMerchant(svc, { businessName: "Bob" });
    const aliceTest = await testKey(svc, alice);

    await t.step(
      "a settlement recorded by another process reaches the checkout page's stream",
      async () => {
        web = await startProcess("web", deploymentEnv(svc));
        const ref = await newPayment(svc, alice.apiKey);
        const other = await newPayment(svc, alice.apiKey);
        const page = await fetch(`${web.baseUrl}/checkout/${ref}`);
        const html = await page.text();
        assert.equal(page.status, 200);
        assert.match(
          html,
          new RegExp(
            `hx-trigger="live:refresh" hx-swap="outerHTML" data-live-stream="/checkout/${ref}/events" data-live-event="status" data-live-poll="2"`,
          ),
        );
        assert.match(html, /src="\/assets\/live\.js\?v=/);
        const stream = await openSse(`${web.baseUrl}/checkout/${ref}/events`);
        open.push(stream);
        assert.equal(stream.status, 200);
        assert.match(stream.contentType!, /^text\/event-stream/);
        assert.match(stream.preamble, /^retry: \d+/);

        // Another payment's settlement is not this page's; its own follows.
        await settle(svc, other);
        await settle(svc, ref);
        // Only this payment's events, its status only; the settlement among them.
        while (true) {
          const got = await stream.next();
          assert.notEqual(got, "end");
          if (got === "end") return;
          assert.equal(got.event, "status");
          const body = JSON.parse(got.data);
          assert.deepEqual(Object.keys(body).sort(), ["reference", "status"]);
          assert.equal(body.reference, ref, `never another payment's (${other})`);
          if (body.status === "SUCCESS") break;
        }
        const status = await fetch(`${web.baseUrl}/checkout/${ref}/status`);
        assert.equal(status.status, 200);
        const block = await status.text();
        assert.match(block, /data-status="SUCCESS"/);
        assert.match(block, /<h2>Paid<\/h2>/);
        assert.doesNotMatch(block, /data-live-stream/, "a paid status is no longer live");
      },
    );

    await t.step(
      "the dashboard stream carries only the session's merchant, in its mode",
      async () => {
        const stream = await openSse(`${svc.baseUrl}/dashboard/events`, { cookie: alice.cookie });
        open.push(stream);
        assert.equal(stream.status, 200);
        const bobs = await newPayment(svc, bob.apiKey);
        const alicesTestnet = await newPayment(svc, aliceTest);
        const alices = await newPayment(svc, alice.apiKey);
        // Events arrive in commit order: bob's and the testnet one were filtered, not late.
        const first = await stream.next();
        assert.notEqual(first, "end");
        if (first === "end") return;
        assert.equal(first.event, "payment");
        assert.deepEqual(JSON.parse(first.data), { reference: alices, status: "PENDING" });
        await settle(svc, bobs);
        await settle(svc, alicesTestnet);
        await settle(svc, alices);
        const second = await stream.next();
        assert.notEqual(second, "end");
        if (second === "end") return;
        assert.deepEqual(JSON.parse(second.data), { reference: alices, status: "SUCCESS" });

        const bobStream = await openSse(`${svc.baseUrl}/dashboard/events`, { cookie: bob.cookie });
        open.push(bobStream);
        assert.equal(bobStream.status, 200);
        const aliceAgain = await newPayment(svc, alice.apiKey);
        const bobAgain = await newPayment(svc, bob.apiKey);
        const got = await bobStream.next();
        assert.notEqual(got, "end");
        if (got === "end") return;
        assert.equal(JSON.parse(got.data).reference, bobAgain, `not alice's ${aliceAgain}`);
      },
    );

    await t.step("refusals: no session, an unknown payment, too many streams", async () => {
      const anonymous = await openSse(`${svc.baseUrl}/dashboard/events`);
      assert.equal(anonymous.status, 302, "to the login page, not a stream");
      const forged = await openSse(`${svc.baseUrl}/dashboard/events`, {
        cookie: "merchant_token=forged",
      });
      assert.equal(forged.status, 302);
      const unknown = await openSse(`${svc.baseUrl}/checkout/pay_ref_nope/events`);
      assert.equal(unknown.status, 404);
      assert.notEqual(unknown.contentType?.startsWith("text/event-stream"), true);

      // Alice has one open already (the previous step).
      const more: SseStream[] = [];
      for (let i = 1; i < MAX_STREAMS_PER_MERCHANT; i++) {
        const s = await openSse(`${svc.baseUrl}/dashboard/events`, { cookie: alice.cookie });
        open.push(s);
        more.push(s);
        assert.equal(s.status, 200, `stream ${i + 1}`);
      }
      const over = await openSse(`${svc.baseUrl}/dashboard/events`, { cookie: alice.cookie });
      assert.equal(over.status, 429);
      // Another merchant is not held by alice's streams; a closed stream frees its place.
      const bobs = await openSse(`${svc.baseUrl}/dashboard/events`, { cookie: bob.cookie });
      open.push(bobs);
      assert.equal(bobs.status, 200);
      await more[0].close();
      const again = await waitOpen(`${svc.baseUrl}/dashboard/events`, alice.cookie);
      open.push(again);
    });

    await t.step(
      "heartbeats, a bounded lifetime, a place per key, no stream once closing",
      async () => {
        const streams = new LiveStreams(svc.deps.sql, undefined, {
          heartbeatMs: 20,
          maxStreamMs: 400,
        });
        const select = () => null;
        const first = await streams.open({ key: "ip:192.0.2.1", limit: 1, select });
        assert.ok(first.ok);
        assert.equal(
          first.response.headers.get("content-type"),
          "text/event-stream; charset=utf-8",
        );
        const over = await streams.open({ key: "ip:192.0.2.1", limit: 1, select });
        assert.deepEqual(over, { ok: false, reason: "limit" });
        const elsewhere = await streams.open({ key: "ip:192.0.2.2", limit: 1, select });
        assert.ok(elsewhere.ok);
        const body = await readAll(first.response, 10_000);
        assert.match(body, /^retry: \d+\n: open\n\n/);
        assert.match(body, /\n: hb\n\n/, "heartbeats while idle");
        assert.equal(streams.size, 1, "the ended stream gave its place back");
        const again = await streams.open({ key: "ip:192.0.2.1", limit: 1, select });
        assert.ok(again.ok);
        await streams.closeAll();
        assert.equal(streams.size, 0);
        assert.deepEqual(await streams.open({ key: "ip:192.0.2.3", limit: 1, select }), {
          ok: false,
          reason: "closing",
        });
        if (elsewhere.ok) await readAll(elsewhere.response, 10_000);
        if (again.ok) await readAll(again.response, 10_000);
      },
    );

    await t.step(
      "a lost LISTEN connection is listened again, streams are told to look again",
      async () => {
        const ref = await newPayment(svc, alice.apiKey);
        const stream = await openSse(`${svc.baseUrl}/checkout/${ref}/events`);
        open.push(stream);
        assert.equal(stream.status, 200);
        const killed = await svc.deps.sql`
        select pg_terminate_backend(pid) from pg_stat_activity
        where datname = current_database() and pid <> pg_backend_pid()
          and query ilike 'listen %'`;
        assert.ok(killed.length >= 1, "the listeners of this database");
        // The payment's creation may be announced first (late); then the resync.
        while (true) {
          const got = await stream.next();
          assert.notEqual(got, "end");
          if (got === "end") return;
          if (got.event === "resync") break;
          assert.deepEqual(JSON.parse(got.data), { reference: ref, status: "PENDING" });
        }
        await settle(svc, ref);
        while (true) {
          const got = await stream.next();
          assert.notEqual(got, "end");
          if (got === "end") return;
          if (JSON.parse(got.data).status === "SUCCESS") break;
        }
      },
    );

    await t.step("a session logged out or switched to test mode gets no more events", async () => {
      const carol = await createMerchant(svc, { businessName: "Carol" });
      const stream = await openSse(`${svc.baseUrl}/dashboard/events`, { cookie: carol.cookie });
      open.push(stream);
      assert.equal(stream.status, 200);
      const carolTest = await testKey(svc, carol);
      const claims = carol.cookie.split("=")[1].split(".")[1].replaceAll("-", "+")
        .replaceAll("_", "/");
      const sid = JSON.parse(atob(claims.padEnd(Math.ceil(claims.length / 4) * 4, "="))).sid;
      await setSessionMode(svc.deps, sid, "test");
      // The next of carol's live events is checked against the session first (the cached answer
      // from the open is a second old at most): wait that out by polling the stream's end.
      const deadline = Date.now() + 10_000;
      let ended = false;
      while (!ended && Date.now() < deadline) {
        await newPayment(svc, carol.apiKey);
        const got = await stream.next();
        ended = got === "end";
      }
      assert.ok(ended, "the stream ends instead of carrying live events to a test-mode session");
      const again = await openSse(`${svc.baseUrl}/dashboard/events`, { cookie: carol.cookie });
      open.push(again);
      assert.equal(again.status, 200, "a new stream, in the session's new mode");
      const logout = await api(svc)("DELETE", "/api/merchant/me", { cookie: carol.cookie });
      assert.equal(logout.status, 200, logout.text);
      let closed = false;
      while (!closed && Date.now() < deadline + 10_000) {
        await newPayment(svc, carolTest);
        closed = (await again.next()) === "end";
      }
      assert.ok(closed, "a logged-out session's stream ends");
    });

    await t.step("a stop with open streams ends them and is not forced", async () => {
      const second = await startTestService({ sameDeploymentAs: svc, workers: false });
      const ref = await newPayment(svc, alice.apiKey);
      const checkout = await openSse(`${second.baseUrl}/checkout/${ref}/events`);
      const dash = await openSse(`${second.baseUrl}/dashboard/events`, { cookie: alice.cookie });
      assert.equal(checkout.status, 200);
      assert.equal(dash.status, 200);
      const result = await second.stop("test: streams open");
      assert.deepEqual(result, { forced: false, abandoned: [] });
      assert.equal(await checkout.next(), "end");
      assert.equal(await dash.next(), "end");
    });
  } finally {
    for (const s of open) await s.close();
    await web?.stop();
    await svc.close();
  }
});

/** A freed place is counted when the server sees the client gone: poll with a bound. */
async function waitOpen(url: string, cookie: string): Promise<SseStream> {
  const deadline = Date.now() + 10_000;
  while (true) {
    const s = await openSse(url, { cookie });
    if (s.status === 200) return s;
    assert.equal(s.status, 429);
    if (Date.now() > deadline) throw new Error("the closed stream's place was never freed");
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The whole body of a stream the server ends, within a bound. */
async function readAll(res: Response, timeoutMs: number): Promise<string> {
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  const deadline = Date.now() + timeoutMs;
  while (true) {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<"timeout">((r) => {
      timer = setTimeout(() => r("timeout"), Math.max(0, deadline - Date.now()));
    });
    const got = await Promise.race([reader.read(), timeout]).finally(() => clearTimeout(timer));
    if (got === "timeout") throw new Error(`the stream did not end: ${text}`);
    if (got.done) return text;
    text += got.value;
  }
}
