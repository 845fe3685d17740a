/**
 * `withoutBackstops` (src/db/client.ts): on a reserved connection of a pool with backstops, the
 * lock and statement timeouts are off from `fn`'s first statement on (the lift is sent ahead of
 * it, not waited for on its own), and back after, whether `fn` returned or threw.
 */
import assert from "node:assert/strict";
import { createTestDatabase } from "../helpers/db.ts";
import { createSql, withoutBackstops } from "../../src/db/client.ts";

Deno.test("withoutBackstops: off for fn's first statement on, back after a return or a throw", async () => {
  const db = await createTestDatabase({ migrate: false });
  const sql = createSql(db.url, {
    max: 1,
    backstops: { lockTimeoutMs: 1500, statementTimeoutMs: 2500 },
  });
  const conn = await sql.reserve();
  const settings = async () => {
    const [r] = await conn<{ lock: string; statement: string }[]>`
      select current_setting('lock_timeout') as lock,
             current_setting('statement_timeout') as statement`;
    return { ...r };
  };
  try {
    assert.deepEqual(await settings(), { lock: "1500ms", statement: "2500ms" });
    const inside = await withoutBackstops(conn, settings);
    assert.deepEqual(inside, { lock: "0", statement: "0" }, "off from fn's first statement");
    assert.deepEqual(await settings(), { lock: "1500ms", statement: "2500ms" });

    await assert.rejects(
      withoutBackstops(conn, async () => {
        await conn`select 1`;
        throw new Error("fn failed");
      }),
      /fn failed/,
    );
    assert.deepEqual(await settings(), { lock: "1500ms", statement: "2500ms" });

    // A statement of fn's that fails is fn's error; the connection is still usable after.
    await assert.rejects(
      withoutBackstops(conn, async () => await conn`select * from no_such_table`),
      /no_such_table/,
    );
    assert.deepEqual(await settings(), { lock: "1500ms", statement: "2500ms" });
  } finally {
    conn.release();
    await sql.end();
    await db.drop();
  }
});
