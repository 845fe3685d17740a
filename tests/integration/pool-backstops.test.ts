/**
 * The pool's backstops (lock_timeout, idle_in_transaction_session_timeout): a transaction that
 * waits for a second pool connection while holding a row lock, or while holding the pool's last
 * connection, is cut off, its requests answer 503, and the service keeps serving /readyz and other
 * requests; the transaction the session was taken from never runs another statement.
 */
import assert from "node:assert/strict";
import { startTestService } from "../helpers/service.ts";
import { wedgeModule } from "../helpers/wedge-module.ts";
import { modules } from "../../src/modules/index.ts";
import { M } from "../../src/http/messages.ts";
import { waitFor } from "../helpers/poll.ts";

/** Every answer arrives (a wedge would fail here, not hang the run). */
const BOUND_MS = 30_000;

Deno.test("pool backstops on a pool of 2", async (t) => {
  const wedge = wedgeModule();
  const svc = await startTestService({
    modules: [...modules, wedge.mod],
    env: {
      RATE_LIMITS: "off",
      DATABASE_POOL_MAX: "2",
      DATABASE_LOCK_TIMEOUT_MS: "1000",
      DATABASE_IDLE_TX_TIMEOUT_MS: "2000",
    },
  });
  const post = async (path: string) => {
    const res = await fetch(`${svc.baseUrl}${path}`, {
      method: "POST",
      signal: AbortSignal.timeout(BOUND_MS),
    });
    return {
      status: res.status,
      type: res.headers.get("content-type"),
      res,
      json: await res.json(),
    };
  };
  const stillServing = async () => {
    const ready = await fetch(`${svc.baseUrl}/readyz`, { signal: AbortSignal.timeout(BOUND_MS) });
    const body = await ready.text();
    assert.equal(ready.status, 200, body);
    const read = await fetch(`${svc.baseUrl}/api/x402/listings`, {
      signal: AbortSignal.timeout(BOUND_MS),
    });
    assert.equal(read.status, 200);
    assert.equal((await read.json()).success, true);
  };
  const idleInTransaction = async () => {
    const [{ n }] = await svc.db.sql<{ n: number }[]>`
      select count(*)::int as n from pg_stat_activity
      where datname = current_database() and state like 'idle in transaction%'`;
    return n;
  };
  await svc.db.sql`create table wedge_effects (id serial primary key, route text not null)`;
  const effects = async (route: string) =>
    (await svc.db.sql<{ n: number }[]>`
      select count(*)::int as n from wedge_effects where route = ${route}`)[0].n;
  try {
    await t.step("the settings reach the pool's sessions", async () => {
      const [row] = await svc.deps.sql<{ lockTimeout: string; idle: string }[]>`
        select current_setting('lock_timeout') as lock_timeout,
               current_setting('idle_in_transaction_session_timeout') as idle`;
      assert.deepEqual(row, { lockTimeout: "1s", idle: "2s" });
    });

    await t.step(
      "a row lock held while waiting for a connection: the waiter gives up",
      async () => {
        const answers = await Promise.all([0, 1].map(() => post("/api/test/wedge/lock")));
        const statuses = answers.map((a) => a.status).sort();
        // The request waiting for the lock holds the last connection: lock_timeout ends its wait,
        // its connection goes back, and the lock holder gets it and finishes.
        assert.deepEqual(statuses, [200, 503]);
        const busy = answers.find((a) => a.status === 503)!;
        assert.match(busy.type ?? "", /application\/json/);
        assert.equal(busy.res.headers.get("retry-after"), "1");
        assert.deepEqual(busy.json, {
          success: false,
          error: M.databaseBusy,
          hint: M.databaseBusyHint,
        });
        await stillServing();
        assert.equal(
          await effects("lock"),
          1,
          "the one that finished wrote once; the other nothing",
        );
      },
    );

    await t.step("transactions waiting for each other's connections are ended", async () => {
      const answers = await Promise.all([0, 1].map(() => post("/api/test/wedge/pool")));
      const statuses = answers.map((a) => a.status);
      // No lock to time out: idle_in_transaction_session_timeout ends an idle transaction's
      // session (its statements never run again); the other may then finish.
      assert.ok(statuses.includes(503), statuses.join(","));
      assert.ok(statuses.every((s) => s === 200 || s === 503), statuses.join(","));
      await stillServing();
      await waitFor(async () => await idleInTransaction() === 0, {
        timeoutMs: BOUND_MS,
        what: "no session left idle in a transaction",
      });
      // A transaction whose session was ended runs nothing after it: not on the dead connection
      // (postgres.js would crash the process) and not on the one the pool reconnected (outside
      // any transaction). Only the one that finished wrote.
      assert.equal(await effects("pool"), statuses.filter((s) => s === 200).length);
    });

    await t.step("a transaction idle past the bound while waiting outside is ended", async () => {
      const back = wedge.resumed();
      const r = await post("/api/test/wedge/idle?ms=4000");
      assert.equal(r.status, 503);
      assert.equal(r.json.error, M.databaseBusy);
      // Its lock is gone at once: another request takes the row.
      const next = await svc.deps.sql`
        select version from schema_migrations where version = 1 for update nowait`;
      assert.equal(next.length, 1);
      // The cut-off callback comes back from its wait and tries to write: that statement never
      // runs (without the guard in src/db/transactions.ts it is written to the dead connection,
      // which throws an uncatchable TypeError here, or runs outside any transaction).
      await back;
      await stillServing();
      assert.equal(await effects("idle"), 0);
    });

    await t.step("migrations and waits that are meant to wait are not bounded", async () => {
      // A reserved session with the backstops lifted (src/db/client.ts withoutBackstops).
      const { withoutBackstops } = await import("../../src/db/client.ts");
      const conn = await svc.deps.sql.reserve();
      try {
        const inside = await withoutBackstops(
          conn,
          async () =>
            (await conn<{ v: string }[]>`select current_setting('lock_timeout') as v`)[0].v,
        );
        const after = (await conn<{ v: string }[]>`select current_setting('lock_timeout') as v`)[0]
          .v;
        assert.deepEqual([inside, after], ["0", "1s"]);
      } finally {
        conn.release();
      }
    });
  } finally {
    await svc.close();
  }
});
