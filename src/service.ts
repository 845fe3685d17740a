/**
 * startService: database → migrations → chains (local nodes, contracts) → queue → job workers
 * and the chain log watcher → HTTP, and the reverse on stop. `main.ts` parses the config and
 * runs it with signal handling; tests run it in-process.
 */
import type { Config } from "./config.ts";
import { type Clock, systemClock } from "./clock.ts";
import { createSql, describeUrl, type Sql } from "./db/client.ts";
import { type EmbeddedDatabase, startEmbeddedPostgres } from "./db/embedded.ts";
import { migrate, readMigrations } from "./db/migrate.ts";
import { type Queue, startQueue } from "./queue/queue.ts";
import type { Logger } from "./log.ts";
import type { Deps } from "./deps.ts";
import { createApp } from "./app.ts";
import { databaseCheck } from "./http/health.ts";
import { allJobs, type AppModule, modules as defaultModules } from "./modules/index.ts";
import { Chain } from "./chain/index.ts";
import { publishExplorerUrls } from "./chain/explorer-links.ts";
import type { SenderHooks } from "./chain/sender.ts";
import { createRateLimiter } from "./http/rate-limit.ts";
import { createMailer } from "./modules/mail/mail.service.ts";

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
  stop(reason?: string): Promise<void>;
}

export async function startService(config: Config, opts: ServiceOptions): Promise<Service> {
  const log = opts.log;
  const started = performance.now();
  const cleanups: Array<() => Promise<void>> = [];
  const runCleanups = async () => {
    for (const fn of cleanups.splice(0).reverse()) {
      await fn().catch((e) => log.error("shutdown step failed", { error: e }));
    }
  };

  try {
    let databaseUrl = config.DATABASE_URL;
    let embedded: EmbeddedDatabase | undefined;
    if (!databaseUrl) {
      embedded = await startEmbeddedPostgres({ dataDir: config.DATA_DIR, log });
      cleanups.push(() => embedded!.stop());
      databaseUrl = embedded.url;
    }
    log.info("database", { url: describeUrl(databaseUrl), embedded: !!embedded });

    const sql: Sql = createSql(databaseUrl, { max: config.DATABASE_POOL_MAX });
    cleanups.push(() => sql.end({ timeout: 5 }));
    const migrations = await readMigrations();
    await migrate(sql, { log });

    const chain = await Chain.start({
      config: config.chain,
      masterKey: config.WALLET_MASTER_KEY!,
      sql,
      log,
      dataDir: (opts.persistChains ?? true) ? config.DATA_DIR : undefined,
      hooks: opts.senderHooks,
    });
    cleanups.push(() => chain.stop());

    const queue: Queue = await startQueue({ url: databaseUrl, log });
    cleanups.push(() => queue.stop({ timeoutMs: config.SHUTDOWN_TIMEOUT_MS }));

    const clock = opts.clock ?? systemClock;
    const deps: Deps = {
      config,
      sql,
      queue,
      chain,
      clock,
      log,
      limiter: createRateLimiter({ sql, clock, config }),
      mailer: createMailer(queue),
    };
    const modules = opts.modules ?? defaultModules;
    const role = opts.role ?? "all";
    const workers = opts.workers ?? role !== "web";
    await queue.register(allJobs(modules), deps, { work: workers });
    for (const mod of modules) {
      for (const handler of mod.logHandlers?.(deps) ?? []) chain.watcher.register(handler);
    }
    if (workers) {
      chain.watcher.start();
      cleanups.push(() => chain.watcher.stop());
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
      cleanups.push(async () => {
        await server.shutdown(config.SHUTDOWN_TIMEOUT_MS);
        log.info("http server stopped");
      });
      // Operator commands (deno task faucet) print explorer links to where this process serves.
      await publishExplorerUrls(
        sql,
        Object.fromEntries(chain.profiles().map((p) => [p, chain.runtime(p).profile.explorerUrl])),
      ).catch((e) => log.warn("could not record the explorer URLs", { error: e }));
      log.info("listening", {
        role,
        port,
        baseUrl: config.BASE_URL,
        readyInMs: Math.round(performance.now() - started),
      });
    }

    let stopping: Promise<void> | undefined;
    return {
      deps,
      app,
      port,
      databaseUrl,
      stop: (reason = "stop") => {
        stopping ??= (async () => {
          log.info("shutting down", { reason });
          await runCleanups();
          log.info("stopped");
        })();
        return stopping;
      },
    };
  } catch (e) {
    await runCleanups();
    throw e;
  }
}

interface Listening {
  port: number;
  /** Stops accepting, lets in-flight requests finish (bounded), then closes. */
  shutdown(timeoutMs: number): Promise<void>;
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
            shutdown: async (timeoutMs) => {
              const graceful = server.shutdown();
              const timer = setTimeout(() => {
                // In-flight requests past the deadline are cut off.
                server.unref();
              }, timeoutMs);
              await graceful.finally(() => clearTimeout(timer));
            },
          });
        },
      }, handler);
    } catch (e) {
      reject(e);
    }
  });
}
