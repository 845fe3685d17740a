/**
 * The postgres.js client. `bigint` columns come back as JS bigint (money is never a float), and
 * column names are converted snake_case ↔ camelCase so repos return domain-shaped rows.
 */
import postgres from "postgres";

export type DbTypes = { bigint: bigint };
/** A pool. */
export type Sql = postgres.Sql<DbTypes>;
/** An open transaction. */
export type Tx = postgres.TransactionSql<DbTypes>;
/** Either; what repo functions take as their first argument. */
export type Db = postgres.ISql<DbTypes>;

export interface ClientOptions {
  max?: number;
  /** Application name shown in pg_stat_activity. */
  name?: string;
  /** Convert column names to camelCase (default true). */
  camel?: boolean;
}

export function createSql(url: string, opts: ClientOptions = {}): Sql {
  return postgres(url, {
    max: opts.max ?? 10,
    idle_timeout: 30,
    connect_timeout: 10,
    onnotice: () => {},
    connection: { application_name: opts.name ?? "settlement" },
    types: { bigint: postgres.BigInt },
    ...(opts.camel === false ? {} : { transform: postgres.camel }),
  }) as unknown as Sql;
}

/** Replaces the database name in a postgres URL. */
export function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${encodeURIComponent(database)}`;
  return u.toString();
}

/** Connection URL with the password hidden, for logs. */
export function describeUrl(url: string): string {
  const u = new URL(url);
  if (u.password) u.password = "***";
  return u.toString();
}

export function isPgError(e: unknown, code?: string): e is postgres.PostgresError {
  return e instanceof postgres.PostgresError && (code === undefined || e.code === code);
}

/** One round trip to the database (`deno task doctor`). */
export async function ping(sql: Sql): Promise<void> {
  await sql`select 1`;
}
