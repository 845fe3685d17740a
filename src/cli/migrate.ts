/** `deno task migrate`: apply pending migrations to DATABASE_URL (or the embedded database). */
import { type Config, ConfigError, loadConfig } from "../config.ts";
import { developmentSecretProblems } from "../dev-secrets.ts";
import { createLogger } from "../log.ts";
import { createSql, describeUrl, ping } from "../db/client.ts";
import { waitForDatabase } from "../db/wait.ts";
import { startEmbeddedPostgres } from "../db/embedded-loader.ts";
import { migrate } from "../db/migrate.ts";

let config: Config;
try {
  // Migrating needs the database only: a production image run with just DATABASE_URL (README)
  // was refused for the secrets the service needs (JWT_SECRET, …). In production the database
  // must be named (never an embedded one in a container); the other values are read as
  // development values would be, and not used.
  const env = Deno.env.toObject();
  if (env.APP_ENV === "production") {
    // A development secret given is still refused, as by the service (one given by mistake).
    const problems = [
      ...(env.DATABASE_URL ? [] : ["DATABASE_URL: required when APP_ENV=production"]),
      ...developmentSecretProblems(env),
    ];
    if (problems.length) throw new ConfigError(problems);
  }
  config = loadConfig({
    ...env,
    APP_ENV: env.APP_ENV === "production" ? "development" : env.APP_ENV,
  });
} catch (e) {
  if (!(e instanceof ConfigError)) throw e;
  console.error(e.message);
  Deno.exit(78); // EX_CONFIG, like the service
}
if (Deno.args.some((a) => a === "--help" || a === "-h")) {
  console.log(
    "usage: deno task migrate\nApplies pending migrations to DATABASE_URL (or the embedded database).",
  );
  Deno.exit(0);
}
if (Deno.args.length) {
  console.error(`Unknown argument ${Deno.args[0]}: deno task migrate takes none.`);
  Deno.exit(2);
}
const log = createLogger({ level: config.LOG_LEVEL });
let failed: unknown;
const embedded = config.DATABASE_URL
  ? undefined
  : await startEmbeddedPostgres({ dataDir: config.DATA_DIR, log });
const sql = createSql(config.DATABASE_URL ?? embedded!.url, { max: 1 });
try {
  await waitForDatabase(() => ping(sql), { timeoutMs: config.DATABASE_STARTUP_WAIT_MS, log });
  const result = await migrate(sql, { log });
  console.log(
    result.applied.length
      ? `Applied ${result.applied.length} migration(s); now at ${result.current}.`
      : `Up to date at ${result.current}.`,
  );
} catch (e) {
  failed = e;
} finally {
  await sql.end({ timeout: 5 });
  await embedded?.stop();
}
if (failed !== undefined) {
  // One line an operator can act on (a missing database, a refused password), not a stack.
  const where = config.DATABASE_URL ? describeUrl(config.DATABASE_URL) : "the embedded database";
  const why = failed instanceof Error ? failed.message.split("\n")[0] : String(failed);
  console.error(`Migrations not applied to ${where}: ${why}`);
  Deno.exit(1);
}
