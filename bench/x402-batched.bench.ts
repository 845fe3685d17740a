/**
 * x402 paid calls on the gateway balance, settled in batches (Circle's batched option on
 * `/x402/{slug}`): paid calls per second beside a bare Hono route doing one INSERT (the payments
 * bench's baseline) and the upstream called directly, driven alike (concurrent fetch workers in
 * this process, payments signed before the clock starts); rounds alternate, so a neighbour's
 * load falls on both sides of each ratio, after a warm-up round of each that is not counted.
 * Then the settlement: batches, payments per transaction, gas per payment, and the lag from
 * serving to settled.
 */
import { Hono } from "hono";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { startTestService } from "../tests/helpers/service.ts";
import { api, createMerchant } from "../tests/helpers/accounts.ts";
import { externalBuyer } from "../tests/helpers/x402.ts";
import { batchedPayment } from "../tests/helpers/x402-batched.ts";
import { type AppModule, modules } from "../src/modules/index.ts";
import { settleRound } from "../src/modules/x402/x402.batched.settle.ts";
import {
  cpuMs,
  type MachineCpu,
  machineCpu,
  machineCpuPer,
  percentile,
  profiled,
} from "./report.ts";
import { upstreamProcess } from "./upstream-process.ts";
import { DEPLOYED_POLLING } from "./deployed.ts";

const WORKERS = Number(Deno.env.get("BENCH_X402_BATCHED_WORKERS") ?? "32");
/**
 * A folder: each measured round of paid calls is profiled there (`profiled`, report.ts), this
 * process's main thread: the service's event loop and the bench's fetch workers.
 */
const PROFILE = Deno.env.get("BENCH_CPU_PROFILE");
const CALLS = Number(Deno.env.get("BENCH_X402_BATCHED_CALLS") ?? "60");
const ROUNDS = Number(Deno.env.get("BENCH_X402_BATCHED_ROUNDS") ?? "3");

interface Run {
  ops: number;
  ms: number;
  latencies: number[];
  failures: number;
  /** CPU of the event loop's thread and of the whole process, ms per 1,000 operations. */
  cpu?: { main: number; process: number };
  /** CPU of the whole machine by process kind, µs per operation. */
  machine?: MachineCpu;
}

async function drive(jobs: (() => Promise<boolean>)[][]): Promise<Run> {
  const latencies: number[] = [];
  let failures = 0;
  const m0 = machineCpu();
  const c0 = cpuMs();
  const t0 = performance.now();
  await Promise.all(jobs.map(async (queue) => {
    for (const job of queue) {
      const s = performance.now();
      if (!(await job())) failures++;
      latencies.push(performance.now() - s);
    }
  }));
  const ms = performance.now() - t0;
  const c1 = cpuMs();
  const m1 = machineCpu();
  const per = (a: number, b: number) => (b - a) / latencies.length * 1000;
  const cpu = c0 && c1
    ? { main: per(c0.main, c1.main), process: per(c0.process, c1.process) }
    : undefined;
  const machine = m0 && m1 ? machineCpuPer(m0, m1, latencies.length) : undefined;
  return { ops: latencies.length, ms, latencies, failures, cpu, machine };
}

const rate = (r: Run) => r.ops / (r.ms / 1000);

function machineMean(runs: Run[]): MachineCpu | null {
  const ms = runs.map((r) => r.machine).filter((m): m is MachineCpu => m !== undefined);
  if (!ms.length) return null;
  const avg = (k: keyof MachineCpu) => ms.reduce((s, m) => s + m[k], 0) / ms.length;
  return {
    self: avg("self"),
    postgres: avg("postgres"),
    anvil: avg("anvil"),
    other: avg("other"),
    busy: avg("busy"),
    idle: avg("idle"),
    steal: avg("steal"),
  };
}

const cpuSplit = (m: MachineCpu) =>
  `this process ${m.self.toFixed(0)} µs, PostgreSQL ${m.postgres.toFixed(0)}, anvil ${
    m.anvil.toFixed(0)
  }, other processes ${m.other.toFixed(0)}; all cores busy ${m.busy.toFixed(0)} µs, idle ${
    m.idle.toFixed(0)
  } µs${m.steal >= 1 ? `, stolen by the host ${m.steal.toFixed(0)} µs` : ""}`;

