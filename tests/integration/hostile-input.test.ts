/**
 * Hostile input gets a clear 4xx, never a 500: the inputs the hardening audit found (NUL, lone
 * surrogates, deep nesting, a crafted cursor), then a seeded fuzz over every JSON endpoint and
 * every query or path parameter, asserting no 5xx, the spec's error shape, and no rows written
 * on a refusal.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { startTestService, type TestService } from "../helpers/service.ts";
import { createMerchant, type TestMerchant } from "../helpers/accounts.ts";
import { tableEndpoints } from "../helpers/fuzz-table.ts";

const SEED = 20261122;
/** Cases per endpoint (a fixed seed, so every run sends the same requests). */
const RUNS = Number(Deno.env.get("FUZZ_RUNS") ?? "300");
const HINT_TEXT = "Text must be well-formed Unicode and must not contain NUL (U+0000).";
const notAllowed = (field: string) => `${field} contains characters that are not allowed.`;

/** Tables a request could add rows to; a refusal must leave every count as it was. */
async function rowCounts(svc: TestService): Promise<string> {
  const [r] = await svc.db.sql`
    select (select count(*)::int from merchants) as merchants,
           (select count(*)::int from merchant_sessions) as sessions,
           (select count(*)::int from api_keys) as keys,
           (select count(*)::int from wallet_link_challenges) as challenges,
           (select count(*)::int from consumers) as consumers,
           (select count(*)::int from wallets) as wallets,
           (select count(*)::int from payments) as payments,
           (select count(*)::int from webhook_deliveries) as deliveries,
           (select count(*)::int from payroll_batches) as payroll,
           (select count(*)::int from x402_listings) as listings,
           (select count(*)::int from x402_payments) as x402_payments,
           (select count(*)::int from agents) as agents,
           (select count(*)::int from commerce_jobs) as jobs,
           (select count(*)::int from bridge_transfers) as bridges`;
  return JSON.stringify(r);
}

interface Sent {
  status: number;
  type: string;
  text: string;
  json: unknown;
}

async function send(
  svc: TestService,
  method: string,
  path: string,
  opts: { body?: string | Uint8Array; headers?: Record<string, string> } = {},
): Promise<Sent> {
  const res = await fetch(`${svc.baseUrl}${path}`, {
    method,
    headers: {
      ...(opts.body !== undefined ? { "content-type": "application/json" } : {}),
      ...opts.headers,
    },
    body: opts.body as BodyInit | undefined,
    redirect: "manual",
  });
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch { /* not JSON */ }
  return { status: res.status, type: res.headers.get("content-type") ?? "", text, json };
}

/** The spec's error bodies: `{ success: false, error, hint? }`, or `{ error }` where it says so. */
function assertErrorShape(
  r: Sent,
  opts: { bare?: boolean; rpc?: boolean; extra?: string[]; hintObject?: boolean },
  what: string,
) {
  assert.match(r.type, /application\/json/, `${what}: JSON error body`);
  const b = r.json as Record<string, unknown>;
  assert.ok(b && typeof b === "object", `${what}: an object (${r.text.slice(0, 200)})`);
  if (opts.rpc && "jsonrpc" in b) return; // the RPC proxy answers in JSON-RPC's own form
  assert.equal(typeof b.error, "string", `${what}: error text (${r.text.slice(0, 200)})`);
  assert.ok((b.error as string).length > 0, what);
  if (opts.bare) {
    assert.deepEqual(Object.keys(b), ["error"], `${what}: { error } only`);
    return;
  }
  assert.equal(b.success, false, `${what}: success false`);
  // The spec gives a few errors a hint object (`hint.example` on a stream with missing fields).
  if ("hint" in b) {
    const kinds = opts.hintObject ? ["string", "object"] : ["string"];
    assert.ok(kinds.includes(typeof b.hint), `${what}: hint is ${kinds.join(" or ")}`);
  }
  // `status` is documented everywhere (a checkout payment that can no longer be paid); an
  // endpoint may document more (withdraw's `balance`).
  const allowed = ["success", "error", "hint", "status", ...(opts.extra ?? [])];
  const extra = Object.keys(b).filter((k) => !allowed.includes(k));
  assert.deepEqual(extra, [], `${what}: no other fields`);
}

