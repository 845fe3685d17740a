/**
 * The merchant dashboard under /dashboard: server-rendered pages with htmx, protected by the
 * `merchant_token` session cookie and CSRF checks. Every request passes, in order:
 *
 *   headers      no-store, a strict CSP (scripts and styles from our origin only), no framing
 *   session      a valid merchant session is resolved when present (the API's cookie guard)
 *   csrf cookie  the browser's CSRF cookie is minted if missing; the page token is computed
 *   login gate   everything except login/signup/verify needs the session → else 302 to login
 *   csrf verify  POST and other unsafe methods need the token and a same-origin Origin → else 403
 *
 * then the entry routes and every section's routes (the modules' `sections`).
 */
import { STRICT_CSP } from "../../http/csp.ts";
import { Hono } from "hono";
import type { MiddlewareHandler } from "hono";
import { getCookie } from "hono/cookie";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { Deps } from "../../deps.ts";
import { guard } from "../../http/auth.ts";
import { csrfCookie, csrfVerify } from "../../http/csrf.ts";
import { ApiError } from "../../http/errors.ts";
import { answerFor } from "../../http/error-map.ts";
import { M } from "../../http/messages.ts";
import { MERCHANT_COOKIE } from "../../http/session-token.ts";
import { ErrorView } from "../../../views/dashboard/shell.tsx";
import {
  type DashContext,
  type DashEnv,
  fragment,
  isHtmx,
  isPartial,
  page,
  toLogin,
} from "./dashboard.http.tsx";
import { entryRoutes, PUBLIC_PATHS } from "./entry.routes.tsx";
import { liveRoutes } from "./live.routes.ts";
import { type DashboardSection, navItems, sortedSections } from "./dashboard.sections.ts";

export const CSRF_COOKIE = "dashboard_csrf";

const CSP = STRICT_CSP;

export function dashboardPages(deps: Deps, sections: DashboardSection[]): Hono {
  const app = new Hono<DashEnv>().basePath("/dashboard");
  const nav = navItems(sections);
  const sessionGuard = guard(deps, { accept: ["cookie"] }) as unknown as MiddlewareHandler;
  const anonymousLimit = guard(deps, { accept: [] }) as unknown as MiddlewareHandler;
  const csrfOptions = {
    cookieName: CSRF_COOKIE,
    cookiePath: "/dashboard",
    // The session and its mode: a form shown in one mode (a review of a testnet stream, say) is
    // refused once the session switched (in any tab) instead of acting on the other chain.
    binding: (c: DashContext) => {
      const auth = c.get("auth");
      return auth?.sessionId ? `${auth.sessionId}:${auth.environment ?? ""}` : "";
    },
  };

  app.onError((err, c) => failure(c, deps, err));

  app.use("*", async (c, next) => {
    c.header("Cache-Control", "no-store");
    c.header("Content-Security-Policy", CSP);
    c.header("X-Frame-Options", "DENY");
    c.header("X-Content-Type-Options", "nosniff");
    c.header("Referrer-Policy", "same-origin");
    c.header("Vary", "HX-Request");
    c.set("nav", nav);
    await next();
  });

  app.use("*", async (c, next) => {
    if (getCookie(c, MERCHANT_COOKIE)) {
      try {
        await sessionGuard(c, () => Promise.resolve());
      } catch (e) {
        // An expired or revoked session is no session; a rate limit is still a refusal.
        if (!(e instanceof ApiError) || e.status === 429) throw e;
      }
    }
    await next();
  });

  app.use("*", csrfCookie(deps.config, csrfOptions));

  app.use("*", async (c, next) => {
    if (!PUBLIC_PATHS.has(c.req.path) && !c.get("auth")?.merchant) return toLogin(c);
    await next();
  });

  // A tab showing one mode while its session switched in another tab: htmx requests carry the
  // mode the page was rendered in (X-Dashboard-Mode); a stale tab is reloaded into the session's
  // mode, so its banner, switch and data agree again. Before, it swapped the other mode's
  // balances in under its banner, and its forms and switch were refused with nothing shown.
  app.use("*", async (c, next) => {
    const shown = c.req.header("x-dashboard-mode");
    const mode = c.get("auth")?.environment;
    if (isHtmx(c) && shown && mode && shown !== mode) {
      c.header("HX-Refresh", "true");
      return c.body(null, 204);
    }
    await next();
  });

  app.use(
    "*",
    csrfVerify(deps.config, {
      ...csrfOptions,
      onFail: (c) => refuse(c as DashContext, 403, "Request refused", M.dashCsrf),
    }),
  );

  entryRoutes(app, deps, anonymousLimit);
  liveRoutes(app, deps);
  for (const s of sortedSections(sections)) s.routes(app, deps);
  if (!sections.some((s) => s.path === "/dashboard")) {
    const first = sortedSections(sections)[0];
    app.get("/", (c) => c.redirect(first?.path ?? "/dashboard/keys", 302));
  }
  app.all("*", (c) => refuse(c, 404, "Not found", M.notFound));
  // The service's root (where `deno task start` points a new user) is the dashboard.
  return new Hono()
    .get("/", (c) => c.redirect("/dashboard", 302))
    .route("/", app as unknown as Hono);
}

function refuse(c: DashContext, status: ContentfulStatusCode, title: string, message: string) {
  if (isPartial(c)) {
    return fragment(c, <div class="notice error" role="alert" data-focus>{message}</div>, status);
  }
  return page(c, { title, status, body: <ErrorView title={title} message={message} /> });
}

/** The API's answer for the error (the same table and texts), as a page or a notice. */
function failure(c: DashContext, deps: Deps, err: Error) {
  const answer = answerFor(err);
  if (answer.unexpected) {
    deps.log.error("dashboard error", {
      requestId: c.get("requestId"),
      path: c.req.path,
      error: err,
    });
  }
  for (const [k, v] of Object.entries(answer.headers)) c.header(k, v);
  const title = answer.status === 429 ? "Slow down" : "Something went wrong";
  return refuse(c, answer.status, title, answer.message);
}
