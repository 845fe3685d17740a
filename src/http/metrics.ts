/**
 * `/metrics` in Prometheus text (prom-client), one registry per app.
 *
 * Per process (each replica is scraped on its own): requests and latency by route pattern and
 * status, and prom-client's process metrics (CPU, memory, event-loop lag).
 * Read from the database and the nodes at scrape time, so every process reports the same values
 * whether or not it runs workers: queue depth and oldest-job age by queue, webhook attempts by
 * outcome, transactions in flight and the oldest one's age by chain, chain head and watcher lag
 * by chain, operator balances. Aggregate those with max(), not sum().
 *
 * In production the route requires `Authorization: Bearer $METRICS_TOKEN` (and is refused when
 * no token is configured); elsewhere it is open unless a token is set.
 */
import type { Context, MiddlewareHandler } from "hono";
import { Hono } from "hono";
import { timingSafeEqual } from "node:crypto";
import client from "prom-client";
import type { Deps } from "../deps.ts";
import { queueStats } from "../queue/stats.ts";
import { attemptOutcomes } from "../modules/webhooks/webhooks.service.ts";
import { settlementStats } from "../modules/x402/x402.service.ts";

export interface Metrics {
  registry: client.Registry;
  /** Counts every request by method, matched route pattern and status. */
  middleware: MiddlewareHandler;
  routes: Hono;
}

