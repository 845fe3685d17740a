/**
 * Bootstrap for operator commands: the same configuration as the service, the database (the
 * embedded one is shared with a running service), migrations, and the chains (a running
 * service's local nodes are shared, never restarted).
 */
import { type Config, ConfigError, loadServiceConfig, resolveSecrets } from "../config.ts";
import { createLogger, type Logger, scrub } from "../log.ts";
import { createSql, type Sql } from "../db/client.ts";
import { startEmbeddedPostgres } from "../db/embedded-loader.ts";
import { migrate, pendingMigrations, readMigrations } from "../db/migrate.ts";
import { MasterKeyMismatchError } from "../chain/errors.ts";
import { Chain } from "../chain/index.ts";
import { publishedServiceUrl, withServedExplorers } from "../chain/explorer-links.ts";

export interface CliContext {
  config: Config;
  databaseUrl: string;
  sql: Sql;
  chain: Chain;
  log: Logger;
}

export async function withCli<T>(
  fn: (ctx: CliContext) => Promise<T>,
  opts: { env?: Record<string, string> } = {},
): Promise<T> {
  return await withDatabase(async ({ config, databaseUrl, sql, log }) => {
    let chain: Chain | undefined;
    try {
      // Links to where the service serves its explorer pages, unless this command was given a
      // BASE_URL of its own (src/chain/explorer-links.ts).
      const served = opts.env?.BASE_URL ?? Deno.env.get("BASE_URL")
        ? undefined
        : await publishedServiceUrl(sql);
      chain = await Chain.start({
        config: served ? withServedExplorers(config.chain, config.BASE_URL, served) : config.chain,
        masterKey: config.WALLET_MASTER_KEY!,
        sql,
        log,
        dataDir: config.DATA_DIR,
      });
      return await fn({ config, databaseUrl, sql, chain, log });
    } finally {
      await chain?.stop();
    }
  }, opts);
}

/**
 * A command's refusal: its message and exit code, said once the command has cleaned up (an
 * exit from inside left the embedded PostgreSQL and local nodes running: an outside audit).
 */
export class CliExit extends Error {
  constructor(message: string, readonly code = 2) {
    super(message);
    this.name = "CliExit";
  }
}

/** How many `withDatabase` calls are running: `fail` inside one throws, to clean up first. */
let inside = 0;

/** Configuration and a migrated database, without starting any chain. */
export async function withDatabase<T>(
  fn: (ctx: Omit<CliContext, "chain">) => Promise<T>,
  opts: { env?: Record<string, string> } = {},
): Promise<T> {
  inside++;
  try {
    return await withDatabaseInner(fn, opts);
  } catch (e) {
    if (e instanceof CliExit) {
      console.error(e.message);
      Deno.exit(e.code);
    }
    if (e instanceof MasterKeyMismatchError) {
      console.error(e.message);
      Deno.exit(78);
    }
    // Anything else: said once, without a configured URL's key (an error's message can name the
    // URL whole), and exit 1, rather than an uncaught error's dump (LOG_LEVEL=debug: its stack).
    const debug = Deno.env.get("LOG_LEVEL") === "debug";
    console.error(
      scrub(e instanceof Error ? (debug && e.stack) || `error: ${e.message}` : String(e)),
    );
    Deno.exit(1);
  } finally {
    inside--;
  }
}

async function withDatabaseInner<T>(
  fn: (ctx: Omit<CliContext, "chain">) => Promise<T>,
  opts: { env?: Record<string, string> },
): Promise<T> {
  let config: Config;
  try {
    config = loadServiceConfig({ ...Deno.env.toObject(), ...opts.env });
  } catch (e) {
    if (e instanceof ConfigError) {
      console.error(e.message);
      Deno.exit(78);
    }
    throw e;
  }
  config = (await resolveSecrets(config)).config;
  const log = createLogger({ level: config.LOG_LEVEL === "info" ? "warn" : config.LOG_LEVEL });
  const embedded = config.DATABASE_URL
    ? undefined
    : await startEmbeddedPostgres({ dataDir: config.DATA_DIR, log });
  const databaseUrl = config.DATABASE_URL ?? embedded!.url;
  const sql = createSql(databaseUrl, { max: 4 });
  try {
    await migrated(sql, log);
    return await fn({ config, databaseUrl, sql, log });
  } finally {
    // A timeout: postgres.js can wait forever on a connection once reserved and released
    // (porsager/postgres#925), and the sender and deploy locks reserve one.
    await sql.end({ timeout: 5 });
    await embedded?.stop();
  }
}

/**
 * A new database is migrated (said on stderr); one an earlier release migrated is not: a
 * command of a new release would otherwise upgrade a database the old release's processes still
 * run on, which the upgrade steps say to do only with them stopped (`deno task migrate`).
 */
async function migrated(sql: Sql, log: Logger): Promise<void> {
  const pending = await pendingMigrations(sql);
  if (!pending.length) return;
  const all = await readMigrations();
  if (pending.length < all.length) {
    throw new CliExit(
      `The database is an earlier release's: ${pending.length} migration(s) of this one are ` +
        `not applied (${pending.join(", ")}). Stop every process of the running release, run ` +
        "`deno task migrate`, then this command again (README, Upgrading).",
      1,
    );
  }
  const r = await migrate(sql, { log });
  console.error(
    `A new database: applied its ${r.applied.length} migrations (now at ${r.current}).`,
  );
}

/** What a command takes: its usage line, its flags with a value, its flags without one. */
export interface CommandArgs {
  usage: string;
  flags?: readonly string[];
  switches?: readonly string[];
}

/**
 * `--name value` and `--name=value` flags (`switches` take no value) plus positional arguments.
 * `--help` / `-h` prints the usage and exits 0 before anything is done; a flag the command does
 * not take is refused with its usage (exit 2), rather than ignored: a mistyped `--netwrok` would
 * otherwise run the command on the default chain.
 */
export function parseArgs(
  args: string[],
  spec: CommandArgs,
): { flags: Record<string, string>; positional: string[] } {
  if (args.some((a) => a === "--help" || a === "-h")) {
    console.log(spec.usage);
    Deno.exit(0);
  }
  const known = new Set([...spec.flags ?? [], ...spec.switches ?? []]);
  const switches = new Set(spec.switches ?? []);
  const flags: Record<string, string> = {};
  const positional: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a.startsWith("--")) {
      const [k, v] = a.slice(2).split("=", 2);
      if (!known.has(k)) fail(`Unknown option --${k}.\n${spec.usage}`);
      if (switches.has(k)) {
        if (v !== undefined) fail(`--${k} takes no value.\n${spec.usage}`);
        flags[k] = "true";
      } else if (v !== undefined) flags[k] = v;
      else if (args[i + 1] !== undefined && !args[i + 1].startsWith("--")) flags[k] = args[++i];
      else fail(`--${k} needs a value.\n${spec.usage}`);
    } else positional.push(a);
  }
  return { flags, positional };
}

/** Refuses the command: exit `code` (2, a usage error, by default) after its cleanup. */
export function fail(message: string, code = 2): never {
  if (inside > 0) throw new CliExit(message, code);
  console.error(message);
  Deno.exit(code);
}
