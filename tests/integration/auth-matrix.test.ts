/**
 * The authentication matrix: every endpoint of merchant accounts, keys and consumer sessions
 * × every kind of credential → the spec's status and text.
 */
import assert from "node:assert/strict";
import { startTestService } from "../helpers/service.ts";
import { api, createMerchant } from "../helpers/accounts.ts";

type Cred =
  | "none"
  | "malformed"
  | "cookie"
  | "merchantKey"
  | "secretTest"
  | "secretLive"
  | "publishable"
  | "revoked"
  | "bearerMerchant"
  | "bearerSecret"
  | "bearerPublishable";
const CREDS: Cred[] = [
  "none",
  "malformed",
  "cookie",
  "merchantKey",
  "secretTest",
  "secretLive",
  "publishable",
  "revoked",
  "bearerMerchant",
  "bearerSecret",
  "bearerPublishable",
];

const AUTH_REQUIRED =
  "Authentication required. Provide a valid API key in the Authorization header.";
type Expect = [number, string | null, "bare"?];

/** A cookie-only endpoint: keys are a credential of the wrong kind. */
const cookieOnly = (ok: number): Record<Cred, Expect> => ({
  none: [401, "Not authenticated."],
  malformed: [401, "Invalid session."],
  cookie: [ok, null],
  merchantKey: [401, "Not authenticated."],
  secretTest: [401, "Not authenticated."],
  secretLive: [401, "Not authenticated."],
  publishable: [401, "Not authenticated."],
  revoked: [401, "Not authenticated."],
  bearerMerchant: [401, "Not authenticated."],
  bearerSecret: [401, "Not authenticated."],
  bearerPublishable: [401, "Not authenticated."],
});

/** Cookie or the merchant key (x-api-key). */
const cookieOrMerchantKey = (ok: number, missing = AUTH_REQUIRED): Record<Cred, Expect> => ({
  none: [401, missing],
  malformed: [401, missing],
  cookie: [ok, null],
  merchantKey: [ok, null],
  secretTest: [403, "Insufficient permissions"],
  secretLive: [403, "Insufficient permissions"],
  publishable: [403, "Insufficient permissions"],
  revoked: [401, "Invalid API key"],
  // These routes read x-api-key, not Authorization: the right key there is no credential, but a
  // key refused in any form is refused as such (rule 3).
  bearerMerchant: [401, missing],
  bearerSecret: [403, "Insufficient permissions"],
  bearerPublishable: [403, "Insufficient permissions"],
});

