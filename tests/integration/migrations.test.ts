import assert from "node:assert/strict";
import { join } from "node:path";
import { createSql } from "../../src/db/client.ts";
import { migrate, pendingMigrations, readMigrations } from "../../src/db/migrate.ts";
import { createTestDatabase } from "../helpers/db.ts";

Deno.test("migrations: applied in order, recorded, idempotent", async () => {
  const db = await createTestDatabase({ migrate: false });
  try {
    const onDisk = await readMigrations();
    assert.ok(onDisk.length >= 1);
    const first = await migrate(db.sql);
    assert.deepEqual(first.applied, onDisk.map((m) => m.version));
    const again = await migrate(db.sql);
    assert.deepEqual(again.applied, []);
    assert.equal(again.current, onDisk.at(-1)!.version);
    const rows = await db.sql`select version from schema_migrations order by version`;
    assert.deepEqual(rows.map((r) => r.version), onDisk.map((m) => m.version));
    assert.deepEqual(await pendingMigrations(db.sql), []);
  } finally {
    await db.drop();
  }
});

Deno.test("migrations: concurrent starts apply each migration exactly once", async () => {
  const db = await createTestDatabase({ migrate: false });
  const pools = Array.from({ length: 4 }, () => createSql(db.url, { max: 2 }));
  try {
    const results = await Promise.all(pools.map((sql) => migrate(sql)));
    const appliedTotal = results.flatMap((r) => r.applied);
    const onDisk = await readMigrations();
    assert.deepEqual(appliedTotal.sort(), onDisk.map((m) => m.version).sort());
    const [{ n }] = await db.sql`select count(*)::int as n from schema_migrations`;
    assert.equal(n, onDisk.length);
  } finally {
    await Promise.all(pools.map((p) => p.end()));
    await db.drop();
  }
});

Deno.test("migrations: a failing migration rolls back and an edited one is refused", async () => {
  const db = await createTestDatabase({ migrate: false });
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(join(dir, "0001_a.sql"), "create table a (id int);");
    await Deno.writeTextFile(join(dir, "0002_b.sql"), "create table b (id int); select 1/0;");
    await assert.rejects(() => migrate(db.sql, { dir }), /0002_b failed/);
    const [{ b }] = await db.sql`select to_regclass('b') as b`;
    assert.equal(b, null, "the failed migration left nothing behind");
    assert.deepEqual(await pendingMigrations(db.sql, dir), [2]);

    await Deno.writeTextFile(join(dir, "0002_b.sql"), "create table b (id int);");
    assert.deepEqual((await migrate(db.sql, { dir })).applied, [2]);
    await Deno.writeTextFile(join(dir, "0001_a.sql"), "create table a (id bigint);");
    await assert.rejects(() => migrate(db.sql, { dir }), /was changed after it was applied/);
  } finally {
    await Deno.remove(dir, { recursive: true });
    await db.drop();
  }
});

Deno.test("migrations: file names must be numbered and unique", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(join(dir, "init.sql"), "select 1;");
    await assert.rejects(() => readMigrations(dir), /NNNN_name\.sql/);
    await Deno.remove(join(dir, "init.sql"));
    await Deno.writeTextFile(join(dir, "0001_a.sql"), "select 1;");
    await Deno.writeTextFile(join(dir, "0001_b.sql"), "select 1;");
    await assert.rejects(() => readMigrations(dir), /share version 1/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