// -------------------------------------------------------------------------------------------
// Generators

/** Strings that broke or could break something: NUL, lone surrogates, escapes, sizes. */
const NASTY_STRINGS = [
  "\u0000",
  "a\u0000b",
  "\ud800",
  "\udfff",
  "x\ud800y",
  "\ud83d",
  "\udc00\ud800",
  "😀",
  "",
  " ",
  "\r\n",
  "\u202e\ufeff",
  "%00",
  "\\u0000",
  "'; drop table merchants; --",
  "<script>alert(1)</script>",
  "__proto__",
  "constructor",
  "x".repeat(5000),
  "0x" + "f".repeat(40),
  "pay_ref_\u0000abc",
  "MANAGED",
  "1e309",
];

/** Any UTF-16 code units, lone surrogates and NUL included. */
const anyUnits = fc.array(fc.integer({ min: 0, max: 0xffff }), { maxLength: 12 })
  .map((codes) => String.fromCharCode(...codes));

const nastyString = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...NASTY_STRINGS) },
  { weight: 2, arbitrary: anyUnits },
  { weight: 1, arbitrary: fc.string({ maxLength: 20 }) },
);

const nastyValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: nastyString },
  { weight: 1, arbitrary: fc.constantFrom(null, true, false, 0, -1, 1e308, 0.1, [], {}) },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  { weight: 1, arbitrary: fc.dictionary(nastyString, nastyString, { maxKeys: 3 }) },
  { weight: 1, arbitrary: fc.array(nastyString, { maxLength: 3 }) },
);

const deep = (n: number, open = "[", close = "]") => open.repeat(n) + close.repeat(n);

/** Raw bodies, sent as they are: malformed, deep, odd top levels, invalid UTF-8. */
const RAW_BODIES: (string | Uint8Array)[] = [
  "",
  "{",
  "[]",
  "null",
  "42",
  '"\\u0000"',
  '{"a":"\\ud800"}',
  '{"\\u0000":1}',
  '{"a":1,"a":"\\u0000"}',
  deep(100_000),
  `{"walletProvider":${deep(100_000)}}`,
  '{"a":'.repeat(50_000) + "1" + "}".repeat(50_000),
  deep(33),
  deep(32),
  '{"__proto__":{"polluted":true}}',
  `{"amount":${"9".repeat(400)}}`,
  "\ufeff{}",
  new Uint8Array([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0xed, 0xa0, 0x80, 0x22, 0x7d]),
];

/** A body shaped like the endpoint's own: each field kept, replaced, dropped; extra keys. */
function bodyLike(sample: Record<string, unknown>): fc.Arbitrary<string | Uint8Array> {
  const fields = Object.fromEntries(
    Object.entries(sample).map((
      [k, v],
    ) => [k, fc.option(fc.oneof(fc.constant(v), nastyValue), { nil: undefined })]),
  );
  const shaped = fc.record(fields, { requiredKeys: [] }).chain((obj) =>
    fc.dictionary(nastyString, nastyValue, { maxKeys: 2 }).map((extra) => ({ ...obj, ...extra }))
  ).map((o) => JSON.stringify(o));
  return fc.oneof(
    { weight: 6, arbitrary: shaped },
    { weight: 1, arbitrary: fc.constantFrom(...RAW_BODIES) },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v)) },
    { weight: 1, arbitrary: fc.string({ maxLength: 40 }) },
  );
}

/** Percent-encoding of any string (lone surrogates become U+FFFD, as a browser sends them). */
function pct(s: string): string {
  return Array.from(new TextEncoder().encode(s), (b) => "%" + b.toString(16).padStart(2, "0"))
    .join("");
}

/** Raw path or query text: encoded strings, and escapes no encoder would write. */
const RAW_ESCAPES = ["%00", "a%00b", "%ED%A0%80", "%C0%80", "%ZZ", "%", "..%2F..", "%2e%2e"];
const urlText = fc.oneof(
  { weight: 3, arbitrary: nastyString.map(pct) },
  { weight: 2, arbitrary: fc.constantFrom(...RAW_ESCAPES) },
  { weight: 1, arbitrary: fc.stringMatching(/^[A-Za-z0-9_-]{0,40}$/) },
);

