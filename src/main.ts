/** Entry point: `deno task start`. */
import { ConfigError, loadConfig, resolveSecrets } from "./config.ts";
import { createLogger } from "./log.ts";
import { type Role, ROLES, startService } from "./service.ts";
import { ChainResetRefusedError } from "./chain/reset.ts";

async function main(): Promise<number> {
  let config;
  try {
    config = loadConfig(Deno.env.toObject());
  } catch (e) {
    if (e instanceof ConfigError) {
      console.error(e.message);
      return 78; // EX_CONFIG
    }
    throw e;
  }
  const log = createLogger({ level: config.LOG_LEVEL, base: { service: "settlement" } });
  const secrets = await resolveSecrets(config);
  config = secrets.config;
  if (secrets.generated.length) {
    log.warn("secrets not configured; using development values kept in DATA_DIR", {
      names: secrets.generated,
      dataDir: config.DATA_DIR,
    });
  }

  const role = (Deno.args[0] ?? Deno.env.get("ROLE") ?? "all") as Role;
  if (!ROLES.includes(role)) {
    console.error(`Unknown role "${role}": use one of ${ROLES.join(", ")}.`);
    return 64; // EX_USAGE
  }
  const service = await startService(config, { log: log.child({ role }), role });
  const done = Promise.withResolvers<void>();
  const onSignal = (signal: Deno.Signal) => () => {
    service.stop(signal).then(done.resolve, done.reject);
  };
  Deno.addSignalListener("SIGINT", onSignal("SIGINT"));
  Deno.addSignalListener("SIGTERM", onSignal("SIGTERM"));
  await done.promise;
  return 0;
}

if (import.meta.main) {
  try {
    Deno.exit(await main());
  } catch (e) {
    // A refusal the operator must act on is said in plain words too, not only in the JSON log.
    if (e instanceof ChainResetRefusedError) console.error(e.message);
    console.error(
      JSON.stringify({
        ts: new Date().toISOString(),
        level: "error",
        msg: "startup failed",
        error: e instanceof Error
          ? { message: e.message, cause: String(e.cause ?? "") }
          : String(e),
      }),
    );
    Deno.exit(1);
  }
}
