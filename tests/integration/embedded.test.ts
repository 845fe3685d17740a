import assert from "node:assert/strict";
import postgres from "postgres";
import { startEmbeddedPostgres } from "../../src/db/embedded.ts";
import { silentLogger } from "../../src/log.ts";

Deno.test("embedded postgres: starts, keeps data across restarts, adopts a crashed run's server", async () => {
  const dir = await Deno.makeTempDir({ prefix: "settlement-embedded-" });
  try {
    const first = await startEmbeddedPostgres({ dataDir: dir, log: silentLogger });
    assert.equal(first.owned, true);
    let sql = postgres(first.url, { max: 1, onnotice: () => {} });
    await sql`create table kept (v text)`;
    await sql`insert into kept values ('still here')`;
    await sql.end();
    await first.stop();

    // Restart: a new port may be picked, the data survives.
    const second = await startEmbeddedPostgres({ dataDir: dir, log: silentLogger });
    sql = postgres(second.url, { max: 1, onnotice: () => {} });
    assert.deepEqual((await sql`select v from kept`).map((r) => r.v), ["still here"]);
    await sql.end();

    // Simulate a killed owner: the server runs on, the owner file names a dead process.
    await Deno.writeTextFile(`${dir}/postgres.owner`, "999999\n");
    const third = await startEmbeddedPostgres({ dataDir: dir, log: silentLogger });
    assert.equal(third.port, second.port, "the running server is adopted, not restarted");
    assert.equal(third.owned, true);
    await third.stop();
    const after = postgres(second.url, { max: 1, connect_timeout: 2, onnotice: () => {} });
    await assert.rejects(() => after`select 1`);
    await after.end();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
