/**
 * What every dashboard route uses: the context type, full page vs partial rendering (DESIGN §8:
 * the whole layout, or only the partial when the request carries `HX-Request`), redirects that
 * work for htmx and plain forms, form bodies, and service failures turned into inline texts.
 */
import type { Context } from "hono";
import { html } from "hono/html";
import type { Child } from "hono/jsx";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { Auth } from "../../http/auth.ts";
import type { ProfileName } from "../../chain/profiles.ts";
import type { KeyEnvironment } from "../keys/keys.rules.ts";
import { assetUrl } from "../../http/assets.ts";
import type { CsrfEnv } from "../../http/csrf.ts";
import { ApiError } from "../../http/errors.ts";
import { answerFor, type ErrorAnswer } from "../../http/error-map.ts";
import { M } from "../../http/messages.ts";
import {
  DashboardPage,
  EntryPage,
  type NavItem,
  Partial,
  type ShellProps,
} from "../../../views/dashboard/shell.tsx";

export type DashEnv = {
  Variables: CsrfEnv["Variables"] & {
    /** Set when the request carries a valid merchant session. */
    auth: Auth;
    requestId: string;
    nav: NavItem[];
  };
};
export type DashContext = Context<DashEnv>;
export type Merchant = NonNullable<Auth["merchant"]>;

/** The session, if any (public pages run without one). */
export function sessionOf(c: Context): Auth | undefined {
  return c.get("auth" as never) as Auth | undefined;
}

/** The signed-in merchant (routes behind the session check). */
export function merchantOf(c: Context): Merchant {
  const m = sessionOf(c)?.merchant;
  if (!m) throw new ApiError(401, M.notAuthenticated);
  return m;
}

/**
 * The session's mode ("test" or "live", DESIGN §11): the dashboard's counterpart of a key's
 * prefix. Every section reads and acts on this environment's records only.
 */
export function modeOf(c: Context): KeyEnvironment {
  const env = sessionOf(c)?.environment;
  if (!env) throw new ApiError(401, M.notAuthenticated);
  return env;
}

/** The chain of the session's mode (testnet in test mode, production in live mode). */
export function dashProfileOf(c: Context): ProfileName {
  const p = sessionOf(c)?.profile;
  if (!p) throw new ApiError(401, M.notAuthenticated);
  return p;
}

/** A wallet as a form's choice: its name, its short address and its balance on `profile`'s chain. */
export function walletChoiceLabel(
  w: {
    label?: string | null;
    payout?: boolean;
    address: string;
    balances: Partial<Record<string, string | null>>;
  },
  profile: ProfileName,
): string {
  const name = w.label ?? (w.payout ? "Payout wallet" : "Wallet");
  return `${name} · ${w.address.slice(0, 8)}… · ${w.balances[profile] ?? "?"} USDC`;
}

/** Texts the page script shows, from the catalog, handed over as data attributes. */
const SCRIPT_TEXTS = {
  "wallet-missing": M.dashWalletMissing,
  "wallet-rejected": M.dashWalletRejected,
  "wallet-failed": M.dashWalletFailed,
  "request-failed": M.dashRequestFailed,
  "wallet-not-payout": M.dashWalletNotPayout,
  "amount-invalid": M.dashSignedAmount,
  "draft-restored": M.dashDraftRestored,
};

/** An htmx request that wants a fragment (not a history restore or a boosted navigation). */
export function isPartial(c: Context): boolean {
  return c.req.header("hx-request") === "true" &&
    c.req.header("hx-history-restore-request") !== "true" &&
    c.req.header("hx-boosted") !== "true";
}

export function isHtmx(c: Context): boolean {
  return c.req.header("hx-request") === "true";
}

function shell(c: DashContext, title: string): ShellProps {
  return {
    title: `${title} · Settlement`,
    csrf: c.get("csrfToken"),
    assets: {
      css: assetUrl("dashboard.css"),
      js: assetUrl("dashboard.js"),
      htmx: assetUrl("htmx.min.js"),
      live: assetUrl("live.js"),
    },
    texts: SCRIPT_TEXTS,
  };
}

export interface PageOptions {
  title: string;
  /** The nav entry to mark current. */
  section?: string;
  body: Child;
  status?: ContentfulStatusCode;
  /** Login, signup, verification: the page without nav even when signed in. */
  entry?: boolean;
}

/** A page: the whole document, or for htmx the title, the nav (out of band) and the body. */
export function page(c: DashContext, o: PageOptions): Response | Promise<Response> {
  const s = shell(c, o.title);
  const m = o.entry ? undefined : sessionOf(c)?.merchant;
  const nav = m ? c.get("nav") : undefined;
  if (isPartial(c)) {
    return c.html(
      <Partial title={s.title} nav={nav} current={o.section}>{o.body}</Partial>,
      o.status ?? 200,
    );
  }
  const doc = m
    ? (
      <DashboardPage
        {...s}
        merchant={{ businessName: m.businessName, email: m.email }}
        mode={sessionOf(c)?.environment ?? "live"}
        path={new URL(c.req.url).pathname + new URL(c.req.url).search}
        nav={nav}
        current={o.section}
      >
        {o.body}
      </DashboardPage>
    )
    : <EntryPage {...s}>{o.body}</EntryPage>;
  return c.html(html`<!DOCTYPE html>${doc}`, o.status ?? 200);
}

