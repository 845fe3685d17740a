/**
 * Each test file gets its own database on the server the run uses (TEST_DATABASE_URL from
 * `deno task test`, else DATABASE_URL, else a private embedded PostgreSQL), migrated and dropped
 * at the end, so files run in parallel without seeing each other.
 *
 * `deno task test` (tests/run.ts) prepares one template database per set of migrations and queues
 * (tests/helpers/template-db.ts, named in TEST_TEMPLATE_DATABASE): a migrated test database is a
 * copy of it (~0.2 s on the 2-core machine), where an empty one, migrated and then given the
 * job queue by the service's start, took ~0.45 s more. Without it (`deno test` run directly)
 * each is migrated from empty.
 */
import postgres from "postgres";
import { createSql, type Sql, withDatabase } from "../../src/db/client.ts";
import { migrate } from "../../src/db/migrate.ts";
import { startEmbeddedPostgres } from "../../src/db/embedded.ts";
import { silentLogger } from "../../src/log.ts";

let privateServer: Promise<string> | undefined;

async function serverUrl(): Promise<string> {
  const url = Deno.env.get("TEST_DATABASE_URL") ?? Deno.env.get("DATABASE_URL");
  if (url) return url;
  // Running `deno test` directly with no database configured: start a throwaway cluster.
  privateServer ??= (async () => {
    const dir = await Deno.makeTempDir({ prefix: "settlement-test-pg-" });
    const db = await startEmbeddedPostgres({ dataDir: dir, log: silentLogger });
    // An exit handler cannot wait for `stop` (pg_ctl): the server is signalled instead, or it
    // would outlive every test or script run directly with no database configured.
    globalThis.addEventListener("unload", () => db.signalStop());
    return db.adminUrl;
  })();
  return await privateServer;
}

export interface TestDatabase {
  name: string;
  url: string;
  sql: Sql;
  drop(): Promise<void>;
}

export async function createTestDatabase(opts: { migrate?: boolean } = {}): Promise<TestDatabase> {
  const admin = await serverUrl();
  const name = `t_${crypto.randomUUID().replaceAll("-", "").slice(0, 16)}`;
  const migrated = opts.migrate ?? true;
  const template = migrated ? templateName() : undefined;
  const adminSql = postgres(admin, { max: 1, onnotice: () => {} });
  try {
    if (!template) await adminSql.unsafe(`create database ${name}`);
    else {
      await adminSql.unsafe(`create database ${name} template ${template}`).catch(async (e) => {
        // Dropped by a run of another checkout (another set of migrations): migrate from empty.
        if ((e as { code?: string }).code !== "3D000") throw e;
        await adminSql.unsafe(`create database ${name}`);
      });
    }
  } finally {
    await adminSql.end();
  }
  const url = withDatabase(admin, name);
  const sql = createSql(url, { max: 5, name: "test" });
  // On the template's copy: every migration found applied, with its checksum.
  if (migrated) await migrate(sql);
  return {
    name,
    url,
    sql,
    drop: async () => {
      await sql.end({ timeout: 1 });
      const a = postgres(admin, { max: 1, onnotice: () => {} });
      try {
        await a.unsafe(`drop database if exists ${name} with (force)`);
      } finally {
        await a.end();
      }
    },
  };
}

/** TEST_TEMPLATE_DATABASE, when the run prepared one. */
function templateName(): string | undefined {
  const name = Deno.env.get("TEST_TEMPLATE_DATABASE");
  if (!name) return undefined;
  if (!/^tpl_[a-z0-9_]+$/.test(name)) throw new Error(`bad TEST_TEMPLATE_DATABASE: ${name}`);
  return name;
}
