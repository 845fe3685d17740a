/**
 * `deno task container:check`: the container deployment, run for real on this machine's Docker.
 * Builds the image, brings compose.yaml + compose.dev.yaml up (Compose v2, or Debian's v1 with
 * `--compatibility`), waits for both web replicas and the worker to be healthy, and checks what
 * an operator relies on: a merchant signs up (the code from the worker's logged mail), a payment
 * link made through one replica is listed and rendered by the other, mail queued while the worker
 * is killed is sent exactly once after it is back, ports listen on 127.0.0.1 only, every process
 * is non-root, and the web role starts in production with values of its own; then that each role
 * starts offline (network none) and that production refuses the development secrets. Tears everything down (`down -v`) whatever happened. Exit 1 on any failure.
 *
 * Base images that cannot be pulled are built locally by the stand-in tool
 * (../shared/tools/container-stand-ins/make-stand-ins.sh, or CONTAINER_STAND_INS).
 * CONTAINER_CHECK_DOCKERFILE=<path> checks another Dockerfile; CONTAINER_CHECK_KEEP=1 leaves the
 * deployment up for a look (`docker-compose -p settlement-check … down -v` afterwards).
 */
import {
  composeCommand,
  freePortPair,
  inspect,
  log,
  must,
  psqlQuery,
  published,
  run,
  tail,
  until,
} from "./container/docker.ts";
import { PROFILE_DEFS } from "../src/chain/profiles.ts";
import {
  checkMailOnce,
  devEnv,
  type Http,
  http,
  merchantFlow,
  unavailable,
} from "./container/flow.ts";

const ROOT = new URL("../", import.meta.url).pathname;
const PROJECT = "settlement-check";
const IMAGE = "settlement:check";
const DOCKERFILE = Deno.env.get("CONTAINER_CHECK_DOCKERFILE") ?? "Dockerfile";
const STAND_INS = Deno.env.get("CONTAINER_STAND_INS") ??
  new URL("../../shared/tools/container-stand-ins/make-stand-ins.sh", import.meta.url).pathname;

async function baseImages(): Promise<void> {
  const deno = /^ARG DENO_VERSION=(\S+)/m.exec(await Deno.readTextFile(`${ROOT}Dockerfile`))?.[1];
  const pg = /image: postgres:(\S+)/.exec(await Deno.readTextFile(`${ROOT}compose.yaml`))?.[1];
  if (!deno || !pg) throw new Error("cannot read the base image versions");
  const missing = [];
  for (const image of [`denoland/deno:${deno}`, `postgres:${pg}`]) {
    if ((await run(["docker", "image", "inspect", image])).code === 0) continue;
    const pull = await run(["docker", "pull", image], { timeoutMs: 180_000 });
    if (pull.code !== 0) missing.push(image);
  }
  if (!missing.length) return log(`base images present: denoland/deno:${deno}, postgres:${pg}`);
  log(`cannot pull ${missing.join(", ")}: building local stand-ins (${STAND_INS})`);
  await must(["bash", STAND_INS, deno, pg], { timeoutMs: 600_000 });
}

async function buildImage(): Promise<{ seconds: number; mb: number }> {
  const t = performance.now();
  const before = (await run(["docker", "image", "inspect", "-f", "{{.Id}}", IMAGE])).out.trim();
  await must(["docker", "build", "-q", "-f", DOCKERFILE, "-t", IMAGE, "."], {
    cwd: ROOT,
    timeoutMs: 900_000,
  });
  // The previous check's image, now untagged, is removed with its own layers (~120 MB a build
  // of a changed tree): runs of the check do not pile images up on the machine's disk.
  const after = (await must(["docker", "image", "inspect", "-f", "{{.Id}}", IMAGE])).trim();
  if (before && before !== after) await run(["docker", "rmi", before]);
  const seconds = Math.round((performance.now() - t) / 1000);
  const size = Number(
    (await must(["docker", "image", "inspect", "-f", "{{.Size}}", IMAGE])).trim(),
  );
  const mb = Math.round(size / 1e6);
  log(`built ${IMAGE} from ${DOCKERFILE} in ${seconds} s: ${mb} MB`);
  return { seconds, mb };
}

