/**
 * A reserved connection whose session the server ended, under a statement of it or while it was
 * idle (porsager/postgres#1208): every later statement through the same handle fails at once with
 * a connection error instead of taking the process down (postgres.js writes it to a connection
 * with no socket, an uncatchable TypeError); `release()` does not put the dead connection among
 * the open ones; and the pool goes on serving. Without the guard (src/db/transactions.ts), this
 * file's process dies.
 */
import assert from "node:assert/strict";
import postgres from "postgres";
import { createSql } from "../../src/db/client.ts";
import { connectionGone, guardTransactions } from "../../src/db/transactions.ts";
import { createTestDatabase } from "../helpers/db.ts";
import { waitFor } from "../helpers/poll.ts";

/**
 * The pool serves again, on new sessions (no statement goes to the dead connection), and a new
 * reservation works and releases as usual (the pool's next statement after it is answered).
 */
async function assertPoolServes(sql: postgres.Sql) {
  for (let i = 0; i < 6; i++) {
    const [{ n }] = await sql`select ${i}::int as n`;
    assert.equal(n, i);
  }
  const again = await sql.reserve();
  const [{ ok }] = await again`select true as ok`;
  assert.equal(ok, true);
  again.release();
  const [{ n }] = await sql`select 7::int as n`;
  assert.equal(n, 7);
}

Deno.test("a reserved connection whose session was ended under a statement: refused after, never written to", async () => {
  const db = await createTestDatabase({ migrate: false });
  const sql = createSql(db.url, { max: 2 });
  try {
    const reserved = await sql.reserve();
    const [{ pid }] = await reserved`select pg_backend_pid() as pid`;
    await reserved`select pg_advisory_lock(4242)`;
    // The server ends that session (as a restart or a crash does) under a statement of it.
    const sleeping = reserved`select pg_sleep(30)`.then(() => null, (e: unknown) => e);
    await waitFor(async () => {
      const [{ n }] = await db.sql`select count(*)::int as n from pg_stat_activity
                                   where pid = ${pid} and query like '%pg_sleep%'`;
      return n === 1;
    }, { what: "the statement to be running" });
    await db.sql`select pg_terminate_backend(${pid})`;

    const first = await sleeping;
    assert.ok(connectionGone(first), `the statement fails as gone: ${first}`);
    // What a lock helper's `finally` does next: unlock, reset, release. Each is refused with the
    // same error (postgres.js alone would write them to the dead connection).
    const unlock = await reserved`select pg_advisory_unlock(4242)`.then(() => null, (e) => e);
    assert.equal(unlock, first);
    const reset = await reserved.unsafe("reset statement_timeout").then(() => null, (e) => e);
    assert.equal(reset, first);
    const executed = await reserved`select 2`.execute().then(() => null, (e: unknown) => e);
    assert.equal(executed, first);
    reserved.release();

    await assertPoolServes(sql);
  } finally {
    await sql.end({ timeout: 1 });
    await db.drop();
  }
});

Deno.test("a reserved connection whose session ended while it was idle: refused after, never written to", async () => {
  const db = await createTestDatabase({ migrate: false });
  // The pool's own close callback tells the test when postgres.js has seen the session end
  // (createSql's pool is this one, guarded the same way, with more settings).
  let closes = 0;
  const sql = guardTransactions(postgres(db.url, { max: 2, onclose: () => closes++ }));
  try {
    const reserved = await sql.reserve();
    const [{ pid }] = await reserved`select pg_backend_pid() as pid`;
    await reserved`select pg_advisory_lock(4242)`;
    // The server ends the session while nothing runs on it (a restart, an operator, a failover),
    // as the sender's batch waits on a node with its lock held.
    await db.sql`select pg_terminate_backend(${pid})`;
    await waitFor(() => closes === 1, { what: "postgres.js to see the session end" });

    const unlock = await reserved`select pg_advisory_unlock(4242)`.then(() => null, (e) => e);
    assert.ok(connectionGone(unlock), `the next statement is refused as gone: ${unlock}`);
    assert.equal((unlock as { code?: string }).code, "CONNECTION_CLOSED");
    const reset = await reserved.unsafe("reset statement_timeout").then(() => null, (e) => e);
    assert.equal(reset, unlock);
    reserved.release();

    await assertPoolServes(sql);
  } finally {
    await sql.end({ timeout: 1 });
    await db.drop();
  }
});
