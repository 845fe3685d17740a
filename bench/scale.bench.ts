/**
 * Scale: `POST /api/payments/initialize` (API key) under 50 connections against one web
 * process, then against two (25 connections each), each time beside one worker process, all
 * over one database and the same chains. Prints requests per second per phase and the CPU each
 * process used (from /proc), then checks the database for duplicates.
 *
 * On a 2-core machine shared with PostgreSQL, anvil and the load generator, a second web
 * process cannot add cores; the number says what a second process costs or gains here.
 */
import { startTestService } from "../tests/helpers/service.ts";
import { createMerchant } from "../tests/helpers/accounts.ts";
import { deploymentEnv, type ServiceProcess, startProcess } from "../tests/helpers/processes.ts";
import { loadavg } from "./payments.bench.ts";

const DURATION = Number(Deno.env.get("BENCH_SECONDS") ?? "10");
const CONNECTIONS = 50;
const TICKS_PER_SECOND = 100; // Linux USER_HZ

interface Load {
  rps: number;
  p50: number;
  p99: number;
  requests: number;
  non2xx: number;
  errors: number;
  "2xx"?: number;
}

function cpuSeconds(pid: number): number {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND; // utime + stime
  } catch {
    return NaN;
  }
}

/** One generator process for every target of a phase, `connections` each. */
async function load(urls: string[], key: string, connections: number): Promise<Load[]> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-all",
      new URL("./load.ts", import.meta.url).pathname,
      JSON.stringify(urls.map((url) => ({
        url,
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": key },
        body: JSON.stringify({ amount: "12.50", description: "scale" }),
        connections,
        duration: DURATION,
      }))),
    ],
    stdout: "piped",
    stderr: "inherit",
  }).output();
  return JSON.parse(new TextDecoder().decode(out.stdout).trim().split("\n").at(-1)!);
}

async function phase(name: string, webs: ServiceProcess[], all: ServiceProcess[], key: string) {
  const before = new Map(all.map((p) => [p.pid, cpuSeconds(p.pid)]));
  const t0 = performance.now();
  const per = Math.floor(CONNECTIONS / webs.length);
  const results = await load(webs.map((w) => `${w.baseUrl}/api/payments/initialize`), key, per);
  const wall = (performance.now() - t0) / 1000;
  const total = results.reduce((a, r) => a + r.rps, 0);
  const ok = results.reduce((a, r) => a + r.requests - r.non2xx - r.errors, 0);
  console.log(`${name}: ${total.toFixed(0)} req/s in total (${CONNECTIONS} connections)`);
  for (const [i, r] of results.entries()) {
    console.log(
      `  web ${i + 1}: ${r.rps.toFixed(0)} req/s  p50 ${r.p50} ms  p99 ${r.p99} ms  ` +
        `(${r.requests} requests, ${r.non2xx} non-2xx, ${r.errors} errors)`,
    );
  }
  for (const p of all) {
    const used = cpuSeconds(p.pid) - before.get(p.pid)!;
    console.log(
      `  cpu ${p.role.padEnd(6)} pid ${p.pid}: ${used.toFixed(1)} s over ${wall.toFixed(1)} s ` +
        `(${(100 * used / wall).toFixed(0)}% of one core)`,
    );
  }
  return { total, ok };
}

export async function run() {
  const primary = await startTestService({ workers: false, env: { RATE_LIMITS: "off" } });
  const procs: ServiceProcess[] = [];
  try {
    const env = { ...deploymentEnv(primary), RATE_LIMITS: "off", LOG_LEVEL: "error" };
    const [worker, web1] = await Promise.all([
      startProcess("worker", env),
      startProcess("web", env),
    ]);
    procs.push(worker, web1);
    // After the worker is up: the sign-up code is mailed by a job.
    const m = await createMerchant(primary, { businessName: "Scale Bench" });
    const web2 = await startProcess("web", env);
    procs.push(web2);
    // The phases alternate (1, 2, 1, 2 webs), so a neighbour's load on this shared machine
    // falls on both; web 2 sits idle during the one-web phases.
    const ROUNDS = Number(Deno.env.get("BENCH_ROUNDS") ?? "2");
    console.log(`${DURATION} s per phase, ${ROUNDS} rounds; ${loadavg()}`);
    const ones: number[] = [];
    const twos: number[] = [];
    let answered = 0;
    for (let r = 1; r <= ROUNDS; r++) {
      const one = await phase(`round ${r}, 1 web + 1 worker`, [web1], procs, m.apiKey);
      const two = await phase(`round ${r}, 2 web + 1 worker`, [web1, web2], procs, m.apiKey);
      ones.push(one.total);
      twos.push(two.total);
      answered += one.ok + two.ok;
    }
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    console.log(
      `mean: 1 web ${mean(ones).toFixed(0)} req/s, 2 webs ${mean(twos).toFixed(0)} req/s: ` +
        `${(mean(twos) / mean(ones)).toFixed(2)}×; after: ${loadavg()}`,
    );

    const [{ n, dupes }] = await primary.db.sql<{ n: number; dupes: number }[]>`
      select count(*)::int as n,
             (count(*) - count(distinct reference))::int as dupes
      from payments where merchant_id = ${m.id}`;
    // autocannon counts the answers it read before the clock ran out; requests still in flight
    // then (at most one per connection per phase) were stored but not counted.
    const inFlight = n - answered;
    const fine = dupes === 0 && inFlight >= 0 && inFlight <= CONNECTIONS * ROUNDS * 2;
    console.log(
      `database: ${n} payments for ${answered} counted 201s (+${inFlight} in flight when a ` +
        `phase ended); ${dupes} duplicate references: ${fine ? "ok" : "MISMATCH"}`,
    );
  } finally {
    await Promise.all(procs.map((p) => p.stop()));
    await primary.close();
  }
}
