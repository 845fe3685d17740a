/**
 * x402: paid calls per second through POST /api/x402/pay to a local upstream (verify, claim,
 * upstream, settlement mined on anvil) beside the same upstream called directly at the same
 * concurrency; and verify-only throughput (POST /api/x402/verify, autocannon in another process).
 * Proofs are signed before the clock starts (one buyer per worker, as real buyers are many).
 */
import { generatePrivateKey } from "viem/accounts";
import { startTestService } from "../tests/helpers/service.ts";
import { api, createMerchant } from "../tests/helpers/accounts.ts";
import { externalBuyer, gatewayProof } from "../tests/helpers/x402.ts";
import { percentile } from "./report.ts";
import { loadavg } from "./payments.bench.ts";
import { createApp } from "../src/app.ts";
import { x402Module } from "../src/modules/x402/x402.module.ts";
import { DEPLOYED_POLLING } from "./deployed.ts";

const WORKERS = Number(Deno.env.get("BENCH_X402_WORKERS") ?? "8");
const CALLS = Number(Deno.env.get("BENCH_X402_CALLS") ?? "25");
const DURATION = Number(Deno.env.get("BENCH_SECONDS") ?? "10");
/** Issue 27's measure of this path: 32 buyers, in steady state (see `steady` below). */
const PAY_BUYERS = Number(Deno.env.get("BENCH_X402_PAY_BUYERS") ?? "32");
const PAY_CALLS = Number(Deno.env.get("BENCH_X402_PAY_CALLS") ?? "60");
/** Issue 27's "today": paid calls/s through this path before batching, one transaction each. */
const BEFORE_ISSUE_27 = 117;

interface Run {
  ops: number;
  ms: number;
  latencies: number[];
  failures: number;
}

async function concurrently(jobs: (() => Promise<boolean>)[][]): Promise<Run> {
  const latencies: number[] = [];
  let failures = 0;
  const t0 = performance.now();
  await Promise.all(jobs.map(async (queue) => {
    for (const job of queue) {
      const s = performance.now();
      if (!(await job())) failures++;
      latencies.push(performance.now() - s);
    }
  }));
  return { ops: latencies.length, ms: performance.now() - t0, latencies, failures };
}

function line(name: string, r: Run, baseline?: Run) {
  const rate = r.ops / (r.ms / 1000);
  const ratio = baseline
    ? `  ${(rate / (baseline.ops / (baseline.ms / 1000))).toFixed(3)}× of direct`
    : "";
  return `${name.padEnd(44)} ${rate.toFixed(1).padStart(8)} /s  p50 ${
    percentile(r.latencies, 50).toFixed(1)
  } ms  p99 ${
    percentile(r.latencies, 99).toFixed(1)
  } ms  (${r.ops} calls, ${r.failures} failed)${ratio}`;
}

async function autocannon(url: string, headers: Record<string, string>, body: string) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-all",
      new URL("./load.ts", import.meta.url).pathname,
      JSON.stringify({
        url,
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body,
        connections: 20,
        duration: DURATION,
      }),
    ],
    stdout: "piped",
    stderr: "inherit",
  }).output();
  return JSON.parse(new TextDecoder().decode(out.stdout).trim().split("\n").at(-1)!) as {
    rps: number;
    p50: number;
    p99: number;
    requests: number;
    non2xx: number;
  };
}

export async function run() {
  // Paid calls on the gateway balance, settled in batches (bench/x402-batched.bench.ts).
  // BENCH_X402_SECTIONS: a comma-separated subset of batched,pay,channels (default all).
  const sections = (Deno.env.get("BENCH_X402_SECTIONS") ?? "batched,pay,channels").split(",");
  const batched = sections.includes("batched")
    ? await (await import("./x402-batched.bench.ts")).run()
    : undefined;
  const single = sections.includes("pay") ? await payAndVerify() : undefined;
  if (batched !== undefined && single !== undefined) {
    // Issue 27's "today's paid calls/s" (117/s) was this path: one settlement transaction per
    // paid call, waited for before answering, at the pay section's default concurrency.
    console.log(
      `batched /x402/{slug} ${batched.toFixed(0)}/s = ${(batched / single).toFixed(1)}× ` +
        `the paid calls/s of one settlement transaction per call in this run ` +
        `(${single.toFixed(1)}/s, POST /api/x402/pay, ${WORKERS} buyers)`,
    );
  }
  if (sections.includes("channels")) await (await import("./x402-channels.bench.ts")).run();
}

