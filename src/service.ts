/**
 * startService: database → migrations → chains (local nodes, contracts) → queue → job workers
 * and the chain log watcher → HTTP, and the reverse on stop. `main.ts` parses the config and
 * runs it with signal handling; tests run it in-process.
 */
import type { Config } from "./config.ts";
import { type Clock, systemClock } from "./clock.ts";
import { createSql, describeUrl, NO_TABLE_SCANS, ping, type Sql } from "./db/client.ts";
import { waitForDatabase } from "./db/wait.ts";
import { guardEndedSockets } from "./db/ended-sockets.ts";
import { type EmbeddedDatabase, startEmbeddedPostgres } from "./db/embedded-loader.ts";
import { migrate, readMigrations } from "./db/migrate.ts";
import { type Queue, startQueue } from "./queue/queue.ts";
import type { Logger } from "./log.ts";
import type { Deps } from "./deps.ts";
import { createApp } from "./app.ts";
import { databaseCheck } from "./http/health.ts";
import { allJobs, type AppModule, modules as defaultModules } from "./modules/index.ts";
import { Chain } from "./chain/index.ts";
import { publishServiceUrl } from "./chain/explorer-links.ts";
import type { SenderHooks } from "./chain/sender.ts";
import { createRateLimiter } from "./http/rate-limit.ts";
import { createMailer } from "./modules/mail/mail.service.ts";
import { type StopResult, StopSequence } from "./shutdown.ts";
import type { LocalNode } from "./chain/local-node.ts";
import { closeLiveStreams } from "./http/sse.ts";
import { startLiveness } from "./db/liveness.ts";

/**
 * What a process runs. `all`: HTTP, job workers, log watchers and recovery (one process does
 * everything). `web`: the HTTP API and pages only; it enqueues jobs but runs none. `worker`: job
 * workers, log watchers and recovery, with a listener for /healthz, /readyz and /metrics only.
 * Any number of each may run against one database.
 */
export type Role = "all" | "web" | "worker";
export const ROLES: readonly Role[] = ["all", "web", "worker"];

export interface ServiceOptions {
  log: Logger;
  /** Default `all`; `serve` and `workers` below override its parts (tests). */
  role?: Role;
  clock?: Clock;
  modules?: AppModule[];
  /** Listen for HTTP (default true). */
  serve?: boolean;
  /** Run job workers and the chain log watcher in this process (default true). */
  workers?: boolean;
  /** Schedule the jobs' crons (default true; a test that runs the rounds itself: false). */
  crons?: boolean;
  /** Keep local chain state under DATA_DIR (default true; tests use throwaway nodes). */
  persistChains?: boolean;
  /** Fault injection for the transaction sender (tests only). */
  senderHooks?: SenderHooks;
}

export interface Service {
  deps: Deps;
  app: ReturnType<typeof createApp>;
  /** The bound port when serving. */
  port?: number;
  databaseUrl: string;
  /** Stops within SHUTDOWN_TIMEOUT_MS (plus a short grace when it has to force). */
  stop(reason?: string): Promise<StopResult>;
  /** The last resort before exiting anyway: kills the local chain nodes this process started. */
  abort(): void;
}

