/**
 * Environments are part of identity (DESIGN §11), for EVERY mounted `/api/` route: the routes
 * come from the route documentation (`apiRoutes()`, which a test holds equal to what is mounted),
 * and each must be classified below, or this test fails. A route that addresses a chain record
 * (by path, query or body) is probed with a test key (`svc_sec_test_`) against the live
 * (production) record and with a live key against the test (testnet) record (a dashboard session
 * in the other mode for session-only routes): the answer is 404 exactly like another merchant's
 * record (403 where the route refuses the credential's kind), a list leaves the record out, and
 * nothing happens on either chain (no transaction recorded, no USDC moved). Routes that address
 * no environment's record say why in one line.
 */
import assert from "node:assert/strict";
import { startTestService } from "../helpers/service.ts";
import { buildWorld, type Credentials, type Env, OTHER, PROFILE } from "../helpers/environments.ts";
import type { Records, World } from "../helpers/environments.ts";
import { apiRoutes } from "../../src/modules/index.ts";
import { M } from "../../src/http/messages.ts";

/** How the probe presents the credential of the environment it comes from. */
type As = "key" | "bearer" | "session";

interface Probe {
  method: string;
  path: string;
  body?: unknown;
}

type Rule =
  /** Addresses no environment's record: the reason, in one line. */
  | { free: string }
  /** Makes a record in the credential's own environment (the records probed below are made so). */
  | { creates: string }
  /** Addresses a record: refused like another merchant's (`status`, and its text when given). */
  | {
    record: keyof Records;
    as: As;
    probe: (r: Records, w: World) => Probe;
    status: 404 | 403 | 400;
    error?: string;
    /** Further fields the refusal must carry. */
    fields?: Record<string, unknown>;
  }
  /** Lists records: the other environment's record is not in it, the own one is. */
  | { lists: keyof Records; as: As; probe: (r: Records, w: World) => Probe; merchant?: "e" }
  /** Shows wallets' balances: only the credential's chain's. */
  | { balances: true; as: As; probe: (r: Records, w: World) => Probe };

const get = (path: string): Probe => ({ method: "GET", path });
const post = (path: string, body: unknown): Probe => ({ method: "POST", path, body });
const TX = `0x${"ab".repeat(32)}`;

const X402 = "x402 lives on the testnet chain by design: every credential acts there";
const AGENTS = "agents live on the testnet chain by design (they pay through x402)";
const BRIDGE =
  "bridging moves a consumer's own USDC into the testnet chain (no merchant credential)";
const KEYS = "credentials themselves: a key's environment is its own prefix";
const ACCOUNT = "the merchant account, not a chain record";
const PAYOUT = "the payout wallet is an address, the same on every chain (no balance shown)";
const CONSUMER = "a consumer's own wallet session: consumers have no test/live credentials";
const DELIVERIES =
  "the merchant's webhook log and secret (merchant key or session only; secret keys are 403)";

