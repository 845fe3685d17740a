/**
 * The template every migrated test database is copied from (tests/helpers/db.ts), prepared by
 * `deno task test` (tests/run.ts) before the files run: the migrations applied, and the job
 * queue's schema installed with every queue the service registers (no schedules: a test service
 * schedules its own, when it asks for them). A copy takes ~0.2 s on the 2-core machine; migrating
 * an empty database and installing the queue there took ~0.45 s more at every test service's start.
 */
import postgres from "postgres";
import { createSql, withDatabase } from "../../src/db/client.ts";
import { migrate, readMigrations } from "../../src/db/migrate.ts";
import { startQueue } from "../../src/queue/queue.ts";
import { allJobs, modules } from "../../src/modules/index.ts";
import type { Deps } from "../../src/deps.ts";
import { silentLogger } from "../../src/log.ts";

/** Arbitrary constant: the advisory lock runs of the suite take turns on to build a template. */
const TEMPLATE_LOCK = 7_202_611_300_001n;

/**
 * The template database for this checkout on the server at `adminUrl`, named by a digest of its
 * migrations and queues (`tpl_settlement_<digest>`): built once, under a lock, and kept for the
 * next run. Templates of other digests are dropped, unless in use.
 */
export async function prepareTemplateDatabase(adminUrl: string): Promise<string> {
  // What a copy holds: the migrations, and the queues with their options.
  const contents = [
    ...(await readMigrations()).map((m) => `${m.version}:${m.checksum}`),
    ...allJobs(modules).map((j) => `${j.name}:${JSON.stringify(j.queue ?? {})}`),
  ];
  const digest = new Uint8Array(
    await crypto.subtle.digest("SHA-256", new TextEncoder().encode(contents.join("\n"))),
  );
  const hex = [...digest.slice(0, 8)].map((b) => b.toString(16).padStart(2, "0")).join("");
  const name = `tpl_settlement_${hex}`;
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  try {
    await admin`select pg_advisory_lock(${TEMPLATE_LOCK.toString()}::bigint)`;
    const [found] = await admin`select 1 from pg_database where datname = ${name}`;
    if (!found) {
      // Built under another name and renamed once migrated: a run killed half-way leaves no
      // template that looks complete.
      const building = `${name}_building`;
      await admin.unsafe(`drop database if exists ${building} with (force)`);
      await admin.unsafe(`create database ${building}`);
      const sql = createSql(withDatabase(adminUrl, building), { max: 1, name: "test-template" });
      try {
        await migrate(sql);
      } finally {
        await sql.end();
      }
      const url = withDatabase(adminUrl, building);
      const queue = await startQueue({ url, log: silentLogger, max: 2 });
      try {
        // Queues only: no workers, and no schedules (a copy would run jobs a test did not ask for).
        await queue.register(allJobs(modules), {} as Deps, { work: false, crons: false });
      } finally {
        await queue.stop({ timeoutMs: 0, graceful: false });
      }
      await admin.unsafe(`alter database ${building} rename to ${name}`);
    }
    const others = await admin<{ datname: string }[]>`
      select datname from pg_database
      where datname like ${"tpl\\_settlement\\_%"} and datname <> ${name}`;
    for (const { datname } of others) {
      await admin.unsafe(`drop database if exists "${datname.replaceAll('"', '""')}"`)
        .catch(() => {});
    }
  } finally {
    await admin`select pg_advisory_unlock(${TEMPLATE_LOCK.toString()}::bigint)`.catch(() => {});
    await admin.end();
  }
  return name;
}