export async function startService(config: Config, opts: ServiceOptions): Promise<Service> {
  const log = opts.log;
  const started = performance.now();
  const cleanups = new StopSequence();
  const runCleanups = () => cleanups.run(config.SHUTDOWN_TIMEOUT_MS, log);

  try {
    // A port already taken is said before the database, the chains and the jobs are started for
    // nothing (the listener below binds it for real; a port taken in between is said there too).
    if ((opts.serve ?? true) && config.PORT !== 0) portFree(config);
    let databaseUrl = config.DATABASE_URL;
    let embedded: EmbeddedDatabase | undefined;
    if (!databaseUrl) {
      embedded = await startEmbeddedPostgres({ dataDir: config.DATA_DIR, log });
      cleanups.add("embedded database", () => embedded!.stop(), { forcedMs: 3_000 });
      databaseUrl = embedded.url;
    }
    log.info("database", { url: describeUrl(databaseUrl), embedded: !!embedded });

    const backstops = {
      lockTimeoutMs: config.DATABASE_LOCK_TIMEOUT_MS,
      idleInTransactionTimeoutMs: config.DATABASE_IDLE_TX_TIMEOUT_MS,
      statementTimeoutMs: config.DATABASE_STATEMENT_TIMEOUT_MS,
    };
    guardEndedSockets(log);
    const sql: Sql = createSql(databaseUrl, { max: config.DATABASE_POOL_MAX, backstops });
    // Forced: every connection is closed now, failing what still waits on it.
    cleanups.add(
      "database pool",
      ({ forced, budgetMs }) => sql.end({ timeout: forced ? 0 : Math.min(5, budgetMs / 1000) }),
      { forcedMs: 1_000 },
    );
    // The x402 paid path's group writes: one connection (opened when first used), planning
    // without table scans (NO_TABLE_SCANS, x402.batched.mirror.ts).
    const paidSql: Sql = createSql(databaseUrl, {
      max: 1,
      name: "settlement-paid",
      backstops,
      settings: NO_TABLE_SCANS,
    });
    cleanups.add(
      "paid-path connection",
      ({ forced, budgetMs }) => paidSql.end({ timeout: forced ? 0 : Math.min(5, budgetMs / 1000) }),
      { forcedMs: 1_000 },
    );
    const migrations = await readMigrations();
    await waitForDatabase(() => ping(sql), { timeoutMs: config.DATABASE_STARTUP_WAIT_MS, log });
    await migrate(sql, { log });
    // Given back after the HTTP server and the workers stopped (steps run last-added first), so
    // no work of this process is swept as a dead one's while it finishes; a forced stop, which
    // abandons work still running, leaves it to lapse instead.
    const liveness = await startLiveness(sql, log);
    cleanups.add("liveness", ({ forced }) => liveness.stop({ release: !forced }), {
      forcedMs: 500,
    });

    const chain = await Chain.start({
      config: config.chain,
      masterKey: config.WALLET_MASTER_KEY!,
      sql,
      log,
      dataDir: (opts.persistChains ?? true) ? config.DATA_DIR : undefined,
      hooks: opts.senderHooks,
    });
    cleanups.add(
      "chains",
      ({ forced }) => forced ? stopLocalNodes(chain, 2_000) : chain.stop(),
      { forcedMs: 2_500, onTimeout: () => stopLocalNodes(chain, 2_000) },
    );

    const queue: Queue = await startQueue({
      url: databaseUrl,
      log,
      // Its own few connections, never more than the service's pool may have.
      max: Math.min(5, config.DATABASE_POOL_MAX),
      heartbeatSeconds: config.JOB_HEARTBEAT_SECONDS,
      superviseSeconds: config.JOB_SUPERVISE_SECONDS,
    });
    cleanups.add(
      "queue",
      ({ forced, budgetMs }) => queue.stop({ timeoutMs: forced ? 0 : budgetMs, graceful: !forced }),
      { forcedMs: 1_500 },
    );

    const clock = opts.clock ?? systemClock;
    const deps: Deps = {
      config,
      sql,
      paidSql,
      queue,
      chain,
      clock,
      log,
      limiter: createRateLimiter({ sql, clock, config }),
      mailer: createMailer(queue),
      liveness,
    };
    const modules = opts.modules ?? defaultModules;
    const role = opts.role ?? "all";
    const workers = opts.workers ?? role !== "web";
    await queue.register(allJobs(modules), deps, { work: workers, crons: opts.crons });
    for (const mod of modules) {
      for (const handler of mod.logHandlers?.(deps) ?? []) chain.watcher.register(handler);
    }
    if (workers) {
      chain.watcher.start();
      cleanups.add("log watcher", () => chain.watcher.stop());
      for (const profile of chain.profiles()) {
        chain.recover(profile).catch((e) => log.warn("startup recovery failed", { error: e }));
      }
      for (const mod of modules) {
        mod.onStart?.(deps).catch((e) =>
          log.warn("module start hook failed", { module: mod.name, error: e })
        );
      }
    }

    const app = createApp(deps, {
      modules,
      readinessChecks: [databaseCheck(sql, migrations.map((m) => m.version)), chain.readiness()],
      healthOnly: role === "worker",
    });

    let port: number | undefined;
    if (opts.serve ?? true) {
      const server = await listen(app.fetch, config);
      port = server.port;
      cleanups.add("http server", async () => {
        await server.shutdown();
        log.info("http server stopped");
      }, { onTimeout: () => Promise.resolve(server.abandon()) });
      // Runs before the server's drain: an open event stream would otherwise hold it to the end.
      cleanups.add("live streams", () => closeLiveStreams(sql), { forcedMs: 500 });
      // Operator commands (deno task faucet, escrow:resolve) print explorer links to where this
      // process serves its explorer pages.
      await publishServiceUrl(sql, config.BASE_URL).catch((e) =>
        log.warn("could not record the service's base URL", { error: e })
      );
      log.info("listening", {
        role,
        port,
        baseUrl: config.BASE_URL,
        readyInMs: Math.round(performance.now() - started),
      });
    }

    let stopping: Promise<StopResult> | undefined;
    return {
      deps,
      app,
      port,
      databaseUrl,
      stop: (reason = "stop") => {
        stopping ??= (async () => {
          log.info("shutting down", { reason, timeoutMs: config.SHUTDOWN_TIMEOUT_MS });
          const result = await runCleanups();
          if (result.forced) {
            log.error("shutdown forced: work in flight was abandoned", {
              timeoutMs: config.SHUTDOWN_TIMEOUT_MS,
              abandoned: result.abandoned,
            });
          }
          log.info("stopped", { forced: result.forced });
          return result;
        })();
        return stopping;
      },
      abort: () => {
        for (const node of ownedNodes(chain)) node.kill();
      },
    };
  } catch (e) {
    await runCleanups();
    throw e;
  }
}