const RULES: Record<string, Rule> = {
  "POST /api/merchant/signup": { free: ACCOUNT },
  "POST /api/merchant/verify": { free: ACCOUNT },
  "POST /api/merchant/login": { free: ACCOUNT },
  "GET /api/merchant/me": { lists: "payment", as: "session", probe: () => get("/api/merchant/me") },
  "DELETE /api/merchant/me": { free: "signs the session out" },
  "GET /api/merchant/dashboard": {
    lists: "payment",
    as: "key",
    probe: () => get("/api/merchant/dashboard"),
  },
  "GET /api/merchant/wallet": { free: PAYOUT },
  "PATCH /api/merchant/wallet": { free: PAYOUT },
  "GET /api/merchant/wallet/connect": { free: PAYOUT },
  "POST /api/merchant/wallet/connect": { free: PAYOUT },
  "POST /api/keys": { free: KEYS },
  "GET /api/keys": { free: KEYS },
  "DELETE /api/keys/:id": { free: KEYS },
  "POST /api/keys/:id/rotate": { free: KEYS },
  "POST /api/wallets": { free: "a wallet is an address on every chain; its balances are below" },
  "GET /api/wallets": { balances: true, as: "key", probe: () => get("/api/wallets") },
  "GET /api/wallets/:id": {
    balances: true,
    as: "key",
    probe: (_, w) => get(`/api/wallets/${w.wallets.payout}`),
  },
  "POST /api/merchant/withdraw": {
    // The wallet holds USDC in the other environment only: on the credential's chain it has none.
    record: "fundedWallet",
    as: "key",
    probe: (r) =>
      post("/api/merchant/withdraw", {
        walletId: r.fundedWallet,
        amount: "1",
        destinationAddress: "0x000000000000000000000000000000000000dEaD",
      }),
    status: 400,
    fields: { balance: "0.000000" },
  },
  "POST /api/consumer/session": { free: CONSUMER },
  "GET /api/consumer/session": { free: CONSUMER },
  "DELETE /api/consumer/session": { free: CONSUMER },
  "GET /api/consumer/balance": { free: CONSUMER },
  "GET /api/consumer/activity": { free: CONSUMER },
  "GET /api/merchant/webhook-secret": { free: DELIVERIES },
  "POST /api/merchant/webhook-secret/roll": { free: DELIVERIES },
  "GET /api/webhooks/deliveries": { free: DELIVERIES },
  "POST /api/webhooks/deliveries/:id/replay": { free: DELIVERIES },
  "POST /api/merchant/payment-link": { creates: "link" },
  "GET /api/merchant/payment-link": {
    lists: "link",
    as: "session",
    probe: () => get("/api/merchant/payment-link"),
  },
  "POST /api/payments/initialize": { creates: "payment" },
  "GET /api/payments/verify/:reference": {
    record: "payment",
    as: "bearer",
    probe: (r) => get(`/api/payments/verify/${r.payment}`),
    status: 404,
    error: M.paymentNotFound,
  },
  "GET /api/payments": { lists: "payment", as: "key", probe: () => get("/api/payments") },
  "POST /api/payments/stream": { creates: "stream" },
  "GET /api/payments/stream": {
    lists: "stream",
    as: "key",
    probe: (r) => get(`/api/payments/stream?reference=${r.stream}`),
  },
  "POST /api/payments/stream/stop": {
    record: "stream",
    as: "key",
    probe: (r, w) =>
      post("/api/payments/stream/stop", {
        reference: r.stream,
        callerSCA: w.wallets.payoutAddress,
      }),
    status: 404,
    error: M.streamNotFound,
  },
  "POST /api/payments/stream/withdraw": {
    record: "stream",
    as: "key",
    probe: (r, w) =>
      post("/api/payments/stream/withdraw", {
        reference: r.stream,
        receiverSCA: w.wallets.providerAddress,
      }),
    status: 404,
    error: M.streamNotFound,
  },
  "POST /api/escrow/create": { creates: "escrow" },
  ...Object.fromEntries(["release", "confirm", "dispute"].map((action) => [
    `POST /api/escrow/${action}`,
    {
      record: "escrow",
      as: "key",
      probe: (r: Records, w: World) =>
        post(`/api/escrow/${action}`, {
          reference: r.escrow,
          callerSCA: w.wallets.payoutAddress,
          ...(action === "dispute" ? { reason: "probe" } : {}),
        }),
      status: 404,
      error: M.escrowNotFound,
    } satisfies Rule,
  ])),
  "POST /api/escrow/refund": {
    record: "escrow",
    as: "key",
    probe: (r) => post("/api/escrow/refund", { reference: r.escrow }),
    status: 404,
    error: M.escrowNotFound,
  },
  "POST /api/escrow/resolve": {
    // Operator keys only: a merchant's key of either environment is the wrong kind.
    record: "escrow",
    as: "key",
    probe: (r) => post("/api/escrow/resolve", { reference: r.escrow, outcome: "released" }),
    status: 403,
  },
  "GET /api/escrow": {
    record: "escrow",
    as: "key",
    probe: (r) => get(`/api/escrow?reference=${r.escrow}`),
    status: 404,
    error: M.escrowNotFound,
  },
  "POST /api/cctp/transfer": { free: BRIDGE },
  "GET /api/cctp/transfer": { free: "the chains bridging supports (public)" },
  "GET /api/cctp/transfer/status": { free: BRIDGE },
  "GET /api/cctp/attestation/v2/messages/:sourceDomain": { free: "the local attester (public)" },
  "GET /api/cctp/attestation/v2/burn/USDC/fees/:sourceDomain/:destinationDomain": {
    free: "the local attester's fee schedule (public)",
  },
  "GET /api/x402/facilitator/supported": { free: X402 },
  "POST /api/x402/facilitator/verify": { free: X402 },
  "POST /api/x402/facilitator/settle": { free: X402 },
  "POST /api/x402/listings": { free: X402 },
  "GET /api/x402/listings": { free: X402 },
  "POST /api/x402/pay": { free: X402 },
  "POST /api/x402/verify": { free: X402 },
  "POST /api/x402/gateway/deposit": { free: X402 },
  "POST /api/x402/proofs": { free: X402 },
  "GET /api/x402/gateway/balance": { free: X402 },
  "POST /api/x402/gateway/withdraw": { free: X402 },
  "POST /api/x402/gateway/withdraw/start": { free: X402 },
  "GET /api/x402/payer/balance": { free: X402 },
  "POST /api/x402/payer/deposit": { free: X402 },
  "POST /api/x402/payer/withdraw/start": { free: X402 },
  "POST /api/x402/payer/withdraw": { free: X402 },
  "GET /api/x402/seller/balance": { free: X402 },
  "POST /api/x402/seller/balance/withdraw": { free: X402 },
  "POST /api/x402/seller/balance/withdraw/start": { free: X402 },
  "POST /api/payroll/run": { creates: "batch" },
  "GET /api/payroll/run": {
    record: "batch",
    as: "key",
    probe: (r) => get(`/api/payroll/run?batchRef=${r.batch}`),
    status: 404,
    error: M.payrollNotFound,
  },
  "GET /api/merchant/wallet/sign-requests": {
    lists: "signRequest",
    as: "key",
    merchant: "e",
    probe: () => get("/api/merchant/wallet/sign-requests"),
  },
  "POST /api/merchant/wallet/sign-requests/:id": {
    record: "signRequest",
    as: "key",
    probe: (r) => post(`/api/merchant/wallet/sign-requests/${r.signRequest}`, { txHash: TX }),
    status: 404,
    error: M.signRequestNotFound,
  },
  "POST /api/jobs/create": { creates: "job" },
  "GET /api/jobs/:jobId": {
    record: "job",
    as: "key",
    probe: (r) => get(`/api/jobs/${r.job}`),
    status: 404,
    error: M.jobNotFound,
  },
  ...Object.fromEntries(
    ([
      ["fund", (w: World) => ({ clientWalletId: w.wallets.payout })],
      ["submit", (w: World) => ({
        providerWalletId: w.wallets.provider,
        deliverableData: "https://example.com/deliverable",
      })],
      ["complete", (w: World) => ({ evaluatorWalletId: w.wallets.evaluator, reason: "x" })],
      ["reject", (w: World) => ({ evaluatorWalletId: w.wallets.evaluator, reason: "x" })],
      ["refund", (w: World) => ({ clientWalletId: w.wallets.payout })],
    ] as const).map(([action, extra]) => [
      `POST /api/jobs/${action}`,
      {
        record: "job",
        as: "key",
        probe: (r: Records, w: World) => post(`/api/jobs/${action}`, { jobId: r.job, ...extra(w) }),
        status: 404,
        error: M.jobNotFound,
      } satisfies Rule,
    ]),
  ),
  "POST /api/agent/deploy": { free: AGENTS },
  "GET /api/agent/status": { free: AGENTS },
  "GET /api/agent/reputation": { free: AGENTS },
  "GET /api/openapi.json": { free: "the API's documentation" },
  "GET /api/docs": { free: "the API's documentation" },
};

