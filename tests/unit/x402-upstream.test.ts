/**
 * The upstream client's contract under the `any` policy (development):
 * bodies and headers through unchanged, redirects not followed, non-2xx a failure with its status,
 * the 1 MiB cap (declared or streamed), the hard timeout and an unreachable host, against a tiny
 * real HTTP server.
 */
import assert from "node:assert/strict";
import {
  callUpstream,
  UPSTREAM_MAX_BYTES,
  upstreamRefusal,
} from "../../src/modules/x402/x402.upstream.ts";

Deno.test("x402 upstream client under the `any` policy", async (t) => {
  const hang = Promise.withResolvers<void>();
  const seen: { method: string; body: string; contentType: string | null }[] = [];
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, async (req) => {
    const path = new URL(req.url).pathname;
    seen.push({
      method: req.method,
      body: await req.text(),
      contentType: req.headers.get("content-type"),
    });
    if (path === "/json") return Response.json({ ok: true });
    if (path === "/redirect") return Response.redirect("http://127.0.0.1:1/elsewhere", 302);
    if (path === "/busy") return new Response("busy", { status: 503 });
    if (path === "/big") return new Response(new Uint8Array(UPSTREAM_MAX_BYTES + 1));
    if (path === "/big-stream") {
      const chunk = new Uint8Array(64 * 1024);
      let sent = 0;
      return new Response(
        new ReadableStream({
          pull(c) {
            if (sent > UPSTREAM_MAX_BYTES) return c.close();
            sent += chunk.length;
            c.enqueue(chunk);
          },
        }),
      );
    }
    if (path === "/hang") await hang.promise;
    return new Response("plain text", { headers: { "content-type": "text/plain" } });
  });
  const base = `http://127.0.0.1:${server.addr.port}`;
  const call = (path: string, req: { method: string; body?: string } = { method: "GET" }) =>
    callUpstream(new URL(base + path), req, { timeoutMs: 5_000, policy: "any" });
  try {
    await t.step("a GET answers its body and content type", async () => {
      const r = await call("/json");
      assert(r.ok, JSON.stringify(r));
      assert.deepEqual(r.status, 200);
      assert(r.contentType?.startsWith("application/json"));
      assert.deepEqual(JSON.parse(new TextDecoder().decode(r.body)), { ok: true });
    });

    await t.step("a POST sends its body as JSON", async () => {
      const r = await call("/echo", { method: "POST", body: '{"q":1}' });
      assert(r.ok);
      assert.deepEqual(seen.at(-1), {
        method: "POST",
        body: '{"q":1}',
        contentType: "application/json",
      });
      assert.deepEqual(new TextDecoder().decode(r.body), "plain text");
    });

    await t.step("a redirect is the upstream's answer, not followed", async () => {
      const calls = seen.length;
      const r = await call("/redirect");
      assert.deepEqual(r.ok, false);
      assert.deepEqual(!r.ok && r.status, 302);
      assert.deepEqual(seen.length, calls + 1);
    });

    await t.step("a 503 fails with its status", async () => {
      const r = await call("/busy");
      assert.deepEqual(r.ok, false);
      assert.deepEqual(!r.ok && r.status, 503);
    });

    await t.step("more than 1 MiB is refused, declared or streamed", async () => {
      for (const path of ["/big", "/big-stream"]) {
        const r = await call(path);
        assert.deepEqual(r.ok, false, path);
        assert.deepEqual(!r.ok && r.error, "upstream body larger than 1 MiB", path);
        // The buyer's answer says what went wrong, not "Upstream API returned 200".
        assert.ok(!r.ok);
        const refusal = upstreamRefusal(r);
        assert.equal(refusal.code, "x402_upstream_unreachable", path);
        assert.equal(refusal.details.hint, "upstream body larger than 1 MiB");
      }
      const busy = await call("/busy");
      assert.ok(!busy.ok);
      assert.equal(upstreamRefusal(busy).code, "x402_upstream_failed");
    });

    await t.step("an upstream that never answers times out", async () => {
      const r = await callUpstream(new URL(`${base}/hang`), { method: "GET" }, {
        timeoutMs: 50,
        policy: "any",
      });
      hang.resolve();
      assert.deepEqual(r, { ok: false, error: "timed out after 50 ms" });
    });

    await t.step("an unreachable upstream fails without a status", async () => {
      const r = await callUpstream(new URL("http://127.0.0.1:1/x"), { method: "GET" }, {
        timeoutMs: 5_000,
        policy: "any",
      });
      assert.deepEqual(r.ok, false);
      assert.deepEqual(!r.ok && r.status, undefined);
    });
  } finally {
    hang.resolve();
    await server.shutdown();
  }
});
