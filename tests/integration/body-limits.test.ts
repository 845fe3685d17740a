/**
 * What an unauthenticated client may hold: body size (413 before reading), media type (415 on
 * JSON endpoints), body read time (408 at the deadline), and what is not bounded (the request
 * head, and the connection itself: Deno.serve gives a handler no way to close it).
 */
import assert from "node:assert/strict";
import { Hono } from "hono";
import { startTestService, type TestService } from "../helpers/service.ts";
import { api, createMerchant, type TestMerchant } from "../helpers/accounts.ts";
import { frameworkTestModule } from "../helpers/test-module.ts";
import { completeResponse, parseResponse, type RawConn, rawConnect } from "../helpers/raw-http.ts";
import { type AppModule, modules } from "../../src/modules/index.ts";

const LIMIT = 64 * 1024;
const UPLOAD_LIMIT = 256 * 1024;
const TOO_LARGE = "Request body too large.";
const NOT_JSON = "Content-Type must be application/json.";

/** A route that takes a larger body of another media type, as a payroll CSV upload will. */
const uploadModule: AppModule = {
  name: "upload-test",
  api: () =>
    new Hono().post("/api/test/upload", async (c) => {
      return c.json({ success: true, bytes: (await c.req.arrayBuffer()).byteLength });
    }),
  bodyRules: [{
    method: "POST",
    path: "/api/test/upload",
    maxBytes: UPLOAD_LIMIT,
    contentTypes: ["text/csv"],
  }],
};

async function rowCounts(svc: TestService) {
  const [r] = await svc.db.sql`
    select (select count(*)::int from merchants) as merchants,
           (select count(*)::int from consumers) as consumers,
           (select count(*)::int from wallets) as wallets,
           (select count(*)::int from api_keys) as keys,
           (select count(*)::int from payments) as payments`;
  return r;
}