interface Answer {
  status: number;
  type: string;
  text: string;
  json: Record<string, unknown>;
}

Deno.test("environments: every /api/ route keeps test and live records apart", async (t) => {
  const svc = await startTestService({ env: { RATE_LIMITS: "off" } });
  const sql = svc.db.sql;
  try {
    const documented = apiRoutes();
    const routes = documented.map((r) => `${r.method.toUpperCase()} ${r.path}`);

    await t.step("every documented (= mounted) /api/ route is classified, and only those", () => {
      const missing = routes.filter((r) => !(r in RULES));
      const stale = Object.keys(RULES).filter((r) => !routes.includes(r));
      assert.deepEqual({ missing, stale }, { missing: [], stale: [] });
    });

    const w = await buildWorld(svc);
    const send = async (cred: Credentials, as: As, route: string, probe: Probe) => {
      const auth = documented.find((r) => `${r.method.toUpperCase()} ${r.path}` === route)!.auth;
      const headers: Record<string, string> = { origin: svc.baseUrl };
      if (as === "session") headers.cookie = cred.cookie;
      else if (as === "bearer" || !auth.includes("apiKey")) {
        headers.authorization = `Bearer ${cred.key}`;
      } else headers["x-api-key"] = cred.key;
      if (probe.body !== undefined) headers["content-type"] = "application/json";
      const res = await fetch(`${svc.baseUrl}${probe.path}`, {
        method: probe.method,
        headers,
        body: probe.body === undefined ? undefined : JSON.stringify(probe.body),
        redirect: "manual",
      });
      const text = await res.text();
      let json: Record<string, unknown> = {};
      try {
        json = JSON.parse(text);
      } catch { /* not JSON: the content-type assertion says so */ }
      return { status: res.status, type: res.headers.get("content-type") ?? "", text, json };
    };
    const transactions = async () =>
      (await sql<{ n: number }[]>`select count(*)::int as n from chain_transactions`)[0].n;
    const usdc = async () =>
      await Promise.all(
        Object.values(PROFILE).flatMap((p) =>
          w.watched.map(async (a) => `${p} ${a} ${await svc.deps.chain.usdcBalance(p, a)}`)
        ),
      );
    const before = await usdc();

    const check = async (route: string, rule: Rule, from: Env) => {
      const target = OTHER[from];
      const creds = "merchant" in rule && rule.merchant === "e" ? w.eCreds : w.creds;
      const own = creds[from];
      const sent = await transactions();
      if ("record" in rule) {
        const r = await send(own, rule.as, route, rule.probe(w.records[target], w));
        assert.equal(r.status, rule.status, r.text);
        assert.match(r.type, /application\/json/);
        if (rule.error) assert.equal(r.json.error, rule.error, r.text);
        for (const [k, v] of Object.entries(rule.fields ?? {})) assert.equal(r.json[k], v, r.text);
        if (rule.probe(w.records[from], w).method === "GET") {
          // The same request for the credential's own record finds it: the probe is well aimed.
          const mine = await send(own, rule.as, route, rule.probe(w.records[from], w));
          assert.equal(mine.status, 200, mine.text);
        }
      } else if ("lists" in rule) {
        const theirs = w.records[target][rule.lists];
        const mine = w.records[from][rule.lists];
        const r = await send(own, rule.as, route, rule.probe(w.records[target], w));
        assert.equal(r.status, 200, r.text);
        assert.match(r.type, /application\/json/);
        assert.ok(!r.text.includes(theirs), `the ${target} ${rule.lists} is listed: ${r.text}`);
        const control = await send(own, rule.as, route, rule.probe(w.records[from], w));
        assert.ok(control.text.includes(mine), `the own ${rule.lists} is missing: ${control.text}`);
      } else if ("balances" in rule) {
        const r = await send(own, rule.as, route, rule.probe(w.records[target], w));
        assert.equal(r.status, 200, r.text);
        assert.match(r.type, /application\/json/);
        const wallets = (r.json.wallets ?? [r.json.wallet]) as Array<{ balances: object }>;
        for (const wallet of wallets) {
          assert.deepEqual(Object.keys(wallet.balances), [PROFILE[from]], r.text);
        }
      }
      assert.equal(await transactions(), sent, "nothing sent on either chain");
    };

    // Live credentials against test records first: job ids count from 1 on each chain, and the
    // live jobs the test key is pointed at are made in between (see buildWorld).
    for (const from of ["live", "test"] as const) {
      if (from === "test") await w.moreLiveJobs();
      for (const route of routes) {
        const rule = RULES[route];
        if (!rule || "free" in rule || "creates" in rule) continue;
        await t.step(`${route}: a ${from} credential, the ${OTHER[from]} record`, async () => {
          await check(route, rule, from);
        });
      }
    }

    await t.step("no USDC moved on either chain", async () => {
      assert.deepEqual(await usdc(), before);
    });
  } finally {
    await svc.close();
  }
});
