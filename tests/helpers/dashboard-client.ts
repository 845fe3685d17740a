/**
 * The dashboard over plain HTTP, as a browser looks to the server: a cookie jar and the CSRF
 * token of the last page opened. For tests of page routes without Chromium.
 */
import assert from "node:assert/strict";
import type { TestService } from "./service.ts";
import type { TestMerchant } from "./accounts.ts";

export const CSRF_COOKIE = "dashboard_csrf";

/** A browser as far as the server can tell: its cookies and the page token it was given. */
export interface Browser {
  cookies: Map<string, string>;
  token: string;
}

export function cookieHeader(b: Browser): string {
  return [...b.cookies].map(([k, v]) => `${k}=${v}`).join("; ");
}

function remember(b: Browser, headers: Headers) {
  for (const line of headers.getSetCookie()) {
    const [pair, ...attrs] = line.split(";");
    const i = pair.indexOf("=");
    const name = pair.slice(0, i);
    const value = pair.slice(i + 1);
    const expired = attrs.some((a) => /max-age=0\b/i.test(a.trim())) || value === "";
    if (expired) b.cookies.delete(name);
    else b.cookies.set(name, value);
  }
}

export function tokenIn(html: string): string {
  const m = /<meta name="csrf-token" content="([^"]+)"/.exec(html);
  assert.ok(m, "the page carries a CSRF token");
  return m[1];
}

/**
 * A browser's forms carry the token of the page they came from: a whole page (not an htmx
 * fragment) brings the token its later forms send. The token is bound to the session's mode, so
 * a page shown after a mode switch carries a new one.
 */
function takeToken(b: Browser, html: string): void {
  const m = /<meta name="csrf-token" content="([^"]+)"/.exec(html);
  if (m) b.token = m[1];
}

export function dashboardClient(svc: TestService) {
  const get = async (b: Browser | null, path: string, headers: Record<string, string> = {}) => {
    const res = await fetch(`${svc.baseUrl}${path}`, {
      headers: { ...(b ? { cookie: cookieHeader(b) } : {}), ...headers },
      redirect: "manual",
    });
    if (b) remember(b, res.headers);
    const text = await res.text();
    if (b) takeToken(b, text);
    return { status: res.status, headers: res.headers, text };
  };
  const post = async (
    b: Browser,
    path: string,
    fields: Record<string, string> = {},
    opts: { token?: string | null; origin?: string | null; headers?: Record<string, string> } = {},
  ) => {
    const headers: Record<string, string> = {
      "content-type": "application/x-www-form-urlencoded",
      cookie: cookieHeader(b),
      ...opts.headers,
    };
    if (opts.origin !== null) headers.origin = opts.origin ?? svc.baseUrl;
    const token = opts.token === undefined ? b.token : opts.token;
    const body = new URLSearchParams({ ...fields, ...(token !== null ? { _csrf: token } : {}) });
    const res = await fetch(`${svc.baseUrl}${path}`, {
      method: "POST",
      headers,
      body,
      redirect: "manual",
    });
    remember(b, res.headers);
    const text = await res.text();
    takeToken(b, text);
    return { status: res.status, headers: res.headers, text };
  };
  /** A fresh browser opening `path`, with the merchant's session cookie when one is given. */
  const open = async (
    merchant?: TestMerchant,
    path = merchant ? "/dashboard" : "/dashboard/login",
  ): Promise<Browser> => {
    const b: Browser = { cookies: new Map(), token: "" };
    if (merchant) {
      const [k, v] = merchant.cookie.split("=");
      b.cookies.set(k, v);
    }
    const page = await get(b, path);
    assert.equal(page.status, 200, page.text);
    assert.ok(b.cookies.has(CSRF_COOKIE), "a CSRF cookie is set");
    b.token = tokenIn(page.text);
    return b;
  };
  return { get, post, open };
}
