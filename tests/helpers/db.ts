/**
 * Each test file gets its own database on the server the run uses (TEST_DATABASE_URL from
 * `deno task test`, else DATABASE_URL, else a private embedded PostgreSQL), migrated and dropped
 * at the end, so files run in parallel without seeing each other.
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
  const adminSql = postgres(admin, { max: 1, onnotice: () => {} });
  try {
    await adminSql.unsafe(`create database ${name}`);
  } finally {
    await adminSql.end();
  }
  const url = withDatabase(admin, name);
  const sql = createSql(url, { max: 5, name: "test" });
  if (opts.migrate ?? true) await migrate(sql);
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