// -------------------------------------------------------------------------------------------

Deno.test("hostile input: a clear 4xx, never a 500", async (t) => {
  const svc = await startTestService({ env: { RATE_LIMITS: "off" } });
  try {
    const m: TestMerchant = await createMerchant(svc);
    const cookie = { cookie: m.cookie };
    const key = { "x-api-key": m.apiKey };
    const bearer = { authorization: `Bearer ${m.apiKey}` };
    const DEAD = "0x000000000000000000000000000000000000dEaD";
    const link = await send(svc, "POST", "/api/merchant/payment-link", {
      body: JSON.stringify({ amount: "1.00" }),
      headers: cookie,
    });
    assert.equal(link.status, 201, link.text);
    const reference = (link.json as { reference: string }).reference;

    const refused = async (
      method: string,
      path: string,
      opts: { body?: string; headers?: Record<string, string> },
      error: string,
      hint?: string,
    ) => {
      const before = await rowCounts(svc);
      const r = await send(svc, method, path, opts);
      const what = `${method} ${path} ${opts.body?.slice(0, 80) ?? ""}`;
      assert.equal(r.status, 400, `${what}: ${r.text.slice(0, 300)}`);
      assertErrorShape(r, {}, what);
      assert.equal((r.json as { error: string }).error, error, what);
      if (hint) assert.equal((r.json as { hint: string }).hint, hint, what);
      assert.equal(await rowCounts(svc), before, `${what}: nothing written`);
    };

    await t.step("NUL and lone surrogates in stored text → 400 naming the field", async () => {
      const signup = (fields: Record<string, unknown>) =>
        JSON.stringify({
          email: "nul@example.com",
          password: "correct horse battery",
          businessName: "Shop",
          ...fields,
        });
      await refused(
        "POST",
        "/api/merchant/signup",
        { body: signup({ businessName: "Bad\u0000Shop" }) },
        notAllowed("businessName"),
        HINT_TEXT,
      );
      await refused(
        "POST",
        "/api/merchant/signup",
        { body: signup({ businessName: "\ud800" }) },
        notAllowed("businessName"),
      );
      await refused(
        "POST",
        "/api/merchant/verify",
        { body: JSON.stringify({ email: "a\u0000@example.com", code: "ABC123" }) },
        notAllowed("email"),
      );
      await refused(
        "POST",
        "/api/merchant/login",
        { body: JSON.stringify({ email: "a\u0000@example.com", password: "x" }) },
        notAllowed("email"),
      );
      const pay = (fields: Record<string, unknown>) =>
        JSON.stringify({ amount: "1.00", ...fields });
      for (
        const [path, headers] of [["/api/payments/initialize", key], [
          "/api/merchant/payment-link",
          cookie,
        ]] as const
      ) {
        await refused(
          "POST",
          path,
          { body: pay({ description: "\u0000" }), headers },
          notAllowed("description"),
        );
        await refused(
          "POST",
          path,
          { body: pay({ metadata: { "a\u0000": 1 } }), headers },
          notAllowed("metadata"),
        );
        await refused(
          "POST",
          path,
          { body: pay({ metadata: { note: "x\u0000" } }), headers },
          notAllowed("metadata.note"),
        );
        await refused(
          "POST",
          path,
          { body: pay({ metadata: { tags: ["ok", "\udfff"] } }), headers },
          notAllowed("metadata.tags.1"),
        );
      }
      await refused(
        "POST",
        "/api/keys",
        {
          body: JSON.stringify({ type: "secret", environment: "test", label: "k\u0000" }),
          headers: cookie,
        },
        notAllowed("label"),
      );
      await refused(
        "POST",
        "/api/consumer/session",
        { body: JSON.stringify({ walletAddress: "0x\u0000" }) },
        notAllowed("walletAddress"),
      );
      await refused(
        "POST",
        "/api/merchant/signup",
        { body: '{"\\u0000":1}' },
        notAllowed("The request body"),
      );
    });

    await t.step("path and query parameters are held to the same rule", async () => {
      await refused(
        "POST",
        "/api/webhooks/deliveries/%00/replay",
        { headers: cookie },
        notAllowed("id"),
      );
      await refused(
        "GET",
        "/api/payments/verify/pay_ref_%00abc",
        { headers: key },
        notAllowed("reference"),
      );
      await refused(
        "GET",
        "/api/webhooks/deliveries?reference=a%00b",
        { headers: cookie },
        notAllowed("reference"),
      );
      await refused("DELETE", "/api/keys/%00", { headers: cookie }, notAllowed("id"));
      await refused(
        "GET",
        "/api/payments?status=PENDING&%00=1",
        { headers: key },
        notAllowed("The query string"),
      );
      await refused("GET", "/no/such/%00/path", {}, notAllowed("The request path"));
      // The spec's `{ error }`-only endpoint keeps its form.
      const bare = await send(svc, "GET", "/api/merchant/dashboard?x=%00", { headers: key });
      assert.equal(bare.status, 400);
      assert.deepEqual(bare.json, { error: notAllowed("x") });
    });

    await t.step("deep nesting is measured before parsing → 400", async () => {
      await refused(
        "PATCH",
        "/api/merchant/wallet",
        { body: `{"walletProvider":${deep(100_000)}}`, headers: cookie },
        "walletProvider is nested too deeply.",
        "JSON bodies may nest arrays and objects at most 32 levels deep.",
      );
      await refused(
        "PATCH",
        "/api/merchant/wallet",
        { body: deep(100_000), headers: cookie },
        "The request body is nested too deeply.",
      );
      await refused(
        "POST",
        "/api/merchant/signup",
        { body: '{"a":'.repeat(100_000) + "1" + "}".repeat(100_000) },
        "a is nested too deeply.",
      );
      // 32 levels are fine (and this body is then refused for what it is).
      const ok = await send(svc, "PATCH", "/api/merchant/wallet", {
        body: `{"walletProvider":${deep(31)}}`,
        headers: cookie,
      });
      assert.equal(ok.status, 400);
      assert.doesNotMatch((ok.json as { error: string }).error, /nested/);
    });

    await t.step("a crafted cursor (year +099999) → 400 with the cursor text", async () => {
      const uuid = "0b0e8a55-1d6f-4bb0-9d2b-6a3c9b1c2d3e";
      for (
        const raw of [
          `+099999-01-01T00:00:00.000Z|${uuid}`,
          `-000001-01-01T00:00:00.000Z|${uuid}`,
          `2026-01-01T00:00:00.000Z|${"-".repeat(36)}`,
          `2026-01-01|${uuid}`,
          `2026-01-01T00:00:00.000Z|${uuid}|x`,
        ]
      ) {
        await refused(
          "GET",
          `/api/payments?cursor=${encodeURIComponent(btoa(raw))}`,
          { headers: key },
          "cursor is not valid; use the nextCursor of a previous page.",
        );
      }
    });

    // ---------------------------------------------------------------------------------------
    // The fuzz: every JSON endpoint, and the query and path parameters of the read endpoints.

    interface Endpoint {
      method: string;
      path: (param: string) => string;
      headers: Record<string, string>;
      sample?: Record<string, unknown>;
      bare?: boolean;
      rpc?: boolean;
      runs?: number;
      /** Documented fields an error body of this endpoint may carry besides the usual ones. */
      extra?: string[];
      /** The endpoint documents a hint object (not only text). */
      hintObject?: boolean;
      /** Statuses whose body is `{ error }` only (the jobs API's 403 and 404). */
      bareStatuses?: number[];
    }
    const none = () => "";
    // Every declared /api/ route with a `fuzz` entry (src/http/route.ts), from the route table.
    const table = tableEndpoints(
      { cookie, key, bearer, values: { $wallet: m.walletAddress, $email: m.email, $dead: DEAD } },
      RUNS,
    );
    // Routes outside the table: the checkout pages, the RPC proxy and the x402 paid proxy.
    const bodies: Endpoint[] = [
      ...table.bodies,
      {
        method: "POST",
        path: () => `/checkout/${reference}/calldata`,
        headers: {},
        sample: {
          payer: "0x000000000000000000000000000000000000dEaD",
          signature: "0x00",
          deadline: "1",
        },
      },
      {
        method: "POST",
        path: () => `/checkout/${reference}/submitted`,
        headers: {},
        sample: { txHash: "0x" + "ab".repeat(32) },
      },
      {
        method: "POST",
        path: () => "/rpc/testnet",
        headers: {},
        sample: { jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] },
        rpc: true,
        runs: Math.ceil(RUNS / 3),
      },
      {
        method: "POST",
        path: () => `/checkout/${reference}/relay`,
        headers: {},
        sample: {
          authorization: {
            from: "0x000000000000000000000000000000000000dEaD",
            to: "0x000000000000000000000000000000000000bEEF",
            value: "1000000",
            validAfter: "0",
            validBefore: "1",
            nonce: "0x" + "ab".repeat(32),
          },
          signature: "0x" + "cd".repeat(65),
        },
      },
      // Cross-chain checkout from the shopper's wallet (the link's payment is not on the
      // bridge's destination chain, so a well-formed request is refused before any chain call).
      {
        method: "POST",
        path: () => `/checkout/${reference}/bridge-relay`,
        headers: {},
        sample: {
          sourceChain: "Base_Sepolia",
          transferSpeed: "standard",
          maxFee: "0",
          authorization: {
            from: "0x000000000000000000000000000000000000dEaD",
            to: "0x000000000000000000000000000000000000bEEF",
            value: "1000000",
            validAfter: "0",
            validBefore: "1",
            nonce: "0x" + "ab".repeat(32),
          },
          signature: "0x" + "cd".repeat(65),
        },
      },
      {
        method: "POST",
        path: () => `/checkout/${reference}/bridge-burn`,
        headers: {},
        sample: { sourceChain: "Base_Sepolia", txHash: "0x" + "ab".repeat(32) },
      },
    ];
    const params: Endpoint[] = [
      ...table.params,
      // The paid proxy (not an /api/ route).
      { method: "GET", path: (p) => `/x402/s${p}`, headers: {}, extra: ["x402Version", "accepts"] },
      { method: "GET", path: (p) => `/checkout/${reference}/pay-data?payer=${p}`, headers: {} },
    ];

    const check = async (e: Endpoint, path: string, body?: string | Uint8Array) => {
      const before = await rowCounts(svc);
      const r = await send(svc, e.method, path, { body, headers: e.headers });
      const what = `${e.method} ${path.slice(0, 120)} ${
        typeof body === "string" ? JSON.stringify(body.slice(0, 120)) : body ? "(bytes)" : ""
      }`;
      assert.ok(r.status < 500, `${what} → ${r.status} ${r.text.slice(0, 300)}`);
      if (r.status >= 400) {
        assertErrorShape(r, {
          bare: (e.bare && r.status !== 429) || e.bareStatuses?.includes(r.status),
          rpc: e.rpc,
          extra: e.extra,
          hintObject: e.hintObject,
        }, what);
        assert.equal(await rowCounts(svc), before, `${what}: a refusal wrote rows`);
      }
    };

    for (const e of bodies) {
      await t.step(`fuzz ${e.method} ${e.path(none())} bodies`, async () => {
        await fc.assert(
          fc.asyncProperty(bodyLike(e.sample ?? {}), (body) => check(e, e.path(""), body)),
          { seed: SEED, numRuns: e.runs ?? RUNS, endOnFailure: true },
        );
      });
    }
    for (const e of params) {
      await t.step(`fuzz ${e.method} ${e.path("{p}")} parameters`, async () => {
        await fc.assert(
          fc.asyncProperty(urlText, (p) => check(e, e.path(p))),
          { seed: SEED, numRuns: e.runs ?? RUNS, endOnFailure: true },
        );
      });
    }
  } finally {
    await svc.close();
  }
});
