/**
 * Docker and Compose as the container check drives them: commands run with a bounded time and a
 * clean environment (no secret of the caller's shell leaks into the compose interpolation),
 * Compose v2 (`docker compose`) when the CLI has it, else v1 (`docker-compose --compatibility`,
 * Debian's package), and small readers of container state.
 */

export interface Run {
  code: number;
  out: string;
  err: string;
  /** Killed at its time limit (what it printed until then is in out and err). */
  timedOut: boolean;
  seconds: number;
}

const started = performance.now();
export function log(msg: string): void {
  console.log(`[container-check +${Math.round((performance.now() - started) / 1000)}s] ${msg}`);
}

/** The environment every docker/compose command gets: only what locates the daemon. */
export function baseEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const k of ["PATH", "HOME", "DOCKER_HOST", "DOCKER_CONFIG", "DOCKER_CONTEXT"]) {
    const v = Deno.env.get(k);
    if (v) env[k] = v;
  }
  return env;
}

export async function run(
  cmd: string[],
  opts: { env?: Record<string, string>; cwd?: string; timeoutMs?: number; stdin?: string } = {},
): Promise<Run> {
  const t = performance.now();
  const signal = AbortSignal.timeout(opts.timeoutMs ?? 120_000);
  const child = new Deno.Command(cmd[0], {
    args: cmd.slice(1),
    env: { ...baseEnv(), ...opts.env },
    clearEnv: true,
    cwd: opts.cwd,
    stdin: opts.stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
    signal,
  }).spawn();
  if (opts.stdin !== undefined) {
    const w = child.stdin.getWriter();
    await w.write(new TextEncoder().encode(opts.stdin));
    await w.close();
  }
  const r = await child.output();
  const dec = new TextDecoder();
  return {
    code: r.code,
    out: dec.decode(r.stdout),
    err: dec.decode(r.stderr),
    timedOut: signal.aborted,
    seconds: Math.round((performance.now() - t) / 1000),
  };
}

/** Runs and fails with the command's own output when it exits non-zero. */
export async function must(cmd: string[], opts: Parameters<typeof run>[1] = {}): Promise<string> {
  const r = await run(cmd, opts);
  if (r.code !== 0) {
    const how = r.timedOut
      ? `was stopped after ${r.seconds} s (its time limit)`
      : `exited ${r.code}`;
    throw new Error(`${cmd.join(" ")} ${how}\n${tail(r.err || r.out, 40)}`);
  }
  return r.out;
}

/** The command line that runs one query with psql in the deployment's postgres container. */
export function psqlQuery(postgres: string, query: string): string[] {
  return [
    "docker",
    "exec",
    postgres,
    "psql",
    "-U",
    "settlement",
    "-d",
    "settlement",
    "-Atc",
    query,
  ];
}

export function tail(text: string, lines: number): string {
  return text.trimEnd().split("\n").slice(-lines).join("\n");
}

export async function composeCommand(): Promise<{ cmd: string[]; label: string }> {
  const v2 = await run(["docker", "compose", "version", "--short"]).catch(() => null);
  if (v2?.code === 0) return { cmd: ["docker", "compose"], label: `compose v2 ${v2.out.trim()}` };
  const v1 = await run(["docker-compose", "version", "--short"]).catch(() => null);
  if (v1?.code === 0) {
    // v1 maps deploy.replicas to a scale only in compatibility mode.
    return { cmd: ["docker-compose", "--compatibility"], label: `compose v1 ${v1.out.trim()}` };
  }
  throw new Error("neither `docker compose` (v2) nor `docker-compose` (v1) is installed");
}

export interface ContainerState {
  id: string;
  name: string;
  status: string;
  exitCode: number;
  health?: string;
  restarts: number;
}

interface Inspected {
  Id: string;
  Name: string;
  RestartCount?: number;
  State: { Status: string; ExitCode: number; Health?: { Status: string } };
}

export async function inspect(ids: string[]): Promise<ContainerState[]> {
  if (!ids.length) return [];
  const out = await must(["docker", "inspect", ...ids]);
  return (JSON.parse(out) as Inspected[]).map((c) => ({
    id: c.Id,
    name: String(c.Name).replace(/^\//, ""),
    status: c.State.Status,
    exitCode: c.State.ExitCode,
    health: c.State.Health?.Status,
    restarts: c.RestartCount ?? 0,
  }));
}

/** `host:port` a container publishes for its port 3000. */
export async function published(id: string): Promise<{ host: string; port: number }> {
  const out = (await must(["docker", "port", id, "3000/tcp"])).trim().split("\n")[0];
  const m = /^(.*):(\d+)$/.exec(out);
  if (!m) throw new Error(`docker port ${id}: ${out}`);
  return { host: m[1], port: Number(m[2]) };
}

/**
 * Two consecutive free loopback ports for the two web replicas: below the range the test suite
 * draws its servers' ports from (20000–32000, tests/helpers/service.ts), which runs beside this
 * check in CI, and below the kernel's ephemeral range.
 */
export function freePortPair(): number {
  for (let i = 0; i < 200; i++) {
    const p = 15_000 + Math.floor(Math.random() * 4_998);
    try {
      Deno.listen({ hostname: "127.0.0.1", port: p }).close();
      Deno.listen({ hostname: "127.0.0.1", port: p + 1 }).close();
      return p;
    } catch {
      // taken: draw again
    }
  }
  throw new Error("no two free consecutive ports between 15000 and 20000");
}

/** Polls `fn` until it returns a value other than undefined, or fails after `ms`. */
export async function until<T>(
  what: string,
  ms: number,
  fn: () => Promise<T | undefined>,
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${ms / 1000} s waiting for ${what}`);
    }
    await new Promise((r) => setTimeout(r, 1000));
  }
}
