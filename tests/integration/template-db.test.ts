/**
 * The test databases of a `deno task test` run are copies of one template (tests/helpers/
 * template-db.ts): a copy must be what migrating an empty database and starting the service's
 * queue would have made, without the schedules a test service adds only when it asks for them.
 */
import assert from "node:assert/strict";
import { readMigrations } from "../../src/db/migrate.ts";
import { allJobs, modules } from "../../src/modules/index.ts";
import { QUEUE_SCHEMA } from "../../src/queue/queue.ts";
import { createTestDatabase } from "../helpers/db.ts";
import { prepareTemplateDatabase } from "../helpers/template-db.ts";

Deno.test("test databases: a copy of the run's template holds every migration and queue, no schedule", async () => {
  const template = Deno.env.get("TEST_TEMPLATE_DATABASE");
  // Run by `deno test` directly there is no template: each database is migrated from empty.
  if (template) {
    // Prepared again, it is the same one: the same migrations and queues give the same name.
    assert.equal(await prepareTemplateDatabase(Deno.env.get("TEST_DATABASE_URL")!), template);
  }
  const db = await createTestDatabase();
  try {
    const applied = await db.sql<{ version: number }[]>`
      select version from schema_migrations order by version`;
    assert.deepEqual(applied.map((r) => r.version), (await readMigrations()).map((m) => m.version));
    if (!template) return;
    const queues = await db.sql.unsafe<{ name: string }[]>(
      `select name from ${QUEUE_SCHEMA}.queue`,
    );
    assert.deepEqual(
      queues.map((q) => q.name).filter((n) => !n.startsWith("__pgboss__")).sort(),
      allJobs(modules).map((j) => j.name).sort(),
    );
    const schedules = await db.sql.unsafe(`select 1 from ${QUEUE_SCHEMA}.schedule`);
    assert.equal(schedules.length, 0);
  } finally {
    await db.drop();
  }
});
