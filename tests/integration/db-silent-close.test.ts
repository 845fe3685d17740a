/**
 * A peer that accepts the pool's connections and closes them before answering anything (a TCP
 * proxy or load balancer with no database behind it): a query waits out a cut shorter than the
 * connect timeout, and past it fails as a database that cannot be reached (a 503 for a request, a
 * wait for a starting role), after a few connections, not a loop of them; the pool serves again
 * once the database answers. postgres.js alone connects again at once, forever, and the query
 * never settles (src/db/sockets.ts); without it this test reports the query hung.
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
    // A connect timeout of 1 s: how long queries wait out such a peer before they fail.
    const sql = createSql(url.toString(), { max: 4, connectTimeoutSeconds: 1 });
    try {
      const one = await settled(sql`select 1 as one`);
      assert.notEqual(one, "hung", "the query never settled: postgres.js loops on its connection");
      assert.ok(databaseNotReady(one), `fails as a database that cannot be reached: ${one}`);
      assert.equal((one as { code?: string }).code, "CONNECTION_CLOSED");
      // Tries 25 ms, 50, 100, 200, 250, 250 ms apart within the second, then the refusal;
      // postgres.js alone made ~350 a second for as long as the peer closed them.
      assert.ok(accepted <= 12, `a few connections, not a loop: ${accepted}`);

      // One on each connection of the pool at once: each settles, failed the same way.
      const before = accepted;
      const many = await Promise.all(
        Array.from({ length: 4 }, (_, i) => settled(sql`select ${i}::int as i`)),
      );
      for (const r of many) assert.ok(databaseNotReady(r), `each fails as unreachable: ${r}`);
      assert.ok(accepted - before <= 24, `a few connections, not a loop: ${accepted - before}`);

      // A pool of its own (no run of closes behind it) fails its query as unreachable after a
      // few connections, not a loop of them.
      const refusedAlone = async (poolUrl: string, what: string) => {
        const pool = createSql(poolUrl, { max: 1, connectTimeoutSeconds: 1 });
        try {
          const at = accepted;
          const r = await settled(pool`select 4 as four`);
          assert.notEqual(r, "hung", `the query never settled: ${what}`);
          assert.ok(databaseNotReady(r), `fails as unreachable: ${r}`);
          assert.ok(accepted - at <= 12, `a few connections, not a loop: ${accepted - at}`);
        } finally {
          await pool.end({ timeout: 1 });
        }
      };
      // A peer that answers in another protocol before its close: the same.
      mode = "garble";
      await refusedAlone(url.toString(), "behind a garbling peer");
      // A pool that asks for TLS: a peer that closes before answering its TLS request, the same.
      mode = "close";
      const tlsUrl = new URL(url);
      tlsUrl.searchParams.set("sslmode", "require");
      await refusedAlone(tlsUrl.toString(), "postgres.js loops under TLS");

      // A short cut within the connect timeout is waited out: the query answers once the
      // database does (a pool of its own, with no run of closes behind it).
      mode = "close";
      const patient = createSql(url.toString(), { max: 1, connectTimeoutSeconds: 10 });
      try {
        const at = accepted;
        const waiting = settled(patient`select 5 as five`);
        await waitFor(() => accepted - at >= 2, { what: "two connections closed by the peer" });
        mode = "pass";
        const answered = await waiting;
        assert.equal(answered, "answered", `waited out the cut: ${answered}`);
      } finally {
        await patient.end({ timeout: 1 });
      }

      // The database answers again: the first pool serves too.
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
