/**
 * Payments: payment-link creation and checkout-session initialize at 50 concurrent connections
 * (autocannon in another process), beside a bare Hono route doing the same single INSERT in the
 * same service; and settlement latency from the payer's router transaction to SUCCESS.
 */
import { Hono } from "hono";
import { startTestService } from "../tests/helpers/service.ts";
import { api, createMerchant } from "../tests/helpers/accounts.ts";
import { payer } from "../tests/helpers/payer.ts";
import { ANVIL_KEYS } from "../tests/helpers/anvil.ts";
import { type AppModule, modules } from "../src/modules/index.ts";
import { newReference } from "../src/modules/payments/payments.rules.ts";
import { percentile } from "./report.ts";

const DURATION = Number(Deno.env.get("BENCH_SECONDS") ?? "10");
const CONNECTIONS = 50;
const SETTLEMENTS = Number(Deno.env.get("BENCH_SETTLEMENTS") ?? "20");

interface Load {
  rps: number;
  p50: number;
  p99: number;
  requests: number;
  non2xx: number;
  errors: number;
}

async function load(url: string, headers: Record<string, string>, body: string): Promise<Load> {
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
        connections: CONNECTIONS,
        duration: DURATION,
      }),
    ],
    stdout: "piped",
    stderr: "inherit",
  }).output();
  return JSON.parse(new TextDecoder().decode(out.stdout).trim().split("\n").at(-1)!);
}

function mean(ls: Load[]): Load {
  const avg = (f: (l: Load) => number) => ls.reduce((a, l) => a + f(l), 0) / ls.length;
  return {
    rps: avg((l) => l.rps),
    p50: Math.round(avg((l) => l.p50)),
    p99: Math.round(avg((l) => l.p99)),
    requests: Math.round(avg((l) => l.requests) * ls.length),
    non2xx: avg((l) => l.non2xx) * ls.length,
    errors: avg((l) => l.errors) * ls.length,
  };
}

/** The machine's load average, said beside the numbers it disturbs. */
export function loadavg(): string {
  try {
    return `load average ${
      Deno.readTextFileSync("/proc/loadavg").split(" ").slice(0, 3).join(" ")
    }`;
  } catch {
    return "load average unknown";
  }
}

function line(name: string, l: Load, baseline?: Load) {
  const ratio = baseline ? `  ${(l.rps / baseline.rps).toFixed(2)}× of the bare INSERT` : "";
  return `${name.padEnd(48)} ${
    l.rps.toFixed(0).padStart(7)
  } req/s  p50 ${l.p50} ms  p99 ${l.p99} ms  ` +
    `(${l.requests} requests, ${l.non2xx} non-2xx, ${l.errors} errors)${ratio}`;
}

export async function run() {
  // The baseline: the same row written by a route with no auth, validation, idempotency or queue.
  let merchantId = "";
  let payTo = "";
  const bare: AppModule = {
    name: "bench-bare",
    api: (deps) =>
      new Hono().post("/bench/bare-insert", async (c) => {
        const now = new Date();
        await deps.sql`
          insert into payments (reference, merchant_id, kind, amount, currency, chain_id, pay_to, status,
                                expires_at, created_at, updated_at)
          values (${newReference()}, ${merchantId}, 'link', 1000000, 'USDC', 5042, ${payTo}, 'PENDING',
                  ${new Date(now.getTime() + 86_400_000)}, ${now}, ${now})`;
        return c.json({ success: true }, 201);
      }),
  };
  const svc = await startTestService({
    env: { RATE_LIMITS: "off", LOG_LEVEL: "error", DATABASE_POOL_MAX: "20" },
    modules: [...modules, bare],
  });
  try {
    const m = await createMerchant(svc);
    merchantId = m.id;
    payTo = m.walletAddress!.toLowerCase();
    const key = ((await api(svc)("POST", "/api/keys", {
      cookie: m.cookie,
      body: { type: "secret", environment: "live" },
    }))
      .json.key as { key: string }).key;
    const body = JSON.stringify({ amount: "12.50", description: "bench" });

    // Rounds alternate baseline and endpoints, so a neighbour's load on this shared machine
    // falls on both sides of each ratio; each ratio is against the mean of the baselines.
    const ROUNDS = Number(Deno.env.get("BENCH_ROUNDS") ?? "2");
    const runs: Record<"bare" | "links" | "sessions", Load[]> = {
      bare: [],
      links: [],
      sessions: [],
    };
    console.log(
      `${CONNECTIONS} connections, ${DURATION} s each, ${ROUNDS} alternating rounds; ${loadavg()}`,
    );
    for (let r = 0; r < ROUNDS; r++) {
      runs.bare.push(await load(`${svc.baseUrl}/bench/bare-insert`, {}, body));
      runs.links.push(
        await load(`${svc.baseUrl}/api/merchant/payment-link`, { cookie: m.cookie }, body),
      );
      runs.sessions.push(
        await load(`${svc.baseUrl}/api/payments/initialize`, { "x-api-key": key }, body),
      );
    }
    const baseline = mean(runs.bare);
    for (const [r, b] of runs.bare.entries()) {
      console.log(line(`round ${r + 1}: bare Hono route, one INSERT`, b));
    }
    for (const [r, l] of runs.links.entries()) {
      console.log(line(`round ${r + 1}: POST /api/merchant/payment-link`, l, runs.bare[r]));
    }
    for (const [r, l] of runs.sessions.entries()) {
      console.log(line(`round ${r + 1}: POST /api/payments/initialize`, l, runs.bare[r]));
    }
    console.log(line("mean: bare Hono route, one INSERT", baseline));
    console.log(line("mean: POST /api/merchant/payment-link", mean(runs.links), baseline));
    console.log(line("mean: POST /api/payments/initialize", mean(runs.sessions), baseline));
    console.log(`after: ${loadavg()}`);

    // Settlement latency: router transaction sent → payment SUCCESS in the database.
    const alice = payer(svc, ANVIL_KEYS[1]);
    await alice.fund(1_000_000_000n);
    const latencies: number[] = [];
    for (let i = 0; i < SETTLEMENTS; i++) {
      const r = await api(svc)("POST", "/api/merchant/payment-link", {
        cookie: m.cookie,
        body: { amount: "1" },
      });
      const ref = r.json.reference as string;
      const t0 = performance.now();
      await alice.pay(ref);
      while (
        (await svc.db.sql`select status from payments where reference = ${ref}`)[0].status !==
          "SUCCESS"
      ) {
        await new Promise((res) => setTimeout(res, 2));
      }
      latencies.push(performance.now() - t0);
    }
    console.log(
      `settlement latency (router tx → SUCCESS), ${SETTLEMENTS} payments, watcher poll ` +
        `${svc.deps.config.chain.pollIntervalMs} ms, 0 confirmations: p50 ${
          percentile(latencies, 50).toFixed(0)
        } ms, ` +
        `p99 ${percentile(latencies, 99).toFixed(0)} ms`,
    );
  } finally {
    await svc.close();
  }
}