Deno.test("request limits: size and media type", async (t) => {
  const svc = await startTestService({
    env: { RATE_LIMITS: "off", MAX_BODY_BYTES: String(LIMIT) },
    modules: [...modules, frameworkTestModule().mod, uploadModule],
  });
  const call = api(svc);
  const url = (p: string) => `${svc.baseUrl}${p}`;
  try {
    const m: TestMerchant = await createMerchant(svc);
    const link = await call("POST", "/api/merchant/payment-link", {
      cookie: m.cookie,
      body: { amount: "1.00" },
    });
    assert.equal(link.status, 201, link.text);
    const reference = link.json.reference as string;

    await t.step(
      "a declared Content-Length over the limit → 413 before the body is read",
      async () => {
        const before = await rowCounts(svc);
        const c = await rawConnect(svc.port!);
        try {
          // 50 MB declared, one byte sent: the answer comes without the rest.
          await c.send(
            "POST /api/consumer/session HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
              "Content-Length: 52428800\r\n\r\n{",
          );
          const r = await c.read({ timeoutMs: 10_000, until: completeResponse });
          const res = parseResponse(r.text);
          assert.equal(res.status, 413, r.text);
          assert.match(res.headers, /content-type: application\/json/i);
          assert.deepEqual(JSON.parse(res.body), {
            success: false,
            error: TOO_LARGE,
            hint: `This endpoint accepts at most ${LIMIT} bytes.`,
          });
        } finally {
          c.close();
        }
        const big = JSON.stringify({
          email: "big@example.com",
          password: "correct horse battery",
          businessName: "x".repeat(LIMIT),
        });
        for (const path of ["/api/merchant/signup", "/api/consumer/session"]) {
          const res = await fetch(url(path), {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: big,
          });
          assert.equal(res.status, 413, path);
          assert.equal((await res.json()).error, TOO_LARGE);
        }
        assert.deepEqual(await rowCounts(svc), before, "nothing was written");
      },
    );

    await t.step("a chunked body is counted as it streams and stopped at the limit", async () => {
      const before = await rowCounts(svc);
      const chunk = new TextEncoder().encode(" ".repeat(16 * 1024));
      let sent = 0;
      const body = new ReadableStream<Uint8Array>({
        pull(ctl) {
          if (sent >= 8) return ctl.close();
          sent++;
          ctl.enqueue(chunk);
        },
      });
      const res = await fetch(url("/api/consumer/session"), {
        method: "POST",
        headers: { "content-type": "application/json" },
        body,
      });
      assert.equal(res.status, 413);
      assert.equal((await res.json()).error, TOO_LARGE);
      assert.deepEqual(await rowCounts(svc), before);
    });

    await t.step("a body at the limit is read", async () => {
      const body = JSON.stringify({ pad: "y".repeat(LIMIT - 20) });
      assert.ok(body.length <= LIMIT);
      const res = await fetch(url("/api/test/echo"), {
        method: "POST",
        headers: { "content-type": "application/json" },
        body,
      });
      assert.equal(res.status, 200);
      assert.equal((await res.json()).body.pad.length, LIMIT - 20);
    });

    await t.step("a route may declare a larger limit and its own media type", async () => {
      const csv = (n: number) => "a,b\n".repeat(n / 4);
      const ok = await fetch(url("/api/test/upload"), {
        method: "POST",
        headers: { "content-type": "text/csv" },
        body: csv(200 * 1024),
      });
      assert.equal(ok.status, 200);
      assert.deepEqual(await ok.json(), { success: true, bytes: 200 * 1024 });
      const big = await fetch(url("/api/test/upload"), {
        method: "POST",
        headers: { "content-type": "text/csv" },
        body: csv(UPLOAD_LIMIT + 4),
      });
      assert.equal(big.status, 413);
      assert.deepEqual(await big.json(), {
        success: false,
        error: TOO_LARGE,
        hint: `This endpoint accepts at most ${UPLOAD_LIMIT} bytes.`,
      });
      const json = await fetch(url("/api/test/upload"), {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: "{}",
      });
      assert.equal(json.status, 415);
      assert.equal((await json.json()).error, "Content-Type must be one of: text/csv.");
    });

    await t.step("JSON endpoints refuse other media types with 415, writing nothing", async () => {
      const endpoints: [string, string, Record<string, string>][] = [
        ["POST", "/api/merchant/signup", {}],
        ["POST", "/api/merchant/verify", {}],
        ["POST", "/api/merchant/login", {}],
        ["PATCH", "/api/merchant/wallet", { cookie: m.cookie }],
        ["POST", "/api/merchant/wallet/connect", { cookie: m.cookie }],
        ["POST", "/api/keys", { cookie: m.cookie }],
        ["POST", "/api/consumer/session", {}],
        ["POST", "/api/merchant/payment-link", { cookie: m.cookie }],
        ["POST", "/api/payments/initialize", { "x-api-key": m.apiKey }],
        ["POST", `/checkout/${reference}/calldata`, {}],
        ["POST", `/checkout/${reference}/submitted`, {}],
        ["POST", "/rpc/testnet", {}],
      ];
      const json = JSON.stringify({
        email: "form@example.com",
        password: "correct horse battery",
        businessName: "Form Shop",
        amount: "1.00",
        type: "secret",
        environment: "test",
        walletProvider: "MANAGED",
      });
      const multipart = new FormData();
      multipart.set("email", "form@example.com");
      const bodies: [string | undefined, BodyInit][] = [
        ["text/plain", json],
        ["text/plain;charset=UTF-8", json],
        ["application/x-www-form-urlencoded", "email=form%40example.com&amount=1.00"],
        [undefined, multipart], // fetch sets multipart/form-data with its boundary
        ["application/xml", "<signup><email>form@example.com</email></signup>"],
        ["application/jsonx", json],
        [undefined, new Blob([json])], // no Content-Type at all
      ];
      const before = await rowCounts(svc);
      for (const [method, path, headers] of endpoints) {
        for (const [type, body] of bodies) {
          const res = await fetch(url(path), {
            method,
            headers: { ...headers, ...(type ? { "content-type": type } : {}) },
            body,
          });
          const what = `${method} ${path} ${type ?? "(none)"}`;
          assert.equal(res.status, 415, what);
          assert.match(res.headers.get("content-type") ?? "", /application\/json/, what);
          assert.deepEqual(await res.json(), {
            success: false,
            error: NOT_JSON,
            hint: "Send a JSON object with Content-Type: application/json.",
          }, what);
        }
      }
      assert.deepEqual(await rowCounts(svc), before, "no account, key or payment was made");
    });

    await t.step("application/json with parameters or in other case is JSON", async () => {
      for (
        const type of [
          "application/json; charset=utf-8",
          "Application/JSON",
          "application/json;charset=UTF-8",
        ]
      ) {
        const res = await fetch(url("/api/test/echo"), {
          method: "POST",
          headers: { "content-type": type },
          body: JSON.stringify({ a: 1 }),
        });
        assert.equal(res.status, 200, type);
        assert.deepEqual(await res.json(), { success: true, body: { a: 1 } });
      }
    });

    await t.step("a POST without a body needs no Content-Type", async () => {
      const roll = await fetch(url("/api/merchant/webhook-secret/roll"), {
        method: "POST",
        headers: { cookie: m.cookie },
      });
      assert.equal(roll.status, 200);
      await roll.body?.cancel();
      const out = await call("DELETE", "/api/keys/00000000-0000-0000-0000-000000000000", {
        cookie: m.cookie,
      });
      assert.equal(out.status, 404);
    });

    await t.step("dashboard forms still post form bodies; their text is checked too", async () => {
      // Reaches the dashboard (its CSRF check answers), not the JSON rule.
      const form = await fetch(url("/dashboard/login"), {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: "email=a%40example.com&password=x",
        redirect: "manual",
      });
      assert.equal(form.status, 403);
      await form.body?.cancel();
      const before = await rowCounts(svc);
      const nul = await fetch(url("/dashboard/signup"), {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: "email=n%40example.com&password=correct+horse&businessName=a%00b",
      });
      assert.equal(nul.status, 400);
      assert.equal(await nul.text(), "businessName contains characters that are not allowed.");
      assert.deepEqual(await rowCounts(svc), before);
    });
  } finally {
    await svc.close();
  }
});