/** The pay and verify lines; returns the paid calls/s of one settlement transaction per call. */
async function payAndVerify(): Promise<number> {
  const upstream = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    () => Response.json({ temperature: 21.5 }),
  );
  const svc = await startTestService({
    env: { RATE_LIMITS: "off", LOG_LEVEL: "error", DATABASE_POOL_MAX: "20", ...DEPLOYED_POLLING },
  });
  try {
    const call = api(svc);
    const m = await createMerchant(svc);
    const upstreamUrl = `http://127.0.0.1:${upstream.addr.port}/weather`;
    const listed = await call("POST", "/api/x402/listings", {
      headers: { authorization: `Bearer ${m.apiKey}` },
      body: { slug: "bench", upstreamUrl, price: "0.001", methods: ["GET"] },
    });
    if (listed.status !== 201) throw new Error(listed.text);
    const buyers = await Promise.all(
      Array.from({ length: Math.max(WORKERS, PAY_BUYERS) }, async () => {
        const b = await externalBuyer(svc, generatePrivateKey(), 10_000_000n);
        await b.deposit(5_000_000n);
        return b;
      }),
    );
    const signProofs = (n = WORKERS, calls = CALLS) =>
      Promise.all(
        buyers.slice(0, n).map(async (b) => {
          const out: string[] = [];
          for (let i = 0; i < calls; i++) {
            out.push(
              (await gatewayProof(svc, b.account, { to: m.walletAddress!, value: 1_000n })).proof,
            );
          }
          return out;
        }),
      );
    const payAll = (base: string, list: string[][]) =>
      concurrently(
        list.map((queue) =>
          queue.map((proof) => async () => {
            const r = await fetch(`${base}/api/x402/pay`, {
              method: "POST",
              headers: { "content-type": "application/json" },
              body: JSON.stringify({
                slug: "bench",
                method: "GET",
                params: { city: "Lisbon" },
                paymentProof: proof,
              }),
            });
            await r.body?.cancel();
            return r.status === 200;
          })
        ),
      );
    const proofs = await signProofs();
    const loadBefore = loadavg();
    const direct = await concurrently(
      proofs.map((list) =>
        list.map(() => async () => {
          const r = await fetch(`${upstreamUrl}?city=Lisbon`);
          await r.body?.cancel();
          return r.ok;
        })
      ),
    );
    const batched = await payAll(svc.baseUrl, proofs);
    // The same service's x402 API with one settlement transaction per proof, on another port.
    const unbatched = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen: () => {} },
      createApp(svc.deps, {
        modules: [x402Module({ batchSettlements: false })],
        readinessChecks: [],
      }).fetch,
    );
    const single = await payAll(`http://127.0.0.1:${unbatched.addr.port}`, await signProofs());
    await unbatched.shutdown();
    const rate = (r: Run) => r.ops / (r.ms / 1000);
    console.log(
      `${WORKERS} concurrent buyers, ${CALLS} calls each; settlement mined on anvil (automine); ` +
        `${loadBefore} before, ${loadavg()} after`,
    );
    console.log(line("upstream called directly", direct));
    console.log(line("POST /api/x402/pay, batched settlements", batched, direct));
    console.log(line("POST /api/x402/pay, one transaction per call", single, direct));
    console.log(
      `batching: ${(rate(batched) / rate(single)).toFixed(2)}× the paid calls per second`,
    );

    // Issue 27's measure: PAY_BUYERS buyers in steady state, after one unmeasured warm-up round
    // of two calls each (as the batched section warms up): what a running service sustains, not
    // its first seconds (a relayer's first gas top-up, the settler's first estimate of a batch,
    // compilation; all once per process, and those above already paid most of them).
    await payAll(svc.baseUrl, await signProofs(PAY_BUYERS, 2));
    const steady = await payAll(svc.baseUrl, await signProofs(PAY_BUYERS, PAY_CALLS));
    console.log(
      `${line(`POST /api/x402/pay, ${PAY_BUYERS} buyers, batched`, steady)}  ${
        (rate(steady) / BEFORE_ISSUE_27).toFixed(2)
      }× the ${BEFORE_ISSUE_27} paid calls/s measured before (issue 27); ${PAY_CALLS} calls each ` +
        `after a warm-up of 2; ${loadavg()} after`,
    );

    // Verify-only: one settleable proof verified over and over (verify reads, never writes).
    const fresh = await gatewayProof(svc, buyers[0].account, {
      to: m.walletAddress!,
      value: 1_000n,
    });
    const verify = await autocannon(
      `${svc.baseUrl}/api/x402/verify`,
      { authorization: `Bearer ${m.apiKey}` },
      JSON.stringify({ proof: fresh.proof }),
    );
    console.log(
      `${"POST /api/x402/verify (20 connections)".padEnd(44)} ${
        verify.rps.toFixed(0).padStart(8)
      } /s  ` +
        `p50 ${verify.p50} ms  p99 ${verify.p99} ms  (${verify.requests} requests, ${verify.non2xx} non-2xx)`,
    );
    return rate(single);
  } finally {
    await svc.close();
    await upstream.shutdown();
  }
}