/** The local chain nodes this process started (not one another process of ours runs). */
function ownedNodes(chain: Chain): LocalNode[] {
  return [...chain.profiles(), ...chain.startedSources()]
    .map((p) => chain.runtime(p).node)
    .filter((n): n is LocalNode => n !== undefined && n.owned);
}

/**
 * Stops the local chain nodes this process started, at once: SIGTERM (anvil saves its state),
 * then SIGKILL for any still running after `ms`.
 */
async function stopLocalNodes(chain: Chain, ms: number): Promise<void> {
  await Promise.all(
    ownedNodes(chain).map(async (node) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const late = new Promise<"late">((r) => timer = setTimeout(() => r("late"), ms));
      const outcome = await Promise.race([node.stop().then(() => "stopped" as const), late]);
      clearTimeout(timer);
      if (outcome === "late") node.kill();
    }),
  );
}

interface Listening {
  port: number;
  /** Stops accepting and lets in-flight requests finish (the stop sequence bounds the wait). */
  shutdown(): Promise<void>;
  /** Requests still in flight no longer keep the process alive. */
  abandon(): void;
}

/** The configured port is taken: said in plain words, naming it (main.ts prints it as is). */
export class PortInUseError extends Error {
  constructor(host: string, port: number) {
    super(
      `Port ${port} on ${host} is already in use (Address already in use): another process is ` +
        `listening there, perhaps a service started before. Stop it, or set PORT to a free port.`,
    );
    this.name = "PortInUseError";
  }
}

function portFree(config: Config): void {
  try {
    Deno.listen({ port: config.PORT, hostname: config.HOST }).close();
  } catch (e) {
    if (e instanceof Deno.errors.AddrInUse) throw new PortInUseError(config.HOST, config.PORT);
    throw e;
  }
}

function listen(handler: Deno.ServeHandler, config: Config): Promise<Listening> {
  return new Promise((resolve, reject) => {
    try {
      const server = Deno.serve({
        port: config.PORT,
        hostname: config.HOST,
        onListen: ({ port }) => {
          resolve({
            port,
            shutdown: () => server.shutdown(),
            abandon: () => server.unref(),
          });
        },
      }, handler);
    } catch (e) {
      reject(e instanceof Deno.errors.AddrInUse ? new PortInUseError(config.HOST, config.PORT) : e);
    }
  });
}
