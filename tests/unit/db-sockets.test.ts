/** src/db/sockets.ts: the start-up reader, the run of closes and its refusals, the pauses. */
import assert from "node:assert/strict";
import {
  ClosedBeforeAnswering,
  poolSockets,
  RefusedSocket,
  silentPauseMs,
  StartupReader,
} from "../../src/db/sockets.ts";
import { isEndedSocketWrite } from "../../src/db/ended-sockets.ts";
import { databaseNotReady } from "../../src/db/wait.ts";

/** One backend message: its type, its length (itself included), its payload. */
function message(type: string, payload: number[] = []): number[] {
  const n = payload.length + 4;
  return [type.charCodeAt(0), n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255, ...payload];
}

const startup = [
  ...message("R", [0, 0, 0, 0]), // AuthenticationOk
  ...message("S", [...new TextEncoder().encode("server_version\u000018.4\u0000")]),
  ...message("K", [0, 0, 0, 7, 1, 2, 3, 4]),
  ...message("Z", ["I".charCodeAt(0)]),
];

Deno.test("start-up reader: ready at ReadyForQuery, whatever the chunks", () => {
  for (const size of [1, 2, 3, 5, 7, startup.length]) {
    const r = new StartupReader();
    const states = [];
    for (let i = 0; i < startup.length; i += size) {
      states.push(r.read(Uint8Array.from(startup.slice(i, i + size))));
    }
    assert.equal(states.at(-1), "ready", `chunks of ${size}`);
    assert.ok(states.slice(0, -1).every((s) => s === "starting"), `chunks of ${size}`);
  }
});

Deno.test("start-up reader: PostgreSQL's refusal, a proxy's own answer, and silence", () => {
  const refused = new StartupReader();
  const e = message("E", [...new TextEncoder().encode("SFATAL\u0000C57P03\u0000\u0000")]);
  assert.equal(refused.read(Uint8Array.from(e)), "refused");

  const proxy = new StartupReader();
  assert.equal(proxy.read(new TextEncoder().encode("HTTP/1.1 502 Bad Gateway\r\n\r\n")), "garbled");

  const partial = new StartupReader();
  assert.equal(partial.read(Uint8Array.from(startup.slice(0, 12))), "starting");
  assert.equal(partial.state, "starting");
  // Once decided, later bytes change nothing.
  assert.equal(refused.read(Uint8Array.from(startup)), "refused");
});

Deno.test("a refused socket's error reads as a database that cannot be reached", () => {
  const e = new ClosedBeforeAnswering("db.internal", 5432);
  assert.ok(databaseNotReady(e));
  assert.equal(e.code, "CONNECTION_CLOSED");
  assert.match(e.message, /db\.internal:5432 closed the connection before answering/);
  // Left over in one of postgres.js's own promises, it is dropped as its own errors are.
  assert.ok(isEndedSocketWrite(e));
  assert.ok(!isEndedSocketWrite(new Error("the database at db.internal:5432 closed")));
});

Deno.test("the pause before a socket made during a run of closes: 25 ms doubling to 250 ms", () => {
  assert.deepEqual([1, 2, 3, 4, 5, 6, 40].map(silentPauseMs), [25, 50, 100, 200, 250, 250, 250]);
});

Deno.test({
  name: "a run of closes: paused tries, a refusal once it is older than the bound, then a try",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    // A peer that accepts and closes at once.
    const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    (async () => {
      for await (const c of listener) c.close();
    })();
    const target = {
      host: ["127.0.0.1"],
      port: [(listener.addr as Deno.NetAddr).port],
      connect_timeout: 1,
    };
    let t = 0;
    const make = poolSockets(() => t);
    const closed = (s: { once(event: "close", f: () => void): unknown }) =>
      new Promise<void>((r) => s.once("close", () => r()));
    const tryOnce = async () => {
      const s = await make(target);
      if (s instanceof RefusedSocket) {
        s.on("error", () => {});
        await closed(s);
        return "refused";
      }
      await closed(s);
      return "tried";
    };
    try {
      assert.equal(await tryOnce(), "tried"); // the run starts at 0
      t = 500;
      assert.equal(await tryOnce(), "tried"); // within the bound: a try (after its pause)
      t = 1_100;
      assert.equal(await tryOnce(), "refused"); // the run is older than 1 s
      assert.equal(await tryOnce(), "tried"); // a refusal and a try take turns
      t = 1_200;
      assert.equal(await tryOnce(), "refused");
      assert.equal(await tryOnce(), "tried");
      // Idle since (no close for longer than the bound): the run is over, and the database gets a
      // try at once where the turns would have refused.
      t = 10_000;
      assert.equal(await tryOnce(), "tried");
    } finally {
      listener.close();
    }
  },
});