Deno.test("request limits: slow clients", async (t) => {
  // A small deadline from configuration; the bounds the test waits for are generous.
  const svc = await startTestService({ env: { RATE_LIMITS: "off", BODY_READ_TIMEOUT_MS: "300" } });
  try {
    const post = (head: string) =>
      `POST /api/consumer/session HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n${head}\r\n`;
    const answer408 = async (c: RawConn) => {
      const r = await c.read({ timeoutMs: 15_000, until: completeResponse });
      assert.equal(r.timedOut, false, `an answer came (read: ${JSON.stringify(r.text)})`);
      const res = parseResponse(r.text);
      assert.equal(res.status, 408, r.text);
      assert.match(res.headers, /content-type: application\/json/i);
      assert.deepEqual(JSON.parse(res.body), {
        success: false,
        error: "The request body was not received in time.",
        hint: "Send the whole body without pausing.",
      });
    };

    await t.step(
      "a body that stops half way → 408 at the deadline; nothing is written",
      async () => {
        const before = await rowCounts(svc);
        const c = await rawConnect(svc.port!);
        try {
          await c.send(post("Content-Length: 100\r\n") + '{"wal');
          await answer408(c);
        } finally {
          c.close();
        }
        assert.deepEqual(await rowCounts(svc), before, "no account was made");
      },
    );

    await t.step("a chunked body that stalls → 408", async () => {
      const c = await rawConnect(svc.port!);
      try {
        await c.send(post("Transfer-Encoding: chunked\r\n") + "2\r\n{ \r\n");
        await answer408(c);
      } finally {
        c.close();
      }
    });

    await t.step("a body dripped a byte at a time is cut off at the deadline", async () => {
      const c = await rawConnect(svc.port!);
      // The client's own pace, not synchronisation: a byte every 20 ms until an answer comes.
      const drip = setInterval(() => {
        if (c.received()) clearInterval(drip);
        else c.send(" ").catch(() => clearInterval(drip));
      }, 20);
      try {
        await c.send(post("Content-Length: 100000\r\n") + "{");
        await answer408(c);
      } finally {
        clearInterval(drip);
        c.close();
      }
    });

    await t.step(
      "clients holding unfinished request heads (not bounded by Deno.serve) do not stop others",
      async () => {
        const held = await Promise.all(Array.from({ length: 100 }, () => rawConnect(svc.port!)));
        try {
          for (const c of held) await c.send("POST /api/consumer/session HTTP/1.1\r\nHost: x\r\n");
          // A bodiless request, so this service's 300 ms body deadline plays no part.
          const res = await fetch(`${svc.baseUrl}/healthz`);
          assert.equal(res.status, 200);
          await res.body?.cancel();
        } finally {
          for (const c of held) c.close();
        }
      },
    );
  } finally {
    await svc.close();
  }
});
