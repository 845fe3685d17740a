/** Merchants for tests: signed up, verified through the real mail path, logged in. */
import assert from "node:assert/strict";
import type { TestService } from "./service.ts";
import { waitFor } from "./poll.ts";
import { assertDocumented } from "./contract.ts";

export interface TestMerchant {
  id: string;
  email: string;
  password: string;
  apiKey: string;
  cookie: string;
  walletAddress: string | null;
}

/** A JSON call; every response of a documented route is checked against its documentation. */
export function api(svc: TestService) {
  return async (
    method: string,
    path: string,
    opts: { body?: unknown; headers?: Record<string, string>; cookie?: string } = {},
  ) => {
    const headers: Record<string, string> = { ...opts.headers };
    if (opts.body !== undefined) headers["content-type"] = "application/json";
    if (opts.cookie) headers.cookie = opts.cookie;
    const res = await fetch(`${svc.baseUrl}${path}`, {
      method,
      headers,
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
      redirect: "manual",
    });
    const text = await res.text();
    assertDocumented(method, path, res.status, res.headers.get("content-type"), text);
    let json: Record<string, unknown> = {};
    try {
      json = JSON.parse(text);
    } catch { /* not JSON */ }
    return { status: res.status, headers: res.headers, json, text };
  };
}

/** `name=value` of a Set-Cookie header, for the next request's Cookie header. */
export function cookieFrom(headers: Headers, name: string): string | undefined {
  for (const line of headers.getSetCookie()) {
    const [pair] = line.split(";");
    if (pair.startsWith(`${name}=`)) return pair;
  }
  return undefined;
}

/** The newest code mailed to `email` (through the dev mailbox the mail job fills). */
export async function mailedCode(
  svc: TestService,
  email: string,
  after = new Date(0),
): Promise<string> {
  const row = await waitFor(async () => {
    const [m] = await svc.db.sql<{ textBody: string }[]>`
      select text_body from dev_mailbox where to_address = ${email} and created_at > ${after}
      order by created_at desc limit 1`;
    return m;
  }, { what: `a code mailed to ${email}` });
  const code = /code is ([A-Z0-9]{6})\./.exec(row.textBody)?.[1];
  assert.ok(code, row.textBody);
  return code;
}

let counter = 0;

export async function createMerchant(
  svc: TestService,
  opts: { walletProvider?: string; businessName?: string } = {},
): Promise<TestMerchant> {
  const call = api(svc);
  const email = `m${Date.now()}${counter++}@example.com`;
  const password = "correct horse battery";
  const signup = await call("POST", "/api/merchant/signup", {
    body: {
      email,
      password,
      businessName: opts.businessName ?? "Test Shop",
      walletProvider: opts.walletProvider,
    },
  });
  assert.equal(signup.status, 201, signup.text);
  const code = await mailedCode(svc, email);
  const verified = await call("POST", "/api/merchant/verify", { body: { email, code } });
  assert.equal(verified.status, 200, verified.text);
  const login = await call("POST", "/api/merchant/login", { body: { email, password } });
  assert.equal(login.status, 200, login.text);
  const m = verified.json.merchant as { id: string; walletAddress: string | null };
  return {
    id: m.id,
    email,
    password,
    apiKey: verified.json.apiKey as string,
    cookie: cookieFrom(login.headers, "merchant_token")!,
    walletAddress: m.walletAddress,
  };
}
