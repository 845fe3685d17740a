/** Entry point: `deno task start`. */
import { type Config, ConfigError, loadServiceConfig, resolveSecrets } from "./config.ts";
import { createLogger, scrub } from "./log.ts";
import { PortInUseError, type Role, ROLES, type ServiceOptions, startService } from "./service.ts";
import { FORCE_GRACE_MS } from "./shutdown.ts";
import { ChainResetRefusedError } from "./chain/reset.ts";
import { MasterKeyMismatchError } from "./chain/errors.ts";
import { retryWhileNotReady } from "./db/wait.ts";

async function main(): Promise<number> {
  let config;
  try {
    config = loadServiceConfig(Deno.env.toObject());
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
  return await runService(config, { log: log.child({ role }), role });
}

/**
 * Runs the service until SIGINT or SIGTERM, then stops it within SHUTDOWN_TIMEOUT_MS; the exit
 * code: 0, or 1 when the stop had to be forced (requests or jobs still in flight were abandoned).
 */
export async function runService(config: Config, opts: ServiceOptions): Promise<number> {
  // Listen for signals before starting: the HTTP listener (and /readyz) is up a moment before
  // startService returns, and an orchestrator may send SIGTERM as soon as it sees it. A signal
  // that arrives during the start stops the service once it is up.
  const up: { service?: Awaited<ReturnType<typeof startService>> } = {};
  let signalled: Deno.Signal | undefined;
  const done = Promise.withResolvers<number>();
  const stop = (signal: Deno.Signal) => {
    // The stop sequence is bounded; this is the last resort should something in it hang anyway.
    const lastResort = setTimeout(() => {
      opts.log.error("shutdown did not finish in time; exiting", { signal });
      up.service?.abort();
      Deno.exit(1);
    }, config.SHUTDOWN_TIMEOUT_MS + FORCE_GRACE_MS + 5_000);
    Deno.unrefTimer(lastResort);
    up.service!.stop(signal).then((r) => done.resolve(r.forced ? 1 : 0), done.reject);
  };
  const onSignal = (signal: Deno.Signal) => () => {
    if (signalled) {
      // A second signal while still starting: stop waiting (the usual Ctrl-C twice).
      if (!up.service) Deno.exit(signal === "SIGINT" ? 130 : 143);
      return;
    }
    signalled = signal;
    if (up.service) stop(signal);
  };
  Deno.addSignalListener("SIGINT", onSignal("SIGINT"));
  Deno.addSignalListener("SIGTERM", onSignal("SIGTERM"));
  // The database answered the start's first ping but may go away before the start is done (a
  // server that crashed recovers, or restarts): the start is cleaned up and made again, within
  // the same DATABASE_STARTUP_WAIT_MS, rather than the role exiting.
  up.service = (await retryWhileNotReady(
    // Each start's own wait for its first answer takes from the same budget.
    (msLeft) => startService({ ...config, DATABASE_STARTUP_WAIT_MS: msLeft }, opts),
    {
      timeoutMs: config.DATABASE_STARTUP_WAIT_MS,
      log: opts.log,
      message: "the database went away during the start; starting again",
      giveUp: () => signalled !== undefined,
    },
  )).value;
  if (signalled) stop(signalled);
  return await done.promise;
}

if (import.meta.main) {
  try {
    Deno.exit(await main());
  } catch (e) {
    // A refusal the operator must act on is said in plain words too, not only in the JSON log.
    if (e instanceof ChainResetRefusedError || e instanceof PortInUseError) {
      console.error(scrub(e.message));
    }
    if (e instanceof MasterKeyMismatchError) {
      console.error(e.message);
      Deno.exit(78); // EX_CONFIG: a value the operator must correct
    }
    // Scrubbed: an error's message can name a configured URL whole, with its key.
    console.error(scrub(JSON.stringify({
      ts: new Date().toISOString(),
      level: "error",
      msg: "startup failed",
      error: e instanceof Error ? { message: e.message, cause: String(e.cause ?? "") } : String(e),
    })));
    Deno.exit(1);
  }
}
