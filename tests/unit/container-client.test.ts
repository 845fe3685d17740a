/**
 * The container check's client (scripts/container/flow.ts): a 503 with Retry-After (the
 * deployment's database unreachable, nothing done) is asked again after the time it names, as an
 * API client would, and recorded; anything else, and a 503 past the bound, is the answer.
 * A tiny real server; the waits on an injected clock.
 */
import assert from "node:assert/strict";
import { http, unavailable } from "../../scripts/container/flow.ts";

function server(answers: (() => Response)[]) {
  let i = 0;
  const seen: string[] = [];
  const s = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    seen.push(`${req.method} ${new URL(req.url).pathname} ${await req.text()}`);
    return answers[Math.min(i++, answers.length - 1)]();
  });
  return { base: `http://127.0.0.1:${s.addr.port}`, seen, close: () => s.shutdown() };
}

const gone = (retryAfter?: string) => () =>
  Response.json(
    { success: false, error: "The service is temporarily unavailable. Retry shortly.", hint: "db" },
    { status: 503, headers: retryAfter ? { "retry-after": retryAfter } : {} },
  );

Deno.test("container check client: a 503 with Retry-After is asked again after it, and recorded", async () => {
  const s = server([gone("2"), gone("2"), () => Response.json({ ok: true }, { status: 201 })]);
  let clock = 0;
  const waits: number[] = [];
  const client = http(s.base, {
    now: () => clock,
    sleep: (ms) => {
      waits.push(ms);
      clock += ms;
      return Promise.resolve();
    },
  });
  const before = unavailable.length;
  try {
    const r = await client.call("POST", "/api/merchant/signup", { body: { a: 1 } });
    assert.equal(r.status, 201);
    assert.deepEqual(waits, [2000, 2000]);
    assert.deepEqual(s.seen, Array(3).fill('POST /api/merchant/signup {"a":1}'));
    const recorded = unavailable.slice(before);
    assert.equal(recorded.length, 2);
    assert.deepEqual(
      recorded.map((u) => [u.method, u.path, u.hint]),
      Array(2).fill(["POST", "/api/merchant/signup", "db"]),
    );
  } finally {
    await s.close();
  }
});

Deno.test("container check client: a 503 without Retry-After, a 500, or past four minutes is the answer", async () => {
  for (
    const [answers, status, asked] of [
      [[gone(), () => new Response("no", { status: 201 })], 503, 1],
      [[() => new Response("boom", { status: 500 })], 500, 1],
      // 120 s each: asked at 0, 120 and 240 s; the next ask would come past the 240 s bound.
      [[gone("120")], 503, 3],
    ] as const
  ) {
    const s = server([...answers]);
    let clock = 0;
    const client = http(s.base, {
      now: () => clock,
      sleep: (ms) => {
        clock += ms;
        return Promise.resolve();
      },
    });
    try {
      const r = await client.call("GET", "/readyz");
      assert.equal(r.status, status);
      assert.equal(s.seen.length, asked);
    } finally {
      await s.close();
    }
  }
});