function line(name: string, r: Run, baseline?: Run, what = "bare INSERT") {
  const ratio = baseline ? `  ${(rate(r) / rate(baseline)).toFixed(2)}× of ${what}` : "";
  return `${name.padEnd(44)} ${rate(r).toFixed(0).padStart(7)} /s  p50 ${
    percentile(r.latencies, 50).toFixed(1)
  } ms  p99 ${percentile(r.latencies, 99).toFixed(1)} ms  (${r.ops}, ${r.failures} failed)${ratio}${
    r.cpu
      ? `; CPU per call: event loop ${r.cpu.main.toFixed(0)} µs, process ${
        r.cpu.process.toFixed(0)
      } µs`
      : ""
  }`;
}

/** Prints the batched lines; returns the mean paid calls/s of `/x402/{slug}`. */
export async function run(): Promise<number> {
  const bare: AppModule = {
    name: "bench-bare",
    api: (deps) =>
      new Hono().post("/bench/bare-insert", async (c) => {
        await deps.sql`
          insert into bench_bare (payer, amount, created_at)
          values (${"0x" + "1".repeat(40)}, 1000, ${new Date()})`;
        return c.json({ success: true }, 201);
      }),
  };
  const upstream = await upstreamProcess();
  const svc = await startTestService({
    // Rate limits as a user has them (on): a paid call is not counted (docs/decisions.md).
    env: { LOG_LEVEL: "error", DATABASE_POOL_MAX: "20", ...DEPLOYED_POLLING },
    modules: [...modules, bare],
  });
  try {
    await svc.db.sql`create table if not exists bench_bare (id bigserial primary key,
      payer text not null, amount bigint not null, created_at timestamptz not null)`;
    const m = await createMerchant(svc);
    const upstreamUrl = `${upstream.url}/weather`;
    const listed = await api(svc)("POST", "/api/x402/listings", {
      headers: { authorization: `Bearer ${m.apiKey}` },
      body: { slug: "bench-batched", upstreamUrl, price: "0.001", methods: ["GET"] },
    });
    if (listed.status !== 201) throw new Error(listed.text);
    const resource = `${svc.baseUrl}/x402/bench-batched`;
    const seller = m.walletAddress!.toLowerCase();
    const buyers = await Promise.all(
      Array.from({ length: WORKERS }, async () => {
        const key = generatePrivateKey();
        const b = await externalBuyer(svc, key, 10_000_000n);
        await b.deposit(5_000_000n);
        return privateKeyToAccount(key);
      }),
    );
    const sign = () =>
      Promise.all(buyers.map(async (account) => {
        const out: string[] = [];
        for (let i = 0; i < CALLS; i++) {
          out.push(await batchedPayment(svc, account, resource, { to: seller, value: 1_000n }));
        }
        return out;
      }));
    const runs = { bare: [] as Run[], paid: [] as Run[], direct: [] as Run[] };
    // Round 0 warms up, unmeasured: the paths' code compiled, each payer's mirror read from the
    // chain once (its first call), the connections opened; the rounds after it are steady state.
    for (let r = 0; r <= ROUNDS; r++) {
      if (r === 1) { for (const k of ["bare", "paid", "direct"] as const) runs[k].length = 0; }
      const headers = await sign();
      runs.bare.push(
        await drive(headers.map((list) =>
          list.map(() => async () => {
            const res = await fetch(`${svc.baseUrl}/bench/bare-insert`, { method: "POST" });
            await res.body?.cancel();
            return res.status === 201;
          })
        )),
      );
      runs.paid.push(
        await profiled(
          r > 0 && PROFILE ? `${PROFILE}/x402-batched-paid-round-${r}.cpuprofile` : undefined,
          () =>
            drive(headers.map((list) =>
              list.map((header) => async () => {
                const res = await fetch(resource, { headers: { "payment-signature": header } });
                await res.body?.cancel();
                return res.status === 200;
              })
            )),
        ),
      );
      runs.direct.push(
        await drive(headers.map((list) =>
          list.map(() => async () => {
            const res = await fetch(upstreamUrl);
            await res.body?.cancel();
            return res.ok;
          })
        )),
      );
    }
    console.log(
      `${WORKERS} concurrent buyers × ${CALLS} calls, ${ROUNDS} alternating rounds after one ` +
        `unmeasured warm-up round of each; ` +
        `load average ${Deno.loadavg().map((l) => l.toFixed(1)).join(" ")}`,
    );
    for (let r = 0; r < ROUNDS; r++) {
      console.log(line(`round ${r + 1}: bare Hono route, one INSERT`, runs.bare[r]));
      console.log(
        line(`round ${r + 1}: paid call, /x402/{slug} batched`, runs.paid[r], runs.bare[r]),
      );
      console.log(line(`round ${r + 1}: upstream called directly`, runs.direct[r]));
      const added = percentile(runs.paid[r].latencies, 50) -
        percentile(runs.direct[r].latencies, 50);
      console.log(`  p50 added over the upstream called directly: ${added.toFixed(1)} ms`);
    }
    const mean = (xs: Run[]) => xs.reduce((s, x) => s + rate(x), 0) / xs.length;
    console.log(
      `mean: paid ${mean(runs.paid).toFixed(0)}/s = ${
        (mean(runs.paid) / mean(runs.bare)).toFixed(2)
      }× of the bare INSERT (${mean(runs.bare).toFixed(0)}/s); ${
        (mean(runs.paid) / 117).toFixed(1)
      }× the 117 paid calls/s measured before (issue 27)`,
    );
    // The same calls' CPU on every core: the service's process (with the load generator),
    // PostgreSQL, anvil and the rest. While one event loop is the bottleneck the ratio follows
    // this process's column; were every core busy, it would follow the machine's.
    const bareCpu = machineMean(runs.bare);
    const paidCpu = machineMean(runs.paid);
    if (bareCpu && paidCpu) {
      const cores = navigator.hardwareConcurrency;
      const cap = (m: MachineCpu) => cores * 1e6 / m.busy;
      console.log(
        `CPU per call on the whole machine (mean of the rounds), bare INSERT: ${cpuSplit(bareCpu)}`,
      );
      console.log(`  paid call, /x402/{slug} batched: ${cpuSplit(paidCpu)}`);
      console.log(
        `  at those costs with all ${cores} cores busy: bare ≤ ${cap(bareCpu).toFixed(0)}/s, ` +
          `paid ≤ ${cap(paidCpu).toFixed(0)}/s = ${(cap(paidCpu) / cap(bareCpu)).toFixed(2)}×`,
      );
    }

    // Settlement: what the rounds (kicked every X402_BATCH_MAX charges) left, then the totals.
    const t0 = performance.now();
    for (let i = 0; i < 100; i++) {
      await settleRound(svc.deps);
      const [open] = await svc.db.sql`
        select count(*)::int as n from x402_gateway_charges where status = 'pending'`;
      if (open.n === 0) break;
    }
    const [s] = await svc.db.sql`
      select count(*)::int as batches, sum(size)::int as payments, max(size)::int as largest,
             sum(gas_used)::bigint as gas,
             (select count(*)::int from x402_gateway_charges where status = 'settled') as settled
      from x402_gateway_batches where status = 'confirmed'`;
    const full = await svc.db.sql`
      select size, gas_used from x402_gateway_batches where status = 'confirmed'
      order by size desc limit 1`;
    console.log(
      `settlement: ${s.settled} payments in ${s.batches} transactions (largest ${s.largest}), ` +
        `${(Number(s.gas) / s.payments).toFixed(0)} gas per payment overall, ${
          (Number(full[0].gasUsed) / full[0].size).toFixed(0)
        } in the largest batch; the backlog drained in ${
          (performance.now() - t0).toFixed(0)
        } ms after the last call`,
    );
    // One buyer at a time, once the backlog is settled: the path's own latency, without
    // queueing behind 31 other calls or a settlement round.
    const solo: string[] = [];
    for (let i = 0; i < 200; i++) {
      solo.push(await batchedPayment(svc, buyers[0], resource, { to: seller, value: 1_000n }));
    }
    const soloPaid = await drive([
      solo.map((header) => async () => {
        const res = await fetch(resource, { headers: { "payment-signature": header } });
        await res.body?.cancel();
        return res.status === 200;
      }),
    ]);
    const soloDirect = await drive([
      solo.map(() => async () => {
        const res = await fetch(upstreamUrl);
        await res.body?.cancel();
        return res.ok;
      }),
    ]);
    console.log(line("one buyer at a time: paid call", soloPaid));
    console.log(line("one buyer at a time: upstream directly", soloDirect));
    console.log(
      `  p50 added over the upstream called directly, one call in flight: ${
        (percentile(soloPaid.latencies, 50) - percentile(soloDirect.latencies, 50)).toFixed(1)
      } ms`,
    );
    return mean(runs.paid);
  } finally {
    await svc.close();
    await upstream.close();
  }
}

if (import.meta.main) await run();
