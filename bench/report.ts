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
