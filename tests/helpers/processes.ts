/**
 * Service processes for real: `src/main.ts <role>` in child processes against one database and
 * the chains of an in-process primary (which recorded the contracts), as a deployment runs them.
 */
import type { TestService } from "./service.ts";
import { freePort } from "./service.ts";
import { ANVIL_KEYS } from "./anvil.ts";
import { waitFor } from "./poll.ts";

export interface ServiceProcess {
  role: "all" | "web" | "worker";
  baseUrl: string;
  pid: number;
  /** The last few KB the process wrote to stderr and stdout (for failure messages). */
  output(): string;
  stop(): Promise<void>;
}

/** The environment a process of `primary`'s deployment needs: same database, chains, secrets. */
export function deploymentEnv(primary: TestService): Record<string, string> {
  const env: Record<string, string> = {
    APP_ENV: "test",
    DATABASE_URL: primary.databaseUrl,
    JWT_SECRET: primary.deps.config.JWT_SECRET!,
    WALLET_MASTER_KEY: primary.deps.config.WALLET_MASTER_KEY!,
    LOG_LEVEL: "warn",
    CHAIN_POLL_INTERVAL_MS: "50",
    CHAINS: primary.deps.chain.profiles().join(","),
  };
  for (const p of primary.deps.chain.profiles()) {
    const rt = primary.deps.chain.runtime(p);
    env[`${rt.profile.envPrefix}_RPC_URL`] = rt.rpcUrl;
    env[`${rt.profile.envPrefix}_OPERATOR_KEY`] = ANVIL_KEYS[0];
    env[`${rt.profile.envPrefix}_CONFIRMATIONS`] = "0";
  }
  return env;
}

export async function startProcess(
  role: ServiceProcess["role"],
  env: Record<string, string>,
): Promise<ServiceProcess> {
  // The port is drawn before the process binds it; another test may take it in between.
  for (let attempt = 1;; attempt++) {
    try {
      return await spawnProcess(role, env);
    } catch (e) {
      if (!(e instanceof PortTaken) || attempt >= 5) throw e;
    }
  }
}

class PortTaken extends Error {}

/**
 * Whether process `pid` itself holds the IPv4 socket listening on `port` (its open sockets in
 * /proc/<pid>/fd against /proc/net/tcp's listeners): a readiness answer on a port drawn before
 * the bind may come from whoever bound it first.
 */
export function listensOn(pid: number, port: number): boolean {
  const inodes = new Set<string>();
  try {
    for (const fd of Deno.readDirSync(`/proc/${pid}/fd`)) {
      try {
        const m = /^socket:\[(\d+)\]$/.exec(Deno.readLinkSync(`/proc/${pid}/fd/${fd.name}`));
        if (m) inodes.add(m[1]);
      } catch { /* closed meanwhile */ }
    }
  } catch {
    return false; // gone
  }
  const hexPort = port.toString(16).toUpperCase().padStart(4, "0");
  for (const line of Deno.readTextFileSync("/proc/net/tcp").split("\n").slice(1)) {
    // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
    const f = line.trim().split(/\s+/);
    if (f.length > 9 && f[3] === "0A" && f[1].endsWith(`:${hexPort}`) && inodes.has(f[9])) {
      return true;
    }
  }
  return false;
}

