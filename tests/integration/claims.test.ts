import assert from "node:assert/strict";
import { sweepLapsedClaims, withClaim } from "../../src/db/claims.ts";
import { DomainError } from "../../src/errors.ts";
import { createTestDatabase } from "../helpers/db.ts";

Deno.test("resource claims", async (t) => {
  const db = await createTestDatabase();
  try {
    await t.step(
      "50 concurrent holders of one resource run one at a time on a pool of 2",
      async () => {
        const { createSql } = await import("../../src/db/client.ts");
        const small = createSql(db.url, { max: 2 });
        try {
          let inside = 0;
          let most = 0;
          const order: number[] = [];
          await Promise.all(
            Array.from({ length: 50 }, (_, i) =>
              withClaim(small, "r:one", async () => {
                inside++;
                most = Math.max(most, inside);
                // The holder's own statements find a connection although 49 wait.
                await small`select pg_sleep(0.001)`;
                order.push(i);
                inside--;
              })),
          );
          assert.equal(most, 1);
          assert.equal(order.length, 50);
          const [{ n }] = await small`select count(*)::int as n from resource_claims`;
          assert.equal(n, 0, "every claim was given back");
        } finally {
          await small.end();
        }
      },
    );

    await t.step(
      "another process's live claim is waited for, then refused as busy at the bound",
      async () => {
        await db.sql`
        insert into resource_claims (resource, owner, expires_at)
        values ('r:held', 'elsewhere', clock_timestamp() + interval '1 hour')`;
        await assert.rejects(
          withClaim(db.sql, "r:held", () => Promise.resolve(1), { waitMs: 200 }),
          (e) => e instanceof DomainError && e.code === "resource_busy",
        );
      },
    );

    await t.step("a lapsed claim (its owner died) is taken over", async () => {
      await db.sql`
        insert into resource_claims (resource, owner, expires_at)
        values ('r:dead', 'gone', clock_timestamp() - interval '1 second')`;
      assert.equal(await withClaim(db.sql, "r:dead", () => Promise.resolve(7)), 7);
    });

    await t.step("a failing action gives the claim back", async () => {
      await assert.rejects(withClaim(db.sql, "r:fail", () => Promise.reject(new Error("x"))));
      assert.equal(await withClaim(db.sql, "r:fail", () => Promise.resolve(2), { waitMs: 100 }), 2);
    });

    await t.step("housekeeping deletes lapsed claims and keeps live ones", async () => {
      await db.sql`
        insert into resource_claims (resource, owner, expires_at)
        values ('r:lapsed', 'gone', clock_timestamp() - interval '1 second')`;
      const deleted = await sweepLapsedClaims(db.sql);
      assert.ok(deleted >= 1, `deleted ${deleted}`);
      const left = await db.sql`select resource from resource_claims order by resource`;
      assert.deepEqual(left.map((r) => r.resource), ["r:held"]);
    });
  } finally {
    await db.drop();
  }
});
