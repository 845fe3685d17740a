/**
 * A PostgreSQL that ends its connections (a FIN from its side, as when it crashes or restarts)
 * while queries are in flight: every query settles (answered or failed), and the promise Deno's
 * node:net leaves rejected when postgres.js writes to such a connection does not end the process
 * (src/db/ended-sockets.ts). Without the guard this test fails on that unhandled rejection.
 *
 * The server is the run's real one, behind a small TCP front that half-closes every connection
 * it carries at a random moment of each round. Whether a round's write lands in the moment
 * between a connection's FIN and its close is the machine's timing (within ~40 rounds on a quiet
 * machine, none in 200 on one loaded eightfold), so that test asserts what holds whether or not
 * it does: every query settles, the process lives, the pool serves again. The guard itself is
 * checked apart, with the very rejection Deno leaves (the second test): without the guard, that
 * test fails on the unhandled rejection.
 */
import assert from "node:assert/strict";
import { createSql } from "../../src/db/client.ts";
import { endedSocketWritesDropped, isEndedSocketWrite } from "../../src/db/ended-sockets.ts";
import { createTestDatabase } from "../helpers/db.ts";
import { waitFor } from "../helpers/poll.ts";
import { passThrough } from "../helpers/tcp-pass.ts";

Deno.test({
  name:
    "database connections ended by the server mid-query: every query settles, the process lives",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const db = await createTestDatabase({ migrate: false });
    const real = new URL(db.url);
    const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const conns = new Set<Deno.Conn>();
    (async () => {
      for await (const conn of listener) {
        conns.add(conn);
        passThrough(conn, { hostname: real.hostname, port: Number(real.port || 5432) })
          .finally(() => conns.delete(conn));
      }
    })();
    const url = new URL(db.url);
    url.hostname = "127.0.0.1";
    url.port = String((listener.addr as Deno.NetAddr).port);
    const sql = createSql(url.toString(), { max: 4 });
    const before = endedSocketWritesDropped();
    let answered = 0, failed = 0, rounds = 0;
    const deadline = Date.now() + 60_000;
    try {
      // Rounds until the leftover rejection was seen, or a bound: the race is the machine's.
      while (endedSocketWritesDropped() === before && Date.now() < deadline && rounds < 120) {
        rounds++;
        const queries = Array.from(
          { length: 20 },
          (_, i) =>
            sql`select pg_sleep(${Math.random() * 0.02}), ${i}::int as i`.then(
              () => answered++,
              () => failed++,
            ),
        );
        await new Promise((r) => setTimeout(r, Math.random() * 15));
        for (const c of conns) await c.closeWrite().catch(() => {});
        await Promise.all(queries);
        for (const c of conns) {
          try {
            c.close();
          } catch { /* closed */ }
        }
      }
      assert.equal(answered + failed, rounds * 20, "every query settled");
      assert.ok(failed > 0 && answered > 0, `${answered} answered, ${failed} failed`);
      // The pool serves again (a connection it still holds may be one just cut: failed, then a
      // new one).
      const n = await waitFor(
        () => sql`select 41 + 1 as n`.then(([r]) => r.n as number, () => undefined),
        { timeoutMs: 10_000, what: "an answer through the pool again" },
      );
      assert.equal(n, 42);
    } finally {
      listener.close();
      await sql.end({ timeout: 1 });
      await db.drop();
    }
  },
});

Deno.test("the rejection a write to an ended connection leaves is dropped, the process lives", async () => {
  // As Deno's node:net leaves it under postgres.js's write: a promise nobody holds, rejected.
  createSql("postgres://127.0.0.1:1/none", { max: 1 }).end({ timeout: 0 }); // installs the guard
  const before = endedSocketWritesDropped();
  const ended = Object.assign(new Error("This socket has been ended by the other party"), {
    code: "EPIPE",
  });
  ended.stack = `Error: This socket has been ended by the other party
    at Socket._writeAfterFIN [as write] (ext:deno_node/net.ts:1:10175)
    at Immediate.nextWrite (file:///app/node_modules/.deno/postgres@3.4.9/node_modules/postgres/src/connection.js:255:22)`;
  Promise.reject(ended);
  await waitFor(() => endedSocketWritesDropped() > before, {
    timeoutMs: 5_000,
    what: "the rejection dropped",
  });
  assert.equal(endedSocketWritesDropped(), before + 1);
});

Deno.test("isEndedSocketWrite: that rejection only", () => {
  const ended = Object.assign(new Error("This socket has been ended by the other party"), {
    code: "EPIPE",
  });
  ended.stack = `Error: This socket has been ended by the other party
    at Socket._writeAfterFIN [as write] (ext:deno_node/net.ts:1:10175)
    at Immediate.nextWrite (file:///app/node_modules/.deno/postgres@3.4.9/node_modules/postgres/src/connection.js:255:22)`;
  assert.equal(isEndedSocketWrite(ended), true);
  const elsewhere = Object.assign(new Error(ended.message), { code: "EPIPE" });
  elsewhere.stack =
    `Error: ${ended.message}\n    at Socket._writeAfterFIN (ext:deno_node/net.ts:1:1)`;
  assert.equal(isEndedSocketWrite(elsewhere), false, "not postgres.js's connection");
  assert.equal(isEndedSocketWrite(Object.assign(new Error("boom"), { code: "EPIPE" })), false);
  assert.equal(isEndedSocketWrite("This socket has been ended by the other party"), false);
  // A connection's start refused by a recovering server, left over the same way (seen with the
  // service's pools while its server crashed again and again).
  const recovering = Object.assign(new Error("the database system is in recovery mode"), {
    code: "57P03",
  });
  recovering.stack = `PostgresError: the database system is in recovery mode
    at ErrorResponse (file:///app/node_modules/.deno/postgres@3.4.9/node_modules/postgres/src/connection.js:815:30)`;
  assert.equal(isEndedSocketWrite(recovering), true);
  const refused = Object.assign(new Error("duplicate key"), { code: "23505" });
  refused.stack = recovering.stack;
  assert.equal(isEndedSocketWrite(refused), false, "a refused statement is not dropped");
});