/** A fragment for htmx targets smaller than the page (a panel, a list). */
export function fragment(c: Context, body: Child, status: ContentfulStatusCode = 200) {
  return c.html(<>{body}</>, status);
}

/** Navigate the browser: `HX-Redirect` for htmx (a full load), 303 for a plain form. */
export function redirect(c: Context, to: string): Response {
  if (isHtmx(c)) {
    c.header("HX-Redirect", to);
    return c.body(null, 204);
  }
  return c.redirect(to, 303);
}

/**
 * No valid session: to the login page, remembering in `?next=` the dashboard page the person was
 * on (a GET's own path; for a form sent, the page it was sent from: htmx's current URL, or a
 * plain form's Referer). A form sent without a session also says the session ended
 * (`?ended=1`): signed out in another tab, or expired, while the form was open. What was typed
 * is kept by the page's script (views/assets/dashboard.js) and put back after the login.
 */
export function toLogin(c: Context): Response {
  const sent = c.req.method !== "GET" && c.req.method !== "HEAD";
  const next = safeNext(sent ? sentFrom(c) : wantedPath(c));
  const query = new URLSearchParams();
  if (next) query.set("next", next);
  if (sent) query.set("ended", "1");
  const to = `/dashboard/login${query.size ? `?${query}` : ""}`;
  if (isHtmx(c)) {
    c.header("HX-Redirect", to);
    return c.body(null, 401);
  }
  return c.redirect(to, 302);
}

/** The page a form was sent from: htmx's current URL, else a same-origin Referer. */
function sentFrom(c: Context): string | undefined {
  const from = c.req.header("hx-current-url") ?? c.req.header("referer");
  if (!from) return undefined;
  try {
    const url = new URL(from);
    if (url.origin !== new URL(c.req.url).origin) return undefined;
    return url.pathname + url.search;
  } catch {
    return undefined;
  }
}

/** The page the person was on: for htmx the browser's URL, not the fragment's. */
function wantedPath(c: Context): string {
  const current = isHtmx(c) ? c.req.header("hx-current-url") : undefined;
  const url = new URL(current ?? c.req.url, "http://x");
  return url.pathname + url.search;
}

/** A `next` that stays on our dashboard (no other origin, no `//`, no login loop), or undefined. */
export function safeNext(raw: string | undefined | null): string | undefined {
  if (!raw || raw.length > 2000 || !/^\/dashboard(?:[/?]|$)/.test(raw)) return undefined;
  // deno-lint-ignore no-control-regex
  if (/[\u0000-\u001f\\]/.test(raw)) return undefined;
  const base = "http://dashboard.invalid";
  let url: URL;
  try {
    url = new URL(raw, base);
  } catch {
    return undefined;
  }
  if (url.origin !== base || !/^\/dashboard(\/|$)/.test(url.pathname)) return undefined;
  if (/^\/dashboard\/(login|logout|signup|verify)(\/|$)/.test(url.pathname)) return undefined;
  return url.pathname + url.search;
}

export type FormValues = Record<string, string | string[]>;

/** The form body (urlencoded or multipart); repeated names become arrays. Files are ignored. */
export async function formBody(c: Context): Promise<FormValues> {
  const type = c.req.header("content-type") ?? "";
  if (!/^(application\/x-www-form-urlencoded|multipart\/form-data)/i.test(type)) return {};
  const body = await c.req.parseBody({ all: true });
  const out: FormValues = {};
  for (const [k, v] of Object.entries(body)) {
    if (k === "_csrf") continue;
    if (typeof v === "string") out[k] = v;
    else if (Array.isArray(v)) {
      out[k] = v.filter((x): x is string => typeof x === "string");
    }
  }
  return out;
}

/** One string per field (the first of repeated ones). */
export function single(values: FormValues): Record<string, string> {
  return Object.fromEntries(
    Object.entries(values).map(([k, v]) => [k, Array.isArray(v) ? v[0] ?? "" : v]),
  );
}

export type Outcome<T> = { ok: true; value: T } | { ok: false; error: ErrorAnswer };

/**
 * Runs a service call; its failure comes back as the API's answer (status, catalog text, code)
 * to be shown inline. Unexpected errors propagate to the dashboard's error page.
 */
export async function attempt<T>(fn: () => Promise<T>): Promise<Outcome<T>> {
  try {
    return { ok: true, value: await fn() };
  } catch (e) {
    const error = answerFor(e);
    if (error.unexpected) throw e;
    return { ok: false, error };
  }
}
