/**
 * Roles for real: two web processes and two worker processes (`src/main.ts web|worker`) over one
 * database and the same chains. Payments created through both webs settle once, with one
 * payment.settled each; each webhook's failed first attempt is retried by one worker, once.
 * /metrics parses as Prometheus text, moves when payments settle, and honours METRICS_TOKEN.
 */
import assert from "node:assert/strict";
import { startTestService } from "../helpers/service.ts";
import { createMerchant } from "../helpers/accounts.ts";
import { startReceiver } from "../helpers/receiver.ts";
import { payer } from "../helpers/payer.ts";
import { waitFor } from "../helpers/poll.ts";
import { ANVIL_KEYS } from "../helpers/anvil.ts";
import { deploymentEnv, type ServiceProcess, startProcess } from "../helpers/processes.ts";
import { parsePrometheus, sample } from "../helpers/prometheus.ts";

const TOKEN = "metrics-token-0123456789";

Deno.test("two webs and two workers over one database: one settlement, one webhook each", async () => {
  // The primary records the contracts and serves the checkout the payer uses; it runs no
  // workers, so every settlement and delivery below is done by the worker processes.
  const primary = await startTestService({ workers: false, env: { RATE_LIMITS: "off" } });
  const receiver = startReceiver();
  const procs: ServiceProcess[] = [];
  try {
    const env = { ...deploymentEnv(primary), RATE_LIMITS: "off", WEBHOOK_RETRY_SECONDS: "1,1,1" };
    procs.push(
      ...await Promise.all([
        startProcess("web", env),
        startProcess("web", { ...env, METRICS_TOKEN: TOKEN }),
        startProcess("worker", env),
        startProcess("worker", env),
      ]),
    );
    const [webA, webB, worker1] = procs;
    const m = await createMerchant(primary, { businessName: "Scale Shop" });
    const alice = payer(primary, ANVIL_KEYS[3]);
    await alice.fund(1_000_000_000n);

    // Every delivery's first attempt fails; the retry (1 s later) succeeds.
    const seen = new Map<string, number>();
    receiver.respond = (r) => {
      const id = r.headers["webhook-id"];
      seen.set(id, (seen.get(id) ?? 0) + 1);
      return seen.get(id) === 1 ? 500 : 200;
    };

    const metricsBefore = parsePrometheus(await (await fetch(`${webA.baseUrl}/metrics`)).text());

    const refs: string[] = [];
    for (let i = 0; i < 3; i++) {
      for (const [web, how] of [[webA, "key"], [webB, "cookie"]] as const) {
        const res = await fetch(
          `${web.baseUrl}${
            how === "key" ? "/api/payments/initialize" : "/api/merchant/payment-link"
          }`,
          {
            method: "POST",
            headers: {
              "content-type": "application/json",
              ...(how === "key" ? { "x-api-key": m.apiKey } : { cookie: m.cookie }),
            },
            body: JSON.stringify({ amount: `${i + 1}.25`, webhookUrl: `${receiver.url}/hook` }),
          },
        );
        const body = await res.json();
        assert.equal(res.status, 201, JSON.stringify(body));
        refs.push(body.reference);
      }
    }
    // One after another, each mined before the next (as a wallet's user does): the next
    // checkout's permit is signed with the token nonce the previous payment used up.
    const sent = new Map<string, string>();
    for (const ref of refs) sent.set(ref, (await alice.pay(ref)).hash);

    // Generous bounds: a settlement job that fails once under load is retried 10 s later
    // (payments.queues.ts). On a timeout the workers' own output says why.
    const orExplain = async (p: Promise<unknown>) => {
      try {
        await p;
      } catch (e) {
        const rows = await primary.db.sql`
          select reference, status from payments where reference = any(${refs})`;
        throw new Error(
          `${e}\npayments: ${JSON.stringify(rows)}\ntransactions: ${
            JSON.stringify(
              await Promise.all(
                [...sent].map(async (
                  [ref, hash],
                ) => [ref, hash, (await alice.receipt(hash as `0x${string}`)).status]),
              ),
            )
          }\n` +
            procs.map((x) => `--- ${x.role} ---\n${x.output()}`).join("\n"),
        );
      }
    };
    await orExplain(waitFor(async () => {
      const [{ n }] = await primary.db.sql`
        select count(*)::int as n from payments where reference = any(${refs}) and status = 'SUCCESS'`;
      return n === refs.length;
    }, { timeoutMs: 90_000, what: "six settlements by the workers" }));
    await orExplain(waitFor(async () => {
      const [{ n }] = await primary.db.sql`
        select count(*)::int as n from webhook_deliveries
        where reference = any(${refs}) and status = 'delivered'`;
      return n === refs.length;
    }, { timeoutMs: 90_000, what: "six webhooks delivered after one retry each" }));

    const deliveries = await primary.db.sql<
      { reference: string; event: string; attempts: number }[]
    >`
      select reference, event, attempts from webhook_deliveries where reference = any(${refs})`;
    assert.equal(deliveries.length, refs.length, JSON.stringify(deliveries));
    for (const ref of refs) {
      const d = deliveries.filter((x) => x.reference === ref);
      assert.deepEqual(d.map((x) => [x.event, x.attempts]), [["payment.settled", 2]], ref);
    }
    const attempts = await primary.db.sql<{ deliveryId: string; n: number }[]>`
      select delivery_id, count(*)::int as n from webhook_attempts a
      join webhook_deliveries d on d.id = a.delivery_id
      where d.reference = any(${refs}) group by delivery_id`;
    assert.ok(attempts.every((a) => a.n === 2), JSON.stringify(attempts));
    // The receiver saw each webhook-id exactly twice: the refused attempt and the one retry.
    assert.equal(seen.size, refs.length);
    assert.ok([...seen.values()].every((n) => n === 2), JSON.stringify([...seen]));
    const receipts = await primary.db.sql`
      select tx_hash, count(*)::int as n from chain_log_receipts group by tx_hash, log_index, handler
      having count(*) > 1`;
    assert.equal(receipts.length, 0);

    // /metrics: Prometheus text that moved with the settlements.
    const res = await fetch(`${webA.baseUrl}/metrics`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type") ?? "", /^text\/plain; version=0\.0\.4/);
    const after = parsePrometheus(await res.text());
    const delivered = (p: typeof after) =>
      sample(p, "settlement_webhook_attempts_total", { outcome: "delivered" }) ?? 0;
    assert.equal(delivered(after) - delivered(metricsBefore), refs.length);
    assert.equal(
      (sample(after, "settlement_webhook_attempts_total", { outcome: "failed" }) ?? 0) -
        (sample(metricsBefore, "settlement_webhook_attempts_total", { outcome: "failed" }) ?? 0),
      refs.length,
    );
    assert.equal(
      sample(after, "settlement_http_requests_total", {
        method: "POST",
        route: "/api/payments/initialize",
        status: "201",
      }),
      3,
    );
    const head = sample(after, "settlement_chain_head_block", { chain: "production" })!;
    assert.ok(
      head > (sample(metricsBefore, "settlement_chain_head_block", { chain: "production" }) ?? 0),
    );
    assert.ok(sample(after, "settlement_chain_watcher_lag_blocks", { chain: "production" })! >= 0);
    assert.ok(sample(after, "settlement_operator_balance_wei", { chain: "production" })! > 0);
    assert.equal(
      sample(after, "settlement_chain_transactions_in_flight", { chain: "production" }),
      0,
    );
    assert.ok(after.some((s) => s.name === "settlement_process_cpu_seconds_total"));
    // A worker answers /metrics too (health-only listener), with the same database figures.
    const fromWorker = parsePrometheus(await (await fetch(`${worker1.baseUrl}/metrics`)).text());
    assert.equal(delivered(fromWorker), delivered(after));
    const api = await fetch(`${worker1.baseUrl}/api/payments/initialize`, { method: "POST" });
    await api.body?.cancel();
    assert.equal(api.status, 404, "a worker serves no API");

    // METRICS_TOKEN: refused without the bearer, answered with it.
    const refused = await fetch(`${webB.baseUrl}/metrics`);
    await refused.body?.cancel();
    assert.equal(refused.status, 401);
    const wrong = await fetch(`${webB.baseUrl}/metrics`, {
      headers: { authorization: `Bearer ${TOKEN}x` },
    });
    await wrong.body?.cancel();
    assert.equal(wrong.status, 401);
    const ok = await fetch(`${webB.baseUrl}/metrics`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    assert.equal(ok.status, 200);
    assert.ok(parsePrometheus(await ok.text()).length > 0);
    // /readyz: its status to anyone (a probe), the checks' details (operator, balances,
    // contracts) only with the same bearer.
    const probe = await fetch(`${webB.baseUrl}/readyz`);
    assert.equal(probe.status, 200);
    const bare = await probe.json();
    assert.equal(bare.status, "ready");
    assert.deepEqual(bare.checks.chains, { ok: true });
    assert.doesNotMatch(JSON.stringify(bare), /0x[0-9a-fA-F]{40}|balance/i);
    const full = await (await fetch(`${webB.baseUrl}/readyz`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    })).json();
    assert.match(JSON.stringify(full.checks.chains.detail), /0x[0-9a-f]{40}/);
  } catch (e) {
    for (const p of procs) console.error(`--- ${p.role} ${p.baseUrl} ---\n${p.output()}`);
    throw e;
  } finally {
    await Promise.all(procs.map((p) => p.stop()));
    await receiver.close();
    await primary.close();
  }
});