type Compose = (args: string[], timeoutMs?: number) => Promise<string>;

/** Compose without the development values must refuse to start and name what is missing. */
async function composeRefusesMissingValues(cmd: string[]): Promise<void> {
  // An empty env file (v1 wants a regular file), so that neither compose.dev.env nor an
  // operator's .env in this directory supplies anything.
  const empty = await Deno.makeTempFile({ prefix: "container-check-", suffix: ".env" });
  const r = await run([...cmd, "--env-file", empty, "-f", "compose.yaml", "config", "-q"], {
    cwd: ROOT,
  }).finally(() => Deno.remove(empty));
  if (r.code === 0 || !/POSTGRES_PASSWORD|JWT_SECRET/.test(r.err + r.out)) {
    throw new Error(`compose.yaml without values should refuse: exit ${r.code}\n${r.err}${r.out}`);
  }
  const named = /POSTGRES_PASSWORD|JWT_SECRET|[A-Z_]+ \(/.exec(r.err + r.out)?.[0];
  log(`compose.yaml with no values refuses to start (first missing: ${named})`);
}

/** Both web replicas and the worker healthy, deploy done; fails fast on a crashing container. */
async function waitHealthy(compose: Compose) {
  const ids = async (service: string) =>
    (await compose(["ps", "-q", service])).trim().split("\n").filter(Boolean);
  return await until("web ×2 and worker healthy", 240_000, async () => {
    const deploy = await inspect(await ids("deploy"));
    for (const d of deploy) {
      if (d.status === "exited" && d.exitCode !== 0) {
        throw new Error(`deploy exited ${d.exitCode}:\n${await logsOf(d.id)}`);
      }
    }
    const web = await inspect(await ids("web"));
    const worker = await inspect(await ids("worker"));
    for (const c of [...web, ...worker]) {
      if (c.restarts > 0 || c.status === "exited" || c.status === "restarting") {
        throw new Error(
          `${c.name} is ${c.status} (restarts ${c.restarts}):\n${await logsOf(c.id)}`,
        );
      }
    }
    const healthy = (cs: typeof web) => cs.filter((c) => c.health === "healthy").length;
    if (web.length === 2 && healthy(web) === 2 && worker.length === 1 && healthy(worker) === 1) {
      const postgres = (await ids("postgres"))[0];
      return { web: web.map((c) => c.id), worker: worker[0].id, postgres };
    }
    return undefined;
  });
}

async function logsOf(id: string, lines = 30): Promise<string> {
  const r = await run(["docker", "logs", "--tail", String(lines), id]);
  return tail(r.out + r.err, lines);
}

/** A container's last error-level log lines, each cut short: what a 500 or a crash left. */
async function errorsOf(id: string, lines = 4): Promise<string> {
  const r = await run(["docker", "logs", "--tail", "2000", id]);
  const errors = (r.out + r.err).split("\n")
    .filter((l) => /"level":"(error|fatal)"/.test(l));
  return errors.slice(-lines).map((l) => `  ${l.slice(0, 400)}`).join("\n") || "  (none)";
}

/**
 * What PostgreSQL said about itself: every server line (a child's exit, a crash, recovery,
 * checkpoints), not the refusals it answers each client meanwhile; with the container's state
 * (restarts, OOM-killed, exit code) and the kernel's last words on killed processes.
 */
async function postgresReport(id: string, lines = 24): Promise<string> {
  const r = await run(["docker", "logs", "--timestamps", "--tail", "5000", id]);
  const server = (r.out + r.err).split("\n").filter((l) =>
    l.trim() &&
    !/password authentication|not yet accepting|is in recovery mode|is starting up|is shutting down|Consistent recovery state|Connection matched|connection authorized|connection received/
      .test(l)
  );
  const state = await run([
    "docker",
    "inspect",
    "-f",
    "restarts {{.RestartCount}}, status {{.State.Status}}, exit {{.State.ExitCode}}, oom-killed {{.State.OOMKilled}}, started {{.State.StartedAt}}",
    id,
  ]);
  const kernel = await run([
    "sh",
    "-c",
    "dmesg 2>&1 | grep -iE 'killed|oom|segfault|bus error' | tail -n 5",
  ]);
  // A full disk makes PostgreSQL PANIC at its next WAL write, and again after each recovery.
  const disk = await run([
    "df",
    "-h",
    "--output=target,avail,size,pcent",
    "/var/lib/docker",
    "/tmp",
  ]);
  return [
    `  container: ${state.out.trim() || state.err.trim()}`,
    `  kernel: ${kernel.out.trim().replaceAll("\n", "\n          ") || "(nothing)"}`,
    `  disk: ${disk.out.trim().split("\n").slice(1).join("; ") || disk.err.trim()}`,
    ...server.slice(-lines).map((l) => `  ${l.slice(0, 400)}`),
  ].join("\n");
}

/**
 * A process `docker exec` leaves behind in the postgres container (a healthcheck probe killed at
 * its timeout leaves its child) that then dies by a signal must not restart PostgreSQL: with the
 * postmaster as PID 1 it was reaped as a crashed backend and every connection dropped (stop 54's
 * CI). compose.yaml runs an init there; this leaves such an orphan and reads PostgreSQL's log.
 */
async function orphanDoesNotRestartPostgres(postgres: string): Promise<void> {
  const crashes = async () =>
    (await run(["docker", "logs", postgres])).err.split("\n")
      .filter((l) => /terminated by signal|terminating any other active server/.test(l)).length;
  const before = await crashes();
  // The exec'd shell exits at once; its child outlives it, then kills itself with SIGPIPE.
  await must([
    "docker",
    "exec",
    postgres,
    "sh",
    "-c",
    'sh -c "sleep 1; kill -PIPE \\$\\$" >/dev/null 2>&1 & exit 0',
  ]);
  await until("the orphan to be gone from the postgres container", 60_000, async () => {
    const top = await must(["docker", "top", postgres, "-o", "pid,args"]);
    return /\bsleep 1\b|sh -c sleep/.test(top) ? undefined : true;
  });
  const ready = await run(["docker", "exec", postgres, "pg_isready", "-U", "settlement"]);
  const after = await crashes();
  if (after !== before || ready.code !== 0) {
    throw new Error(
      `an orphan killed by SIGPIPE in the postgres container restarted PostgreSQL (${
        after - before
      } crash lines; pg_isready: ${ready.out.trim()})`,
    );
  }
  log("an orphan dying by a signal in the postgres container left PostgreSQL up (init is PID 1)");
}

/** Every role loads all its code with no network at all and gets as far as the database. */
async function offlineRoles(): Promise<void> {
  const db = "postgres://check:check@127.0.0.1:9/check";
  const cases: [string, string[]][] = [
    ["web", ["web"]],
    ["worker", ["worker"]],
    ["all", ["all"]],
    ["migrate", [
      "--entrypoint",
      "deno",
      IMAGE,
      "run",
      "--cached-only",
      "-A",
      "src/cli/migrate.ts",
    ]],
  ];
  // One at a time, each with a generous bound: the bound only stops a role that hangs. Beside
  // the test suite on two cores a role took 3-8 s here, and once four at once went past 90 s with
  // nothing printed (CI, stop 35); should one hang again, what its container printed is shown.
  const seconds: string[] = [];
  for (const [name, args] of cases) {
    const container = `${PROJECT}-offline-${name}`;
    const tailArgs = args[0] === "--entrypoint" ? args : [IMAGE, ...args];
    try {
      const r = await run([
        "docker",
        "run",
        "--rm",
        "--name",
        container,
        "--network",
        "none",
        "-e",
        "APP_ENV=development",
        "-e",
        `DATABASE_URL=${db}`,
        // Nothing will ever answer: seconds of the start's wait for its database, not a minute.
        // Three, not one: beside the suite on two cores a first attempt once took more than a
        // second to be refused (CI, 2026-12-01: migrate said only that nothing answered in 1 s).
        "-e",
        "DATABASE_STARTUP_WAIT_MS=3000",
        ...tailArgs,
      ], { timeoutMs: 180_000 });
      const text = r.out + r.err;
      if (r.timedOut) {
        const state = await run(["docker", "inspect", "-f", "{{.State.Status}}", container]);
        throw new Error(
          `${name} offline: no exit in ${r.seconds} s (container ${
            state.out.trim() || "gone"
          }); it printed:\n${tail(text, 10)}\n${await logsOf(container, 15)}`,
        );
      }
      // Reached the database: refused, or (a slow first attempt) the wait for it said nothing
      // answered in time. Either way everything before it loaded with no network.
      const reached = /ECONNREFUSED|did not answer within \d+ s \(DATABASE_STARTUP_WAIT_MS\)/;
      if (!reached.test(text) || /Download|Could not resolve|not a dependency/.test(text)) {
        throw new Error(
          `${name} offline: expected only the database refusal (exit ${r.code} after ${r.seconds} s)\n${
            tail(text, 15)
          }`,
        );
      }
      seconds.push(`${name} ${r.seconds} s`);
    } finally {
      // A docker client stopped at its time limit leaves its container running.
      await run(["docker", "rm", "-f", container]);
    }
  }
  log(
    `offline (network none): web, worker, all and migrate load everything and reach the database (${
      seconds.join(", ")
    })`,
  );
}

/** The image's service refuses production with the compose development secrets, naming each. */
async function productionRefusal(): Promise<void> {
  const env = devEnv(ROOT);
  const vars: Record<string, string> = {
    APP_ENV: "production",
    BASE_URL: "https://pay.example.com",
    SMTP_URL: "smtp://mail.example.com:587",
    DATABASE_URL: `postgres://settlement:${env.POSTGRES_PASSWORD}@postgres:5432/settlement`,
    TESTNET_RPC_URL: "https://rpc-testnet.example.com",
    PRODUCTION_RPC_URL: "https://rpc.example.com",
  };
  const named = ["JWT_SECRET", "WALLET_MASTER_KEY", "METRICS_TOKEN", "TESTNET_OPERATOR_KEY"];
  for (const k of [...named, "PRODUCTION_OPERATOR_KEY"]) vars[k] = env[k];
  const flags = Object.entries(vars).flatMap(([k, v]) => ["-e", `${k}=${v}`]);
  const r = await run(["docker", "run", "--rm", "--network", "none", ...flags, IMAGE, "web"], {
    timeoutMs: 180_000,
  });
  const text = r.out + r.err;
  const unnamed = [...named, "DATABASE_URL"].filter((v) => !text.includes(`- ${v}: `));
  if (r.code !== 78 || unnamed.length) {
    throw new Error(
      `production with development secrets: exit ${r.code}, unnamed ${unnamed}\n${text}`,
    );
  }
  log(`APP_ENV=production with the development values: exit 78 naming ${named.join(", ")}, …`);
}

const PROD_CONTAINER = `${PROJECT}-production-web`;

/**
 * The image in production with values of its own: the database password changed to a random
 * one (the compose development password is refused too), random secrets and operator keys, the
 * same database and chains: the web role starts and /readyz answers 200.
 */
async function productionStart(postgres: string): Promise<void> {
  const hex = () =>
    Array.from(crypto.getRandomValues(new Uint8Array(32)), (b) => b.toString(16).padStart(2, "0"))
      .join("");
  const password = hex();
  // A database of its own: the deployment's holds wallets sealed with the development master key,
  // which a start with another key refuses (as it must: none of them would open). The chains'
  // USDC is named by address, as a production deployment names it (README, Going live).
  const usdc = await must(
    psqlQuery(
      postgres,
      "select chain_id || ' ' || address from chain_contracts where name = 'TestUSDC'",
    ),
  );
  const usdcOf = (chainId: number) =>
    usdc.split("\n").map((l) => l.trim().split(" ")).find(([id]) => Number(id) === chainId)?.[1];
  await must(["docker", "exec", "-i", postgres, "psql", "-U", "settlement", "-d", "settlement"], {
    stdin: `alter role settlement password '${password}';\ncreate database settlement_prod;\n`,
  });
  const vars: Record<string, string> = {
    APP_ENV: "production",
    DATABASE_URL: `postgres://settlement:${password}@postgres:5432/settlement_prod`,
    // Beside the whole suite, CI once saw the stand-in PostgreSQL in crash recovery for over two
    // minutes here: the role waits for it (what is checked is that it starts), up to five.
    DATABASE_STARTUP_WAIT_MS: "300000",
    JWT_SECRET: hex(),
    WALLET_MASTER_KEY: hex(),
    METRICS_TOKEN: hex(),
    BASE_URL: "https://pay.example.com",
    SMTP_URL: "smtp://mail.example.com:587",
    TESTNET_RPC_URL: "http://chain-testnet:8545",
    PRODUCTION_RPC_URL: "http://chain-production:8545",
    TESTNET_OPERATOR_KEY: `0x${hex()}`,
    PRODUCTION_OPERATOR_KEY: `0x${hex()}`,
    TESTNET_USDC_ADDRESS: usdcOf(PROFILE_DEFS.testnet.chainId) ?? "",
    PRODUCTION_USDC_ADDRESS: usdcOf(PROFILE_DEFS.production.chainId) ?? "",
  };
  if (!vars.TESTNET_USDC_ADDRESS || !vars.PRODUCTION_USDC_ADDRESS) {
    throw new Error(`the deployment recorded no USDC for both chains: ${usdc.trim()}`);
  }
  const flags = Object.entries(vars).flatMap(([k, v]) => ["-e", `${k}=${v}`]);
  await must([
    "docker",
    "run",
    "-d",
    "--name",
    PROD_CONTAINER,
    "--network",
    `${PROJECT}_default`,
    "-p",
    "127.0.0.1::3000",
    ...flags,
    IMAGE,
    "web",
  ]);
  const web = http(`http://127.0.0.1:${(await published(PROD_CONTAINER)).port}`);
  const ready = await until("the production web role ready", 360_000, async () => {
    const [s] = await inspect([PROD_CONTAINER]);
    if (s.status === "exited") throw new Error(`it exited ${s.exitCode}:\n${await logsOf(s.id)}`);
    return await web.call("GET", "/readyz").then(
      (r) => r.status === 200 ? r : undefined,
      () => undefined,
    );
  });
  if (ready.json.status !== "ready") throw new Error(`production /readyz: ${ready.text}`);
  log("APP_ENV=production with values of its own: the web role starts and /readyz answers 200");
}

async function main(): Promise<void> {
  const t0 = performance.now();
  const disk = await run(["df", "-h", "--output=avail,size", "/var/lib/docker"]);
  log(
    `docker ${(await must(["docker", "version", "-f", "{{.Server.Version}}"])).trim()}; ${
      disk.out.trim().split("\n")[1]?.trim().replace(/\s+/, " free of ") ?? "disk unknown"
    } on its disk`,
  );
  const { cmd, label } = await composeCommand();
  log(label);
  await baseImages();
  const build = await buildImage();
  await composeRefusesMissingValues(cmd);

  const first = freePortPair();
  const env = {
    SETTLEMENT_IMAGE: IMAGE,
    WEB_PORTS: `${first}-${first + 1}`,
    BIND_ADDRESS: "127.0.0.1",
  };
  const files = ["--env-file", "compose.dev.env", "-f", "compose.yaml", "-f", "compose.dev.yaml"];
  const compose: Compose = (args, timeoutMs) =>
    must([...cmd, ...files, "-p", PROJECT, ...args], { cwd: ROOT, env, timeoutMs });
  await run(["docker", "rm", "-f", "-v", PROD_CONTAINER]);
  await compose(["down", "-v", "--remove-orphans"]);
  try {
    const t = performance.now();
    await compose(["up", "-d"], 300_000);
    const ids = await waitHealthy(compose);
    log(
      `up: 2 web replicas and the worker healthy in ${
        Math.round((performance.now() - t) / 1000)
      } s`,
    );
    for (const id of [...ids.web, ids.worker]) {
      const uid = (await must(["docker", "exec", id, "id", "-u"])).trim();
      if (uid === "0") throw new Error(`container ${id.slice(0, 12)} runs as root`);
    }
    const urls: Http[] = [];
    for (const id of ids.web) {
      const p = await published(id);
      if (p.host !== "127.0.0.1") throw new Error(`web publishes on ${p.host}, not 127.0.0.1`);
      urls.push(http(`http://127.0.0.1:${p.port}`));
    }
    log(`non-root (uid 1993) everywhere; web on ${urls.map((u) => u.base).join(" and ")} only`);
    await orphanDoesNotRestartPostgres(ids.postgres);
    await merchantFlow(urls[0], urls[1], ids.worker);
    await checkMailOnce(urls, ids.worker, ids.postgres);
    if (unavailable.length) {
      // Answered as it should (503, nothing done) and retried; why the database was gone is shown.
      const first = unavailable[0], last = unavailable.at(-1)!;
      log(
        `the deployment answered 503 with Retry-After ${unavailable.length} times (${first.at} to ${last.at}, first ${first.method} ${first.path}: ${first.hint}); retried, then answered. PostgreSQL meanwhile:\n${await postgresReport(
          ids.postgres,
        )}`,
      );
    }
    await productionStart(ids.postgres);
    await offlineRoles();
    await productionRefusal();
  } catch (e) {
    const ps = await run([...cmd, ...files, "-p", PROJECT, "ps"], { cwd: ROOT, env });
    console.error(ps.out + ps.err);
    // CI keeps only the end of its output: the roles' last errors and PostgreSQL's account go
    // with the verdict, PostgreSQL's last.
    const reports: string[] = [];
    for (const service of ["web", "worker", "postgres"]) {
      const ids = await run([...cmd, ...files, "-p", PROJECT, "ps", "-q", service], {
        cwd: ROOT,
        env,
      });
      for (const id of ids.out.trim().split("\n").filter(Boolean)) {
        reports.push(
          service === "postgres"
            ? `postgres ${id.slice(0, 12)} (its server lines):\n${await postgresReport(id)}`
            : `${service} ${id.slice(0, 12)}'s last errors:\n${await errorsOf(id)}`,
        );
      }
    }
    throw new CheckFailed(e, reports);
  } finally {
    if (Deno.env.get("CONTAINER_CHECK_KEEP") !== "1") {
      // Not a compose service: it would keep the project's network from being removed.
      await run(["docker", "rm", "-f", "-v", PROD_CONTAINER]);
      await compose(["down", "-v", "--remove-orphans"], 180_000).catch((e) =>
        console.error(`teardown failed: ${e}`)
      );
      log("torn down (down -v)");
    }
  }
  const total = Math.round((performance.now() - t0) / 1000);
  log(`passed in ${total} s (image ${build.mb} MB, built in ${build.seconds} s)`);
}

/** A failure, with what the deployment's containers said meanwhile. */
class CheckFailed extends Error {
  constructor(readonly failure: unknown, readonly reports: string[]) {
    super(failure instanceof Error ? failure.message : String(failure));
  }
}

if (import.meta.main) {
  try {
    await main();
  } catch (e) {
    // Each line cut short (a role's JSON log line with its stack runs to kilobytes), and the
    // containers' reports after the verdict: CI keeps only the end of what is printed.
    const message = (e instanceof Error ? e.message : String(e)).split("\n")
      .map((l) => l.length > 400 ? `${l.slice(0, 400)}…` : l).join("\n");
    // The verdict goes last, after the containers' reports (which can run past what CI keeps of
    // the end: stop 54's verdict was cut off by them), and is said once before them too.
    log(`FAILED: ${message}`);
    if (e instanceof CheckFailed && e.reports.length) {
      for (const r of e.reports) console.error(r);
      log(`FAILED (the verdict again, after the containers' reports): ${message}`);
    }
    Deno.exit(1);
  }
}
