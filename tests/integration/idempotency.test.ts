/** Idempotency-Key: one effect per key and request, replays, conflicts, credential scope. */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { Hono } from "hono";
import { startTestService } from "../helpers/service.ts";
import { api, createMerchant } from "../helpers/accounts.ts";
import { modules } from "../../src/modules/index.ts";
import { guard } from "../../src/http/auth.ts";
import { idempotent } from "../../src/http/idempotency.ts";
import { readJsonObject } from "../../src/http/body.ts";
import { switchMode } from "../helpers/environments.ts";
import type { AppModule } from "../../src/modules/index.ts";

/** A route whose effect is counted and whose answer the test chooses. */
function probeModule() {
  const effects: unknown[] = [];
  let answer = 201;
  const mod: AppModule = {
    name: "probe",
    api: (deps) => {
      const app = new Hono();
      app.post("/api/probe", guard(deps, { accept: [] }), idempotent(deps), async (c) => {
        const body = await readJsonObject(c);
        effects.push(body);
        return c.json({ success: answer < 400, n: effects.length }, answer as 201);
      });
      return app;
    },
  };
  return { mod, effects, setAnswer: (s: number) => (answer = s) };
}

Deno.test("idempotency keys", async (t) => {
  const probe = probeModule();
  const svc = await startTestService({
    env: { RATE_LIMITS: "off" },
    modules: [...modules, probe.mod],
  });
  const call = api(svc);
  try {
    const m = await createMerchant(svc);
    const body = { type: "secret", environment: "test", label: "once" };
    const headers = { "idempotency-key": "create-key-0001" };

    await t.step("20 concurrent identical requests with one key → one key created", async () => {
      const results = await Promise.all(
        Array.from(
          { length: 20 },
          () => call("POST", "/api/keys", { cookie: m.cookie, body, headers }),
        ),
      );
      const statuses = results.map((r) => r.status);
      assert.ok(statuses.every((s) => s === 201 || s === 409), statuses.join(","));
      const created = results.filter((r) => r.status === 201).map((r) =>
        (r.json.key as { id: string }).id
      );
      assert.ok(created.length >= 1);
      assert.equal(new Set(created).size, 1, "every 201 is the same key");
      for (const r of results.filter((r) => r.status === 409)) {
        assert.equal(r.json.error, "A request with this Idempotency-Key is still in progress.");
      }
      const [{ n }] = await svc.db
        .sql`select count(*)::int as n from api_keys where label = 'once'`;
      assert.equal(n, 1);
    });

    await t.step("after completion the same request replays the stored response", async () => {
      const first = await call("POST", "/api/keys", { cookie: m.cookie, body, headers });
      const again = await call("POST", "/api/keys", { cookie: m.cookie, body, headers });
      assert.equal(again.status, 201);
      assert.equal(again.headers.get("idempotent-replayed"), "true");
      assert.equal(again.text, first.text);
      const stored = await svc.db.sql`select * from idempotency_keys`;
      const key = (first.json.key as { key: string }).key;
      assert.ok(!JSON.stringify(stored).includes(key), "the stored response is sealed");
      assert.ok(
        !JSON.stringify(stored).includes("create-key-0001"),
        "the key itself is stored hashed",
      );
      // Twenty identical retries at once of the finished key: every one is the stored answer
      // (19 of them were 409 "still in progress" while one held the key to replay it).
      const retries = await Promise.all(
        Array.from(
          { length: 20 },
          () => call("POST", "/api/keys", { cookie: m.cookie, body, headers }),
        ),
      );
      assert.deepEqual(retries.map((r) => r.status), Array(20).fill(201));
      for (const r of retries) {
        assert.equal(r.headers.get("idempotent-replayed"), "true");
        assert.equal(r.text, first.text);
      }
    });

    await t.step("the same key with a different body → 400", async () => {
      const r = await call("POST", "/api/keys", {
        cookie: m.cookie,
        body: { ...body, label: "other" },
        headers,
      });
      assert.deepEqual([r.status, r.json.error], [
        400,
        "This Idempotency-Key was already used with a different request.",
      ]);
    });

    await t.step("keys are scoped to the credential", async () => {
      const viaKey = await call("POST", "/api/keys", {
        headers: { ...headers, "x-api-key": m.apiKey },
        body,
      });
      assert.equal(viaKey.status, 201);
      assert.equal(
        viaKey.headers.get("idempotent-replayed"),
        null,
        "another credential: a new request",
      );
      const other = await createMerchant(svc);
      const r = await call("POST", "/api/keys", { cookie: other.cookie, body, headers });
      assert.equal(r.status, 201);
      assert.equal(r.headers.get("idempotent-replayed"), null);
    });

    await t.step("an API key's are its merchant's keys of that kind and environment", async () => {
      // A retry under the key that replaced a rotated one finds the first answer (it made a
      // second checkout session), as does one under a second secret key of that environment.
      const created = await call("POST", "/api/keys", {
        cookie: m.cookie,
        body: { type: "secret", environment: "test" },
      });
      assert.equal(created.status, 201, created.text);
      const first = created.json.key as { id: string; key: string };
      const h = { "idempotency-key": "checkout-order-77" };
      const order = { amount: "7.70", currency: "USDC", description: "Order 77" };
      const a = await call("POST", "/api/payments/initialize", {
        headers: { ...h, "x-api-key": first.key },
        body: order,
      });
      assert.equal(a.status, 201, a.text);
      const rotated = await call("POST", `/api/keys/${first.id}/rotate`, { cookie: m.cookie });
      assert.equal(rotated.status, 201, rotated.text);
      const next = (rotated.json.key as { key: string }).key;
      const b = await call("POST", "/api/payments/initialize", {
        headers: { ...h, "x-api-key": next },
        body: order,
      });
      assert.equal(b.status, 201, b.text);
      assert.equal(b.headers.get("idempotent-replayed"), "true");
      assert.equal(b.json.reference, a.json.reference);
      // Another environment's key is another caller.
      const live = await call("POST", "/api/payments/initialize", {
        headers: { ...h, "x-api-key": m.apiKey },
        body: order,
      });
      assert.equal(live.headers.get("idempotent-replayed"), null);
      assert.notEqual(live.json.reference, a.json.reference);
    });

    await t.step("a merchant session's keys are scoped to its mode too", async () => {
      // One session switched from test to live mode: the same key and request is a new live
      // request, not the test-mode answer again (it answered the testnet link before).
      const h = { "idempotency-key": "link-per-mode" };
      const link = { amount: "2.50", description: "per mode" };
      await switchMode(svc, m.cookie, "test");
      const test = await call("POST", "/api/merchant/payment-link", {
        cookie: m.cookie,
        body: link,
        headers: h,
      });
      assert.equal(test.status, 201, test.text);
      await switchMode(svc, m.cookie, "live");
      const live = await call("POST", "/api/merchant/payment-link", {
        cookie: m.cookie,
        body: link,
        headers: h,
      });
      assert.equal(live.status, 201, live.text);
      assert.equal(live.headers.get("idempotent-replayed"), null);
      assert.notEqual(live.json.reference, test.json.reference);
      const again = await call("POST", "/api/merchant/payment-link", {
        cookie: m.cookie,
        body: link,
        headers: h,
      });
      assert.equal(again.headers.get("idempotent-replayed"), "true");
      assert.equal(again.json.reference, live.json.reference);
      const [row] = await svc.db.sql`select chain_id from payments where reference = ${live.json
        .reference as string}`;
      assert.equal(row.chainId, svc.deps.chain.chainId("production"));
    });

    await t.step("a 5xx answer is not stored: the retry runs the handler again", async () => {
      const h = { "idempotency-key": "probe-1" };
      probe.setAnswer(500);
      const a = await call("POST", "/api/probe", { body: { x: 1 }, headers: h });
      assert.equal(a.status, 500);
      probe.setAnswer(201);
      const b = await call("POST", "/api/probe", { body: { x: 1 }, headers: h });
      assert.equal(b.status, 201);
      const c = await call("POST", "/api/probe", { body: { x: 1 }, headers: h });
      assert.equal(c.headers.get("idempotent-replayed"), "true");
      assert.equal(probe.effects.length, 2, "ran for the 500 and the 201, not the replay");
      const noKey = await call("POST", "/api/probe", { body: { x: 1 } });
      assert.equal(noKey.status, 201);
      assert.equal(probe.effects.length, 3, "without a key every request runs");
    });

    await t.step(
      "a 409 answer is not stored: a retry runs once the conflict has passed",
      async () => {
        // A 409 refuses for now (another request is acting on the resource; after a crash, the
        // dead one's claim not lapsed yet): stored, it was replayed for good, even after the work
        // it waited for was done.
        const h = { "idempotency-key": "probe-409" };
        const before = probe.effects.length;
        probe.setAnswer(409);
        const a = await call("POST", "/api/probe", { body: { x: 9 }, headers: h });
        assert.equal(a.status, 409);
        probe.setAnswer(201);
        const b = await call("POST", "/api/probe", { body: { x: 9 }, headers: h });
        assert.equal(b.status, 201);
        assert.equal(b.headers.get("idempotent-replayed"), null);
        const c = await call("POST", "/api/probe", { body: { x: 9 }, headers: h });
        assert.equal(c.headers.get("idempotent-replayed"), "true");
        assert.equal(probe.effects.length, before + 2);
      },
    );

    await t.step("a 400 answer is not stored: the corrected request may take the key", async () => {
      const h = { "idempotency-key": "probe-400" };
      probe.setAnswer(400);
      const bad = await call("POST", "/api/probe", { body: { x: "bad" }, headers: h });
      assert.equal(bad.status, 400);
      probe.setAnswer(201);
      const fixed = await call("POST", "/api/probe", { body: { x: 2 }, headers: h });
      assert.equal(fixed.status, 201, fixed.text);
      assert.equal(fixed.headers.get("idempotent-replayed"), null);
      const again = await call("POST", "/api/probe", { body: { x: 2 }, headers: h });
      assert.equal(again.headers.get("idempotent-replayed"), "true");
      // A real route: malformed JSON, then the good body with the same key.
      const key = { "idempotency-key": "keys-after-400", cookie: m.cookie };
      const malformed = await fetch(`${svc.baseUrl}/api/keys`, {
        method: "POST",
        headers: { "content-type": "application/json", origin: svc.baseUrl, ...key },
        body: "{not json",
      });
      assert.equal(malformed.status, 400);
      await malformed.body?.cancel();
      const good = await call("POST", "/api/keys", { cookie: m.cookie, body, headers: key });
      assert.equal(good.status, 201, good.text);
    });

    await t.step(
      "the same parameters spaced or ordered otherwise are the same request",
      async () => {
        probe.setAnswer(201);
        const send = (body: string, key = "probe-canonical") =>
          fetch(`${svc.baseUrl}/api/probe`, {
            method: "POST",
            headers: { "content-type": "application/json", "idempotency-key": key },
            body,
          }).then(async (r) => ({ r, text: await r.text() }));
        const before = probe.effects.length;
        const first = await send('{"amount":"5","to":{"a":1,"b":[true,null]}}');
        assert.equal(first.r.status, 201, first.text);
        const spaced = await send(
          ' {\n  "to": { "b": [ true, null ], "a": 1 },\n  "amount": "5"\n}',
        );
        assert.equal(spaced.r.status, 201, spaced.text);
        assert.equal(spaced.r.headers.get("idempotent-replayed"), "true");
        assert.equal(spaced.text, first.text);
        assert.equal(probe.effects.length, before + 1, "the handler ran once");
        // Another value is another request, a number's digits included (not read as a double).
        const other = await send('{"amount":"6","to":{"a":1,"b":[true,null]}}');
        assert.equal(other.r.status, 400, other.text);
        assert.equal(
          JSON.parse(other.text).error,
          "This Idempotency-Key was already used with a different request.",
        );
        const big = await send('{"amount":10000000000000000001}', "probe-digits");
        assert.equal(big.r.status, 201, big.text);
        const near = await send('{"amount":10000000000000000000}', "probe-digits");
        assert.equal(near.r.status, 400, "equal as doubles, not as amounts");
        // A key recorded before bodies were compared by their parameters: its bytes still match.
        const old = '{"b":2,"a":1}';
        assert.equal((await send(old, "probe-bytes")).r.status, 201);
        const head = "POST\n/api/probe\n";
        await svc.db.sql`update idempotency_keys set request_hash = ${
          createHash("sha256").update(head + old).digest("hex")
        } where request_hash = ${
          createHash("sha256").update(head + '{"a":1,"b":2}').digest("hex")
        }`;
        const replayed = await send(old, "probe-bytes");
        assert.equal(replayed.r.headers.get("idempotent-replayed"), "true", replayed.text);
      },
    );

    await t.step("a malformed key → 400; records expire after 24 hours", async () => {
      const bad = await call("POST", "/api/probe", {
        body: {},
        headers: { "idempotency-key": "has space" },
      });
      assert.deepEqual([bad.status, bad.json.error], [
        400,
        "Idempotency-Key must be 1 to 255 printable characters.",
      ]);
      const before = probe.effects.length;
      svc.clock.advance(24 * 3600 * 1000 + 1);
      const later = await call("POST", "/api/probe", {
        body: { x: 1 },
        headers: { "idempotency-key": "probe-1" },
      });
      assert.equal(later.headers.get("idempotent-replayed"), null);
      assert.equal(probe.effects.length, before + 1);
    });
  } finally {
    await svc.close();
  }
});
