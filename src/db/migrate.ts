/**
 * Forward-only SQL migrations: `migrations/NNNN_name.sql`, applied in order, each in its own
 * transaction, recorded in `schema_migrations` with a checksum. A session advisory lock makes two
 * processes starting together take turns; the second finds the work done.
 */
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type Reserved, type Sql, withoutBackstops } from "./client.ts";
import type { Logger } from "../log.ts";

export const MIGRATIONS_DIR = fileURLToPath(new URL("../../migrations/", import.meta.url));
/** Arbitrary constant: the advisory lock key for migrations. */
const LOCK_KEY = 7_202_611_220_001n;

export interface Migration {
  version: number;
  name: string;
  sql: string;
  checksum: string;
}

export async function readMigrations(dir = MIGRATIONS_DIR): Promise<Migration[]> {
  const out: Migration[] = [];
  for await (const entry of Deno.readDir(dir)) {
    if (!entry.isFile || !entry.name.endsWith(".sql")) continue;
    const m = /^(\d{4})_([a-z0-9_]+)\.sql$/.exec(entry.name);
    if (!m) throw new Error(`Migration file name must be NNNN_name.sql: ${entry.name}`);
    const sql = await Deno.readTextFile(join(dir, entry.name));
    out.push({ version: Number(m[1]), name: m[2], sql, checksum: await sha256(sql) });
  }
  out.sort((a, b) => a.version - b.version);
  for (let i = 1; i < out.length; i++) {
    if (out[i].version === out[i - 1].version) {
      throw new Error(`Two migrations share version ${out[i].version}`);
    }
  }
  return out;
}

export interface MigrateResult {
  applied: number[];
  current: number;
}

export async function migrate(
  sql: Sql,
  opts: { dir?: string; log?: Logger } = {},
): Promise<MigrateResult> {
  const migrations = await readMigrations(opts.dir);
  const reserved = await sql.reserve();
  // Waiting for another process's migrations, and a long migration, are meant to take their time:
  // the pool's lock and statement backstops do not apply here.
  try {
    return await withoutBackstops(reserved, () => migrateLocked(reserved, migrations, opts.log));
  } finally {
    reserved.release();
  }
}

async function migrateLocked(
  reserved: Reserved,
  migrations: Migration[],
  log: Logger | undefined,
): Promise<MigrateResult> {
  try {
    await reserved`select pg_advisory_lock(${LOCK_KEY.toString()}::bigint)`;
    await reserved`
      create table if not exists schema_migrations (
        version integer primary key,
        name text not null,
        checksum text not null,
        applied_at timestamptz not null default now()
      )`;
    const rows = await reserved<{ version: number; checksum: string; name: string }[]>`
      select version, checksum, name from schema_migrations order by version`;
    const done = new Map(rows.map((r) => [r.version, r]));
    const applied: number[] = [];
    for (const m of migrations) {
      const prior = done.get(m.version);
      if (prior) {
        if (prior.checksum !== m.checksum) {
          throw new Error(
            `Migration ${label(m)} was changed after it was applied; add a new migration instead`,
          );
        }
        continue;
      }
      // A reserved connection has no begin(); the transaction is spelled out.
      await reserved.unsafe("begin");
      try {
        await reserved.unsafe(m.sql);
        await reserved`insert into schema_migrations (version, name, checksum)
                       values (${m.version}, ${m.name}, ${m.checksum})`;
        await reserved.unsafe("commit");
      } catch (e) {
        await reserved.unsafe("rollback").catch(() => {});
        throw new Error(`Migration ${label(m)} failed: ${(e as Error).message}`, {
          cause: e,
        });
      }
      applied.push(m.version);
      log?.info("migration applied", { version: m.version, name: m.name });
    }
    const current = migrations.at(-1)?.version ?? 0;
    return { applied, current };
  } finally {
    await reserved`select pg_advisory_unlock(${LOCK_KEY.toString()}::bigint)`.catch(() => {});
  }
}

/** Versions on disk that the database has not applied yet (for readiness). */
export async function pendingMigrations(sql: Sql, dir?: string): Promise<number[]> {
  const migrations = await readMigrations(dir);
  const exists = await sql<{ t: string | null }[]>`select to_regclass('schema_migrations') as t`;
  if (!exists[0].t) return migrations.map((m) => m.version);
  const done = new Set(await appliedVersions(sql));
  return migrations.filter((m) => !done.has(m.version)).map((m) => m.version);
}

/** Versions recorded in schema_migrations. */
export async function appliedVersions(sql: Sql): Promise<number[]> {
  const rows = await sql<{ version: number }[]>`select version from schema_migrations`;
  return rows.map((r) => r.version);
}

async function sha256(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

function label(m: Migration): string {
  return `${String(m.version).padStart(4, "0")}_${m.name}`;
}
