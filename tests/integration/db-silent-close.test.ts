/**
 * A peer that accepts the pool's connections and closes them before answering anything (a TCP
 * proxy or load balancer with no database behind it): each query fails, as a database that cannot
 * be reached (a 503 for a request, a wait for a starting role), after one connection each, and the
 * pool serves again once the database answers. postgres.js alone connects again at once, forever,
 * and the query never settles (src/db/sockets.ts); without it this test reports the query hung.
 *
 * The database behind is the run's real one, behind a TCP front that closes each connection at
 * once, answers it in another protocol and closes it, or passes it through.
 */
import assert from "node:assert/strict";
import { createSql } from "../../src/db/client.ts";
import { databaseNotReady } from "../../src/db/wait.ts";
import { createTestDatabase } from "../helpers/db.ts";
import { waitFor } from "../helpers/poll.ts";
import { passThrough } from "../helpers/tcp-pass.ts";

/** A query's outcome, or "hung" if it has none within `ms` (a bound, not a wait for it). */
async function settled(q: Promise<unknown>, ms = 15_000): Promise<unknown> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const hung = new Promise((r) => timer = setTimeout(() => r("hung"), ms));
  try {
    return await Promise.race([q.then(() => "answered", (e: unknown) => e), hung]);
  } finally {
    clearTimeout(timer);
  }
}

Deno.test({
  name: "a peer that closes before answering: queries fail as unreachable, then the pool serves",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const db = await createTestDatabase({ migrate: false });
    const real = new URL(db.url);
    const target = { hostname: real.hostname, port: Number(real.port || 5432) };
    const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    let mode: "close" | "garble" | "pass" = "close";
    let accepted = 0;
    const conns = new Set<Deno.Conn>();
    (async () => {
      for await (const conn of listener) {
        accepted++;
        if (mode === "close") {
          conn.close();
          continue;
        }
        if (mode === "garble") {
          // A proxy's own answer in its own protocol, then its close.
          conn.write(new TextEncoder().encode("HTTP/1.1 502 Bad Gateway\r\n\r\n"))
            .catch(() => {}).finally(() => conn.close());
          continue;
        }
        conns.add(conn);
        passThrough(conn, target).finally(() => conns.delete(conn));
      }
    })();
    const url = new URL(db.url);
    url.hostname = "127.0.0.1";
    url.port = String((listener.addr as Deno.NetAddr).port);
    const sql = createSql(url.toString(), { max: 4 });
    try {
      const one = await settled(sql`select 1 as one`);
      assert.notEqual(one, "hung", "the query never settled: postgres.js loops on its connection");
      assert.ok(databaseNotReady(one), `fails as a database that cannot be reached: ${one}`);
      assert.equal((one as { code?: string }).code, "CONNECTION_CLOSED");
      assert.equal(accepted, 1, "one connection made for it, not a loop of them");

      // One on each connection of the pool at once: each settles, failed the same way. (More
      // would queue behind them and wait out postgres.js's backoff, shared by the pool and
      // growing with each failure up to 20 s, as for a database that refuses connections.)
      const before = accepted;
      const many = await Promise.all(
        Array.from({ length: 4 }, (_, i) => settled(sql`select ${i}::int as i`)),
      );
      for (const r of many) assert.ok(databaseNotReady(r), `each fails as unreachable: ${r}`);
      // The refusals are the pool's, not a connection's: one connection may try again while
      // another takes the refusal its close earned, so a few more than one each, never a loop.
      assert.ok(accepted - before <= 8, `a few connections, not a loop: ${accepted - before}`);

      // A peer that answers in another protocol before its close: the same (a pool of its own,
      // so that no refusal earned above answers for it).
      mode = "garble";
      const other = createSql(url.toString(), { max: 1 });
      try {
        const at = accepted;
        const garbled = await settled(other`select 4 as four`);
        assert.notEqual(garbled, "hung", "the query never settled behind a garbling peer");
        assert.ok(databaseNotReady(garbled), `fails as unreachable: ${garbled}`);
        assert.equal(accepted - at, 1, "one connection made for it");
      } finally {
        await other.end({ timeout: 1 });
      }

      // The database answers again: the pool serves (its connections back off after failures).
      mode = "pass";
      await waitFor(async () => (await sql`select 2 as two`)[0].two === 2, {
        what: "the pool to serve again",
      });
      const rows = await sql.begin(async (tx) => await tx`select 3 as three`);
      assert.equal(rows[0].three, 3);
    } finally {
      await sql.end({ timeout: 1 });
      for (const c of conns) {
        try {
          c.close();
        } catch { /* closed */ }
      }
      listener.close();
      await db.drop();
    }
  },
});
