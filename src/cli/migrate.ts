/** `deno task migrate`: apply pending migrations to DATABASE_URL (or the embedded database). */
import { type Config, ConfigError, loadServiceConfig } from "../config.ts";
import { createLogger } from "../log.ts";
import { createSql, ping } from "../db/client.ts";
import { waitForDatabase } from "../db/wait.ts";
import { startEmbeddedPostgres } from "../db/embedded-loader.ts";
import { migrate } from "../db/migrate.ts";

let config: Config;
try {
  config = loadServiceConfig(Deno.env.toObject());
} catch (e) {
  if (!(e instanceof ConfigError)) throw e;
  console.error(e.message);
  Deno.exit(78); // EX_CONFIG, like the service
}
const log = createLogger({ level: config.LOG_LEVEL });
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
} finally {
  await sql.end({ timeout: 5 });
  await embedded?.stop();
}