async function spawnProcess(
  role: ServiceProcess["role"],
  env: Record<string, string>,
): Promise<ServiceProcess> {
  const port = freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const dataDir = Deno.makeTempDirSync({ prefix: `settlement-${role}-` });
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", new URL("../../src/main.ts", import.meta.url).pathname, role],
    env: {
      PORT: String(port),
      HOST: "127.0.0.1",
      BASE_URL: baseUrl,
      DATA_DIR: dataDir,
      // Tests start several processes on the machine's server beside other test files (its
      // max_connections, 100 by default, was once exceeded): small pools, unless a test says.
      DATABASE_POOL_MAX: "4",
      ...env,
    },
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let tail = "";
  const drain = async (s: ReadableStream<Uint8Array>) => {
    for await (const chunk of s.pipeThrough(new TextDecoderStream())) {
      tail = (tail + chunk).slice(-4000);
    }
  };
  const drained = Promise.all([drain(child.stdout), drain(child.stderr)]);
  const exited = child.status;
  let exitCode: number | null = null;
  exited.then((st) => (exitCode = st.code));
  let stopped = false;
  const proc: ServiceProcess = {
    role,
    baseUrl,
    pid: child.pid,
    output: () => tail,
    stop: async () => {
      if (stopped) return;
      stopped = true;
      try {
        child.kill("SIGTERM");
      } catch { /* already gone */ }
      await exited;
      await drained;
      await Deno.remove(dataDir, { recursive: true }).catch(() => {});
    },
  };
  try {
    await waitFor(async () => {
      if (exitCode !== null) return true;
      const res = await fetch(`${baseUrl}/readyz`).catch(() => null);
      await res?.body?.cancel();
      // Ready only if the answer is ours: a process of another test that took the port first
      // answers too, while this one fails to bind and exits (CI: a worker's listener answered).
      return res?.status === 200 && listensOn(child.pid, port);
    }, { timeoutMs: 60_000, intervalMs: 100, what: `${role} on ${baseUrl} to be ready` });
    if (exitCode !== null) throw new Error(`${role} exited with ${exitCode}`);
  } catch (e) {
    await proc.stop();
    if (/AddrInUse|address already in use/i.test(tail)) throw new PortTaken(`port ${port} taken`);
    throw new Error(`${e}\n--- output ---\n${tail}`);
  }
  return proc;
}

/**
 * A fixture process (`tests/fixtures/<name>.ts`) serving the primary's database and chains on its
 * own port, which kills itself at a point its environment names: resolves once it printed
 * "ready", with its base URL. A port another test's process took between our check and the
 * worker's bind (test files run side by side) is another try on another port.
 */
export async function startCrashWorker(
  primary: TestService,
  fixture: string,
  extra: Record<string, string>,
): Promise<{ child: Deno.ChildProcess; baseUrl: string }> {
  for (let attempt = 1;; attempt++) {
    try {
      return await spawnCrashWorker(primary, fixture, extra);
    } catch (e) {
      if (!(e instanceof PortTaken) || attempt >= 5) throw e;
    }
  }
}

async function spawnCrashWorker(
  primary: TestService,
  fixture: string,
  extra: Record<string, string>,
): Promise<{ child: Deno.ChildProcess; baseUrl: string }> {
  const port = freePort();
  // Its DATA_DIR is ours to remove: the worker kills itself, so it cannot.
  const dataDir = Deno.makeTempDirSync({ prefix: `settlement-${fixture}-` });
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", `tests/fixtures/${fixture}.ts`],
    env: { ...deploymentEnv(primary), PORT: String(port), DATA_DIR: dataDir, ...extra },
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  child.status.finally(() => Deno.remove(dataDir, { recursive: true }).catch(() => {}));
  // Passed through as it comes (as when inherited), and kept until "ready" to tell a taken port.
  let errors = "";
  let ready = false;
  const passed = child.stderr.pipeTo(
    new WritableStream({
      write: async (chunk) => {
        if (!ready) errors += new TextDecoder().decode(chunk);
        await Deno.stderr.write(chunk);
      },
    }),
  ).catch(() => {});
  const reader = child.stdout.getReader();
  let out = "";
  while (!out.includes("ready")) {
    const { value, done } = await reader.read();
    if (done) {
      await child.status;
      await passed;
      if (/AddrInUse|address already in use/i.test(errors)) {
        throw new PortTaken(`port ${port} taken`);
      }
      throw new Error(`the worker exited before it was ready: ${out}\n${errors}`);
    }
    out += new TextDecoder().decode(value);
  }
  ready = true;
  errors = "";
  reader.releaseLock();
  return { child, baseUrl: `http://127.0.0.1:${port}` };
}
