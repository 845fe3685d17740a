/**
 * The postgres.js client. `bigint` columns come back as JS bigint (money is never a float), and
 * column names are converted snake_case ↔ camelCase so repos return domain-shaped rows.
 */
import postgres from "postgres";
import { connectionGone, guardTransactions } from "./transactions.ts";
import { guardEndedSockets } from "./ended-sockets.ts";
import { poolSockets } from "./sockets.ts";

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
  /** Session backstops (milliseconds; 0 or absent: PostgreSQL's default, off). */
  backstops?: Backstops;
  /** Hears the server's notices (default: dropped). */
  onnotice?: (message: string) => void;
  /**
   * How long a connection may take to become ready (default 10 s): postgres.js's own bound, and
   * how long queries wait out a peer that closes connections before answering (src/db/sockets.ts).
   */
  connectTimeoutSeconds?: number;
  /** More settings for every connection at its start (`NO_TABLE_SCANS`, say). */
  settings?: Record<string, string>;
}

/**
 * A pool whose plans never scan a whole table where an index can serve (`enable_seqscan` off):
 * for the paid path's group statements (x402.batched.mirror.ts), which are prepared, so their
 * plan is fixed at a connection's sixth run; made while a table was young, a scan of it would
 * stay the plan while it grows (src/db/by-id.ts). Without scans, it is the index's from the start.
 * And without JIT: a plan that must still scan somewhere carries the setting's disable cost
 * (10^10), far above `jit_above_cost`, so PostgreSQL compiled such a small statement with LLVM
 * before running it. postgres.js's own first statement on a connection (its array types, read
 * from pg_type by a scan) cost the first paid call after each start ~300 ms so (docs/decisions.md).
 */
export const NO_TABLE_SCANS: Record<string, string> = { enable_seqscan: "off", jit: "off" };

/**
 * Bounds that keep one stuck transaction from wedging the pool (DESIGN §11): a statement waiting
 * for a lock gives up (`lock_timeout`), a transaction left idle (waiting on something outside the
 * database while it holds locks and a pool slot) is ended with its session
 * (`idle_in_transaction_session_timeout`), a statement running too long is cancelled
 * (`statement_timeout`). Set per connection at its start.
 */
export interface Backstops {
  lockTimeoutMs?: number;
  idleInTransactionTimeoutMs?: number;
  statementTimeoutMs?: number;
}

export function createSql(url: string, opts: ClientOptions = {}): Sql {
  guardEndedSockets();
  return guardTransactions(postgres(url, {
    max: opts.max ?? 10,
    idle_timeout: 30,
    connect_timeout: opts.connectTimeoutSeconds ?? 10,
    backoff: reconnectPause,
    onnotice: (n) => opts.onnotice?.(n.message),
    connection: {
      application_name: opts.name ?? "settlement",
      ...startupSettings(opts.backstops),
      ...opts.settings,
    },
    types: { bigint: postgres.BigInt },
    // A peer that closes before answering: a pause, then a refusal, not a loop (src/db/sockets.ts).
    // postgres.js reads `socket` (src/index.js) but its types do not declare it.
    ...({ socket: poolSockets() } as unknown as Record<string, never>),
    ...(opts.camel === false ? {} : { transform: postgres.camel }),
  })) as unknown as Sql;
}

/**
 * Seconds a pool's connection waits before connecting again after it closed, by how many
 * connections failed in a row in the pool (postgres.js counts them until one is ready):
 * postgres.js's own curve (10 ms, then ×3 a failure, less up to half at random), capped at 2 s,
 * where postgres.js's goes on to 20 s: a service would be up to ~20 s late to see its database
 * back after a few failures (docs/decisions.md).
 */
export function reconnectPause(failures: number): number {
  return (0.5 + Math.random() / 2) * Math.min(3 ** failures / 100, 2);
}

function startupSettings(b: Backstops = {}): Record<string, string> {
  const out: Record<string, string> = {};
  if (b.lockTimeoutMs) out.lock_timeout = String(b.lockTimeoutMs);
  if (b.idleInTransactionTimeoutMs) {
    out.idle_in_transaction_session_timeout = String(b.idleInTransactionTimeoutMs);
  }
  if (b.statementTimeoutMs) out.statement_timeout = String(b.statementTimeoutMs);
  return out;
}

/** A connection reserved from the pool (`sql.reserve()`). */
export type Reserved = postgres.ReservedSql<DbTypes>;

/**
 * Runs `fn` on a reserved connection with the lock and statement backstops lifted, then puts them
 * back: for a wait that is meant to wait (a session advisory lock that takes turns with another
 * process's migrations, contract deployment or nonce batch), which holds no transaction open.
 */
export async function withoutBackstops<T>(conn: Reserved, fn: () => Promise<T>): Promise<T> {
  // The lift is sent, not waited for on its own: `fn`'s first statement (the lock it waits for)
  // goes right behind it on the connection, which runs them in order, so both cost one round
  // trip; the two resets after go together too. Both are settled before anything is thrown, so
  // the caller never releases the connection while `fn` still uses it.
  const lifted = conn`select set_config('lock_timeout', '0', false),
                    set_config('statement_timeout', '0', false)`.execute();
  try {
    const [lift, out] = await Promise.allSettled([lifted, fn()]);
    if (lift.status === "rejected") throw lift.reason;
    if (out.status === "rejected") throw out.reason;
    return out.value;
  } finally {
    await Promise.allSettled([conn`reset lock_timeout`, conn`reset statement_timeout`]);
  }
}

/**
 * The backstops' errors, and a session lost under a transaction: what a request cut off by them
 * sees (answered 503; its transaction was rolled back, so it may be tried again).
 */
export function isBackstopError(e: unknown): boolean {
  if (!(e instanceof Error)) return false;
  const code = (e as { code?: string }).code;
  // 55P03 lock_not_available (lock_timeout), 57014 query_canceled (statement_timeout).
  return code === "55P03" || code === "57014" || connectionGone(e);
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

/** A PostgreSQL error, with this SQLSTATE when `code` is given. */
export function isPgError(e: unknown, code?: string): e is postgres.PostgresError {
  return e instanceof postgres.PostgresError && (code === undefined || e.code === code);
}

/** A unique constraint refused the row (SQLSTATE 23505): someone recorded it first. */
export const isUniqueViolation = (e: unknown): e is postgres.PostgresError => isPgError(e, "23505");

/** One round trip to the database (`deno task doctor`). */
export async function ping(sql: Sql): Promise<void> {
  await sql`select 1`;
}
