/**
 * Test-only routes that misbehave with the database the way DESIGN §11 forbids, to show the
 * backstops and the bounded shutdown cope:
 *
 * - POST /api/test/wedge/lock: a transaction takes a row lock, then waits for a second pool
 *   connection while holding it (two at once on a pool of 2: one holds the lock and waits for a
 *   connection, the other holds the last connection and waits for the lock).
 * - POST /api/test/wedge/pool: a transaction (no lock) waits for a second pool connection (two at
 *   once on a pool of 2: each holds one and waits for the other's).
 * - POST /api/test/wedge/idle?ms=N: a transaction takes a row lock, then waits N ms for something
 *   outside the database (a slow RPC), then writes.
 * - GET /api/test/hang: never answers.
 *
 * A transaction that gets through writes a row to `wedge_effects` (the test creates the table):
 * one that was cut off must leave none.
 */
import { Hono } from "hono";
import type { AppModule } from "../../src/modules/index.ts";

export function wedgeModule() {
  let entered = 0;
  /** Resolves when a transaction of /wedge/idle is back from its wait (about to write). */
  let resumed = Promise.withResolvers<void>();
  const barriers = new Map<string, { n: number; all: PromiseWithResolvers<void> }>();
  /** Resolves once two requests of `route` got this far (each holding a connection). */
  const both = (route: string) => {
    let b = barriers.get(route);
    if (!b) barriers.set(route, b = { n: 0, all: Promise.withResolvers<void>() });
    if (++b.n === 2) {
      barriers.delete(route);
      b.all.resolve();
    }
    return b.all.promise;
  };
  const mod: AppModule = {
    name: "wedge-test",
    api: (deps) => {
      const app = new Hono();
      app.post("/api/test/wedge/lock", async (c) => {
        await deps.sql.begin(async (tx) => {
          await tx`select 1`;
          entered++;
          await both("lock");
          await tx`select version from schema_migrations where version = 1 for update`;
          await deps.sql`select 1`;
          await tx`insert into wedge_effects (route) values ('lock')`;
        });
        return c.json({ success: true });
      });
      app.post("/api/test/wedge/pool", async (c) => {
        await deps.sql.begin(async (tx) => {
          await tx`select 1`;
          entered++;
          await both("pool");
          await deps.sql`select 1`;
          await tx`insert into wedge_effects (route) values ('pool')`;
        });
        return c.json({ success: true });
      });
      app.post("/api/test/wedge/idle", async (c) => {
        const ms = Number(c.req.query("ms") ?? 0);
        await deps.sql.begin(async (tx) => {
          entered++;
          await tx`select version from schema_migrations where version = 1 for update`;
          await new Promise((r) => setTimeout(r, ms));
          resumed.resolve();
          await tx`insert into wedge_effects (route) values ('idle')`;
        });
        return c.json({ success: true });
      });
      app.get("/api/test/hang", async () => {
        entered++;
        return await new Promise<Response>(() => {});
      });
      return app;
    },
  };
  return {
    mod,
    entered: () => entered,
    /** The next time a /wedge/idle transaction comes back from its wait. */
    resumed: () => {
      resumed = Promise.withResolvers<void>();
      return resumed.promise;
    },
  };
}