const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export function createMetrics(deps: Pick<Deps, "sql" | "chain" | "config" | "log">): Metrics {
  const registry = new client.Registry();
  client.collectDefaultMetrics({ register: registry, prefix: "settlement_" });
  const labelNames = ["method", "route", "status"] as const;
  const requests = new client.Counter({
    name: "settlement_http_requests_total",
    help: "HTTP requests answered, by method, route pattern and status.",
    labelNames,
    registers: [registry],
  });
  const latency = new client.Histogram({
    name: "settlement_http_request_duration_seconds",
    help: "Time from request to response headers, by method, route pattern and status.",
    labelNames,
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });

  const jobs = new client.Gauge({
    name: "settlement_queue_jobs",
    help: "Jobs due or running, by queue and state (created, retry, active).",
    labelNames: ["queue", "state"],
    registers: [registry],
  });
  const jobAge = new client.Gauge({
    name: "settlement_queue_oldest_job_age_seconds",
    help: "Age of the oldest job due or running, by queue and state.",
    labelNames: ["queue", "state"],
    registers: [registry],
  });
  const webhooks = new client.Counter({
    name: "settlement_webhook_attempts_total",
    help: "Webhook delivery attempts recorded, by outcome (delivered, failed, refused).",
    labelNames: ["outcome"],
    registers: [registry],
  });
  const chainLabels = ["chain", "chain_id"] as const;
  const inFlight = new client.Gauge({
    name: "settlement_chain_transactions_in_flight",
    help: "Transactions signed or broadcast and not yet mined, by chain.",
    labelNames: chainLabels,
    registers: [registry],
  });
  const inFlightAge = new client.Gauge({
    name: "settlement_chain_oldest_in_flight_age_seconds",
    help: "Age of the oldest transaction in flight, by chain (0 when none).",
    labelNames: chainLabels,
    registers: [registry],
  });
  const head = new client.Gauge({
    name: "settlement_chain_head_block",
    help: "The node's latest block number, by chain (absent when the node did not answer).",
    labelNames: chainLabels,
    registers: [registry],
  });
  const lag = new client.Gauge({
    name: "settlement_chain_watcher_lag_blocks",
    help: "Blocks between the node's head and the log watcher's cursor, by chain.",
    labelNames: chainLabels,
    registers: [registry],
  });
  const balance = new client.Gauge({
    name: "settlement_operator_balance_wei",
    help: "The operator's native balance in wei, by chain.",
    labelNames: chainLabels,
    registers: [registry],
  });

  const x402Pending = new client.Gauge({
    name: "settlement_x402_pending_charges",
    help: "x402 paid calls served and not yet settled on chain, by kind (gateway, channel).",
    labelNames: ["kind"],
    registers: [registry],
  });
  const x402Oldest = new client.Gauge({
    name: "settlement_x402_oldest_pending_charge_seconds",
    help: "Age of the oldest x402 gateway-balance charge waiting for its settlement (0: none).",
    registers: [registry],
  });
  const x402BatchSize = new client.Gauge({
    name: "settlement_x402_batch_size",
    help: "Payments carried by the latest confirmed x402 settlement batch.",
    registers: [registry],
  });
  const x402Lag = new client.Gauge({
    name: "settlement_x402_settlement_lag_seconds",
    help: "Longest wait, served to settled, of a charge in the latest confirmed batch.",
    registers: [registry],
  });

  async function refresh() {
    const [queues, outcomes, chains, x402] = await Promise.all([
      queueStats(deps.sql),
      attemptOutcomes(deps),
      deps.chain.observe(),
      settlementStats(deps),
    ]);
    x402Pending.set({ kind: "gateway" }, x402.gatewayPending);
    x402Pending.set({ kind: "channel" }, x402.channelPending);
    x402Oldest.set(x402.oldestSeconds ?? 0);
    x402BatchSize.set(x402.lastBatchSize ?? 0);
    x402Lag.set(x402.lastLagSeconds ?? 0);
    jobs.reset();
    jobAge.reset();
    for (const q of queues) {
      jobs.set({ queue: q.name, state: q.state }, q.n);
      jobAge.set({ queue: q.name, state: q.state }, q.oldestSeconds);
    }
    webhooks.reset();
    for (const o of outcomes) webhooks.inc({ outcome: o.outcome }, o.n);
    for (const g of [inFlight, inFlightAge, head, lag, balance]) g.reset();
    for (const c of chains) {
      const l = { chain: c.profile, chain_id: String(c.chainId) };
      inFlight.set(l, c.inFlight);
      inFlightAge.set(l, c.oldestInFlightSeconds);
      if (c.head !== null) {
        head.set(l, Number(c.head));
        lag.set(l, c.cursor === null ? Number(c.head) : Math.max(0, Number(c.head - c.cursor)));
      }
      if (c.operatorBalanceWei !== null) balance.set(l, Number(c.operatorBalanceWei));
    }
  }

  const middleware: MiddlewareHandler = async (c, next) => {
    const t0 = performance.now();
    try {
      await next();
    } finally {
      const labels = {
        method: c.req.method,
        route: routeOf(c),
        status: String(c.res.status),
      };
      requests.inc(labels);
      latency.observe(labels, (performance.now() - t0) / 1000);
    }
  };

  const routes = new Hono();
  routes.get("/metrics", async (c) => {
    if (!authorized(c, deps.config)) {
      c.header("WWW-Authenticate", 'Bearer realm="metrics"');
      return c.text("Unauthorized\n", 401);
    }
    try {
      await refresh();
    } catch (e) {
      // The per-process metrics are still worth answering; the gap shows as stale gauges.
      deps.log.warn("metrics: database or chain figures unavailable", { error: e });
    }
    return c.body(await registry.metrics(), 200, { "content-type": registry.contentType });
  });
  return { registry, middleware, routes };
}

/** The matched route pattern (bounded cardinality); unmatched paths share one label. */
function routeOf(c: Context): string {
  if (c.res.status === 404 && !c.req.routePath.includes(":")) {
    const matched = c.req.matchedRoutes.filter((r) => r.method !== "ALL");
    if (matched.length === 0) return "unmatched";
  }
  const last = c.req.matchedRoutes.filter((r) => r.method !== "ALL").at(-1);
  return last?.path ?? "unmatched";
}

/**
 * Whether the request may read the deployment's internals (`/metrics`, `/readyz`'s details): in
 * production only with `Authorization: Bearer $METRICS_TOKEN`; elsewhere without a token set.
 */
export function authorized(c: Context, config: Deps["config"]): boolean {
  const token = config.METRICS_TOKEN;
  if (!token) return !config.isProduction;
  const given = /^Bearer\s+(\S+)\s*$/i.exec(c.req.header("authorization") ?? "")?.[1] ?? "";
  const a = new TextEncoder().encode(given);
  const b = new TextEncoder().encode(token);
  return a.length === b.length && timingSafeEqual(a, b);
}
