/** Small helpers to time things and print them as aligned rows with ratios. */
export interface Measure {
  name: string;
  ops: number;
  ms: number;
  latencies?: number[];
}

export async function measure(
  name: string,
  ops: number,
  fn: () => Promise<void>,
): Promise<Measure> {
  const t0 = performance.now();
  await fn();
  return { name, ops, ms: performance.now() - t0 };
}

export function perSecond(m: Measure): number {
  return m.ops / (m.ms / 1000);
}

export function percentile(values: number[], p: number): number {
  if (!values.length) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

export function row(m: Measure, baseline?: Measure): string {
  const rate = perSecond(m).toFixed(1).padStart(9);
  const ratio = baseline
    ? `  ${(perSecond(m) / perSecond(baseline)).toFixed(2)}× of ${baseline.name}`
    : "";
  const lat = m.latencies?.length
    ? `  p50 ${percentile(m.latencies, 50).toFixed(1)} ms  p99 ${
      percentile(m.latencies, 99).toFixed(1)
    } ms`
    : "";
  return `${m.name.padEnd(44)} ${rate} /s  (${m.ops} in ${m.ms.toFixed(0)} ms)${lat}${ratio}`;
}

/**
 * CPU time (ms) this process's main thread (the event loop) and the whole process have used, from
 * /proc (Linux; null elsewhere). CPU per operation is steadier than operations per second on a
 * machine that other work shares, and tells what the event loop itself spends.
 */
export function cpuMs(): { main: number; process: number } | null {
  try {
    const ticks = (stat: string) => {
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      return (Number(f[11]) + Number(f[12])) * 10; // utime + stime, at 100 ticks per second
    };
    return {
      main: ticks(Deno.readTextFileSync(`/proc/self/task/${Deno.pid}/stat`)),
      process: ticks(Deno.readTextFileSync("/proc/self/stat")),
    };
  } catch {
    return null;
  }
}

/** CPU time (ms) of the whole machine, split by who used it (Linux /proc; null elsewhere). */
export interface MachineCpu {
  /** This process: the service and, in the benches, the load generator. */
  self: number;
  postgres: number;
  anvil: number;
  /** Every other process (an upstream's, the kernel's threads, a neighbour's). */
  other: number;
  /** All cores, from /proc/stat: busy, idle, and stolen (a virtual machine's host ran others). */
  busy: number;
  idle: number;
  steal: number;
}

/**
 * The machine's CPU by process kind, to split what an operation costs on every core, not only in
 * this process: on a machine the service shares with its database and its chain node, a path's
 * ceiling is the work it causes everywhere. Processes that exit between two samples are missed.
 */
export function machineCpu(): MachineCpu | null {
  try {
    const out: MachineCpu = {
      self: 0,
      postgres: 0,
      anvil: 0,
      other: 0,
      busy: 0,
      idle: 0,
      steal: 0,
    };
    for (const entry of Deno.readDirSync("/proc")) {
      if (!/^\d+$/.test(entry.name)) continue;
      let stat: string;
      try {
        stat = Deno.readTextFileSync(`/proc/${entry.name}/stat`);
      } catch {
        continue; // exited since the listing
      }
      const comm = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      const ms = (Number(f[11]) + Number(f[12])) * 10; // utime + stime, at 100 ticks per second
      const kind = Number(entry.name) === Deno.pid
        ? "self"
        : comm.startsWith("postgres")
        ? "postgres"
        : comm.startsWith("anvil")
        ? "anvil"
        : "other";
      out[kind] += ms;
    }
    // cpu  user nice system idle iowait irq softirq steal …
    const t = Deno.readTextFileSync("/proc/stat").split("\n")[0].trim().split(/\s+/).slice(1)
      .map(Number);
    out.busy = (t[0] + t[1] + t[2] + t[5] + t[6]) * 10;
    out.idle = (t[3] + t[4]) * 10;
    out.steal = (t[7] ?? 0) * 10;
    return out;
  } catch {
    return null;
  }
}

/** What happened between two samples, in µs per operation. */
export function machineCpuPer(a: MachineCpu, b: MachineCpu, ops: number): MachineCpu {
  const per = (k: keyof MachineCpu) => (b[k] - a[k]) / ops * 1000;
  return {
    self: per("self"),
    postgres: per("postgres"),
    anvil: per("anvil"),
    other: per("other"),
    busy: per("busy"),
    idle: per("idle"),
    steal: per("steal"),
  };
}

/**
 * Runs `fn` under V8's sampling profiler (node:inspector) when `path` is set, and writes this
 * thread's profile there as a `.cpuprofile` (open it in Chrome DevTools' Performance panel or
 * speedscope): where a path's event-loop time goes, measured in the bench that times it. The
 * sampling itself slows what it measures (the batched paid calls ran ~30% slower under it), so a
 * profiled round's numbers are not the bench's; its shares are what to read. Without `path`, just
 * `fn`.
 */
export async function profiled<T>(path: string | undefined, fn: () => Promise<T>): Promise<T> {
  if (!path) return await fn();
  const { Session } = await import("node:inspector");
  const session = new Session();
  session.connect();
  const post = <R>(method: string, params: object = {}) =>
    new Promise<R>((resolve, reject) =>
      session.post(method, params, (e: Error | null, r: unknown) => e ? reject(e) : resolve(r as R))
    );
  try {
    await post("Profiler.enable");
    await post("Profiler.setSamplingInterval", { interval: 250 });
    await post("Profiler.start");
    const out = await fn();
    const { profile } = await post<{ profile: unknown }>("Profiler.stop");
    // The folder named by BENCH_CPU_PROFILE is made if it is not there yet.
    const dir = path.slice(0, path.lastIndexOf("/"));
    if (dir) await Deno.mkdir(dir, { recursive: true });
    await Deno.writeTextFile(path, JSON.stringify(profile));
    return out;
  } finally {
    session.disconnect();
  }
}
