/**
 * One webhook POST against a tiny real receiver: the response's status decides the attempt, as
 * soon as it arrives, whatever the body does after it.
 */
import assert from "node:assert/strict";
import { postWebhook } from "../../src/modules/webhooks/webhooks.http.ts";

Deno.test("webhook POST: a 200 whose body trickles is delivered, not timed out", async () => {
  const stop = new AbortController();
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {}, signal: stop.signal },
    async (req) => {
      await req.text();
      const path = new URL(req.url).pathname;
      if (path === "/slow-body") {
        // Headers at once, then a byte every 100 ms for far longer than the timeout.
        let n = 0;
        let timer: ReturnType<typeof setInterval> | undefined;
        const body = new ReadableStream<Uint8Array>({
          start(c) {
            timer = setInterval(() => {
              try {
                c.enqueue(new Uint8Array([0x20]));
                if (++n >= 100) {
                  clearInterval(timer);
                  c.close();
                }
              } catch {
                clearInterval(timer);
              }
            }, 100);
          },
          cancel() {
            clearInterval(timer);
          },
        });
        return new Response(body, { status: 200 });
      }
      if (path === "/hang") return await new Promise<Response>(() => {});
      return new Response("no", { status: 503 });
    },
  );
  const base = `http://127.0.0.1:${server.addr.port}`;
  const post = (path: string) =>
    postWebhook(new URL(`${base}${path}`), "{}", { "content-type": "application/json" }, {
      timeoutMs: 1_000,
      policy: "any",
    });
  try {
    const slow = await post("/slow-body");
    assert.equal(slow.status, 200);
    assert.equal(slow.error, undefined);
    const failed = await post("/busy");
    assert.equal(failed.status, 503);
    const hung = await post("/hang");
    assert.equal(hung.status, undefined);
    assert.equal(hung.error, "timed out after 1000 ms");
  } finally {
    stop.abort();
    await server.finished.catch(() => {});
  }
});
