/**
 * CSRF protection for server-rendered forms, two independent checks on every unsafe request:
 *
 * 1. Origin: hono's `csrf` middleware (a form-type body needs `Sec-Fetch-Site: same-origin` or an
 *    `Origin` equal to our BASE_URL origin or the request's own origin).
 * 2. A token: each browser gets a random value in an HttpOnly cookie; pages embed
 *    HMAC(secret, cookie value + session id) in a hidden `_csrf` input and in htmx's
 *    `X-CSRF-Token` header. The server recomputes it and compares in constant time. An attacker
 *    can neither read the page nor compute the HMAC, and a cookie planted from a sibling domain
 *    does not help: the token is bound to the secret and to the victim's session.
 *
 * Usage: `csrfCookie(...)` on every route of an area (mints the cookie, exposes the token as
 * `c.get("csrfToken")`), then `csrfVerify(...)` before handlers of unsafe methods.
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import { Buffer } from "node:buffer";
import type { Context, MiddlewareHandler } from "hono";
import { getCookie } from "hono/cookie";
import { csrf as originCheck } from "hono/csrf";
import { HTTPException } from "hono/http-exception";
import type { Config } from "../config.ts";
import { setSessionCookie } from "./session-token.ts";

export const CSRF_HEADER = "X-CSRF-Token";
export const CSRF_FIELD = "_csrf";
const COOKIE_SECONDS = 30 * 24 * 3600;
const SAFE = /^(GET|HEAD|OPTIONS)$/;

export type CsrfEnv = { Variables: { csrfToken: string } };
export type CsrfFailure = "origin" | "token";

export interface CsrfOptions {
  /** The cookie holding the browser's random value (e.g. `dashboard_csrf`). */
  cookieName: string;
  /** The cookie's path: the area whose forms it protects. */
  cookiePath: string;
  /** What the token is bound to besides the cookie (the session id), "" when anonymous. */
  binding?: (c: Context) => string;
}

/**
 * Whether an unsafe request comes from another site's page, as the browser says: its
 * `Sec-Fetch-Site` is anything but `same-origin` or `none` (a sibling subdomain's page is
 * `same-site`, and refused too), or, without that header, its `Origin` is neither our BASE_URL's
 * nor the request's own (`null` included). A client that sends neither (curl, a server) is no
 * browser and carries no ambient cookie. For API routes that take a session cookie: a request
 * with no body has no Content-Type for the JSON check to refuse, so a cross-site form or
 * `fetch(…, { mode: "no-cors" })` would otherwise reach them with the victim's cookie.
 */
export function crossSite(c: Context, config: Config): boolean {
  const fetchSite = c.req.header("sec-fetch-site");
  if (fetchSite !== undefined) return fetchSite !== "same-origin" && fetchSite !== "none";
  const origin = c.req.header("origin");
  if (origin === undefined) return false;
  return origin !== new URL(config.BASE_URL).origin && origin !== new URL(c.req.url).origin;
}

/** The token for a cookie value and binding: base64url HMAC-SHA256 under a key from JWT_SECRET. */
export function csrfToken(config: Config, cookieValue: string, binding = ""): string {
  return createHmac("sha256", `csrf:${config.JWT_SECRET}`)
    .update(`${cookieValue}\u0000${binding}`)
    .digest("base64url");
}

/** Constant-time comparison of two tokens (length is not secret). */
export function sameToken(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** Ensures the browser has a CSRF cookie and puts the page token in `c.get("csrfToken")`. */
export function csrfCookie(config: Config, opts: CsrfOptions): MiddlewareHandler<CsrfEnv> {
  return async (c, next) => {
    let value = getCookie(c, opts.cookieName);
    if (!value || !/^[A-Za-z0-9_-]{43}$/.test(value)) {
      value = Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64url");
      setSessionCookie(c, config, opts.cookieName, value, COOKIE_SECONDS, opts.cookiePath);
    }
    c.set("csrfToken", csrfToken(config, value, opts.binding?.(c) ?? ""));
    await next();
  };
}

/**
 * Refuses an unsafe request that fails the origin check or carries no valid token (header or
 * form field); `onFail` renders the refusal (a 403).
 */
export function csrfVerify(
  config: Config,
  opts: CsrfOptions & { onFail: (c: Context, why: CsrfFailure) => Response | Promise<Response> },
): MiddlewareHandler {
  const base = new URL(config.BASE_URL).origin;
  const origin = originCheck({
    origin: (o, c) => o === base || o === new URL(c.req.url).origin,
  });
  return async (c, next) => {
    if (SAFE.test(c.req.method)) return await next();
    try {
      await origin(c, () => Promise.resolve());
    } catch (e) {
      if (e instanceof HTTPException && e.status === 403) return await opts.onFail(c, "origin");
      throw e;
    }
    const cookie = getCookie(c, opts.cookieName);
    const sent = c.req.header(CSRF_HEADER) ?? await formField(c);
    const expected = cookie ? csrfToken(config, cookie, opts.binding?.(c) ?? "") : undefined;
    if (!sent || !expected || !sameToken(sent, expected)) return await opts.onFail(c, "token");
    await next();
  };
}

async function formField(c: Context): Promise<string | undefined> {
  const type = c.req.header("content-type") ?? "";
  if (!/^(application\/x-www-form-urlencoded|multipart\/form-data)/i.test(type)) return undefined;
  try {
    const body = await c.req.parseBody();
    const v = body[CSRF_FIELD];
    return typeof v === "string" ? v : undefined;
  } catch {
    return undefined;
  }
}
