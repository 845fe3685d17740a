import assert from "node:assert/strict";
import { startTestService } from "../helpers/service.ts";
import { frameworkTestModule } from "../helpers/test-module.ts";
import { createLogger } from "../../src/log.ts";

async function json(res: Response) {
  assert.match(res.headers.get("content-type") ?? "", /application\/json/);
  return await res.json();
}

Deno.test("http: the error contract, 404s, malformed JSON and request ids", async (t) => {
  const { mod } = frameworkTestModule();
  const logs: string[] = [];
  const svc = await startTestService({
    modules: [mod],
    log: createLogger({ level: "info", sink: (l) => logs.push(l) }),
  });
  const url = (p: string) => `${svc.baseUrl}${p}`;
  try {
    await t.step("unknown /api path → 404 in the error form", async () => {
      const res = await fetch(url("/api/does-not-exist"), { method: "POST" });
      assert.equal(res.status, 404);
      assert.deepEqual(await json(res), { success: false, error: "No such endpoint." });
    });

    await t.step("malformed JSON → 400 with a clear message", async () => {
      for (const body of ["{not json", '{"a":', "[1,2]", "42"]) {
        const res = await fetch(url("/api/test/echo"), {
          method: "POST",
          headers: { "content-type": "application/json" },
          body,
        });
        assert.equal(res.status, 400, body);
        const b = await json(res);
        assert.equal(b.success, false);
        assert.match(b.error, /^(Malformed JSON body\.|The request body must be a JSON object\.)$/);
        assert.ok(b.hint);
      }
    });

    await t.step("valid JSON is echoed", async () => {
      const res = await fetch(url("/api/test/echo"), {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ a: 1 }),
      });
      assert.equal(res.status, 200);
      assert.deepEqual(await json(res), { success: true, body: { a: 1 } });
    });

    await t.step("ApiError carries its status, text, hint and extra fields", async () => {
      const res = await fetch(url("/api/test/refuse"));
      assert.equal(res.status, 400);
      assert.deepEqual(await json(res), {
        success: false,
        error: "Nope.",
        hint: "Try again.",
        field: "x",
      });
      const bare = await fetch(url("/api/test/bare"));
      assert.equal(bare.status, 404);
      assert.deepEqual(await json(bare), { error: "Not found" });
    });

    await t.step(
      "an unexpected error → 500 with a generic body, logged without secrets",
      async () => {
        const res = await fetch(url("/api/test/boom"));
        assert.equal(res.status, 500);
        const body = await json(res);
        assert.deepEqual(body, { success: false, error: "Internal server error." });
        const rid = res.headers.get("x-request-id");
        const line = logs.find((l) => l.includes("unhandled error") && l.includes(rid!));
        assert.ok(line, "the failure is logged with its request id");
      },
    );

    await t.step("every response has a request id; a caller's plain id is kept", async () => {
      const a = await fetch(url("/healthz"));
      await a.body?.cancel();
      assert.match(a.headers.get("x-request-id") ?? "", /^[0-9a-f-]{36}$/);
      const b = await fetch(url("/healthz"), { headers: { "x-request-id": "trace-123" } });
      await b.body?.cancel();
      assert.equal(b.headers.get("x-request-id"), "trace-123");
    });

    await t.step("access log lines are JSON with method, path, status and duration", () => {
      const entries = logs.map((l) => JSON.parse(l)).filter((e) => e.msg === "request");
      const e = entries.find((x) => x.path === "/api/test/refuse");
      assert.ok(e);
      assert.equal(e.method, "GET");
      assert.equal(e.status, 400);
      assert.equal(typeof e.ms, "number");
    });
  } finally {
    await svc.close();
  }
});

Deno.test("http: /healthz and /readyz", async () => {
  const svc = await startTestService();
  try {
    const h = await fetch(`${svc.baseUrl}/healthz`);
    assert.equal(h.status, 200);
    assert.deepEqual(await json(h), { success: true, status: "ok" });

    const r = await fetch(`${svc.baseUrl}/readyz`);
    assert.equal(r.status, 200);
    const body = await json(r);
    assert.equal(body.status, "ready");
    assert.equal(body.checks.database.ok, true);

    // A migration missing from the database makes the service not ready.
    await svc.db.sql`delete from schema_migrations where version = 1`;
    const r2 = await fetch(`${svc.baseUrl}/readyz`);
    assert.equal(r2.status, 503);
    const b2 = await json(r2);
    assert.equal(b2.success, false);
    assert.deepEqual(b2.checks.database.detail.pendingMigrations, [1]);
  } finally {
    await svc.close();
  }
});