Deno.test("auth matrix: merchant, keys and consumer endpoints × every credential", async () => {
  const svc = await startTestService({ env: { RATE_LIMITS: "off" } });
  const call = api(svc);
  try {
    const m = await createMerchant(svc);
    const mk = async (type: string, environment: string) => {
      const r = await call("POST", "/api/keys", { cookie: m.cookie, body: { type, environment } });
      assert.equal(r.status, 201, r.text);
      return r.json.key as { id: string; key: string };
    };
    const secretTest = await mk("secret", "test");
    const secretLive = await mk("secret", "live");
    const publishable = await mk("publishable", "live");
    const revoked = await mk("secret", "live");
    assert.equal(
      (await call("DELETE", `/api/keys/${revoked.id}`, { cookie: m.cookie })).status,
      200,
    );
    const spare = await mk("publishable", "test");

    const present = (cred: Cred): { headers?: Record<string, string>; cookie?: string } => {
      switch (cred) {
        case "none":
          return {};
        case "malformed":
          return { headers: { "x-api-key": "not-a-key" }, cookie: "merchant_token=not.a.jwt" };
        case "cookie":
          return { cookie: m.cookie };
        case "merchantKey":
          return { headers: { "x-api-key": m.apiKey } };
        case "secretTest":
          return { headers: { "x-api-key": secretTest.key } };
        case "secretLive":
          return { headers: { "x-api-key": secretLive.key } };
        case "publishable":
          return { headers: { "x-api-key": publishable.key } };
        case "revoked":
          return { headers: { "x-api-key": revoked.key } };
        case "bearerMerchant":
          return { headers: { authorization: `Bearer ${m.apiKey}` } };
        case "bearerSecret":
          return { headers: { authorization: `Bearer ${secretLive.key}` } };
        case "bearerPublishable":
          return { headers: { authorization: `Bearer ${publishable.key}` } };
      }
    };

    const address = "0x000000000000000000000000000000000000dEaD";
    const endpoints: Array<{
      method: string;
      path: string;
      body?: unknown;
      expect: Record<Cred, Expect>;
    }> = [
      { method: "GET", path: "/api/merchant/me", expect: cookieOnly(200) },
      { method: "GET", path: "/api/merchant/wallet", expect: cookieOnly(200) },
      {
        method: "PATCH",
        path: "/api/merchant/wallet",
        body: { walletProvider: "MANAGED" },
        // Authenticated, then refused: a managed wallet already exists.
        expect: cookieOnly(409),
      },
      {
        method: "GET",
        path: "/api/merchant/dashboard",
        expect: {
          none: [401, "Unauthorized", "bare"],
          malformed: [401, "Unauthorized", "bare"],
          cookie: [401, "Unauthorized", "bare"],
          merchantKey: [200, null],
          secretTest: [200, null],
          secretLive: [200, null],
          publishable: [403, "Insufficient permissions", "bare"],
          revoked: [404, "Not found", "bare"],
          bearerMerchant: [401, "Unauthorized", "bare"],
          bearerSecret: [401, "Unauthorized", "bare"],
          bearerPublishable: [403, "Insufficient permissions", "bare"],
        },
      },
      {
        method: "GET",
        path: `/api/merchant/wallet/connect?address=${address}`,
        expect: cookieOrMerchantKey(200, "Authentication required."),
      },
      {
        method: "POST",
        path: "/api/merchant/wallet/connect",
        body: {},
        // Authenticated, then refused: the body is empty.
        expect: cookieOrMerchantKey(400, "Authentication required."),
      },
      { method: "GET", path: "/api/keys", expect: cookieOrMerchantKey(200) },
      {
        method: "POST",
        path: "/api/keys",
        body: { type: "publishable", environment: "test" },
        expect: cookieOrMerchantKey(201),
      },
      {
        method: "POST",
        path: `/api/keys/${spare.id}/rotate`,
        expect: {
          ...cookieOrMerchantKey(201),
          merchantKey: [400, "This API key is already revoked."],
        },
      },
      {
        method: "DELETE",
        path: `/api/keys/00000000-0000-0000-0000-000000000000`,
        expect: cookieOrMerchantKey(404),
      },
    ];
    // Endpoints that take no credential answer the same whatever is presented.
    const open: Array<
      { method: string; path: string; body?: unknown; status: number; error?: string }
    > = [
      {
        method: "POST",
        path: "/api/merchant/signup",
        body: {},
        status: 400,
        error: "A valid email is required.",
      },
      {
        method: "POST",
        path: "/api/merchant/verify",
        body: {},
        status: 400,
        error: "email and code are required.",
      },
      {
        method: "POST",
        path: "/api/merchant/login",
        body: {},
        status: 400,
        error: "email and password are required.",
      },
      { method: "GET", path: "/api/consumer/session", status: 401, error: "No session." },
      { method: "GET", path: "/api/consumer/balance", status: 401, error: "No session." },
      { method: "GET", path: "/api/consumer/activity", status: 401, error: "No session." },
      { method: "DELETE", path: "/api/consumer/session", status: 200 },
      {
        method: "POST",
        path: "/api/consumer/session",
        body: { walletAddress: "0x123" },
        status: 400,
        error: "Not a valid wallet address.",
      },
    ];

    const failures: string[] = [];
    for (const e of endpoints) {
      for (const cred of CREDS) {
        const r = await call(e.method, e.path, { ...present(cred), body: e.body });
        const [status, error, bare] = e.expect[cred];
        const got = `${e.method} ${e.path} × ${cred}: ${r.status} ${r.text.slice(0, 140)}`;
        if (r.status !== status) failures.push(`${got} (expected ${status})`);
        else if (error !== null && r.json.error !== error) {
          failures.push(`${got} (expected "${error}")`);
        } else if (bare && "success" in r.json) {
          failures.push(`${got} (expected an { error } body)`);
        } else if (!bare && error !== null && r.json.success !== false) {
          failures.push(`${got} (no success:false)`);
        }
      }
    }
    for (const e of open) {
      for (const cred of CREDS) {
        const r = await call(e.method, e.path, { ...present(cred), body: e.body });
        const got = `${e.method} ${e.path} × ${cred}: ${r.status} ${r.text.slice(0, 140)}`;
        if (r.status !== e.status || (e.error && r.json.error !== e.error)) failures.push(got);
      }
    }
    assert.deepEqual(failures, []);
  } finally {
    await svc.close();
  }
});
