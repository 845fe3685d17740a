/**
 * createApp(deps): the HTTP application. Middleware, the error contract, health, and every
 * module's API and pages mounted from the module list.
 */
import { Hono } from "hono";
import { requestId } from "hono/request-id";
import { HTTPException } from "hono/http-exception";
import type { Deps } from "./deps.ts";
import { answerFor } from "./http/error-map.ts";
import { M } from "./http/messages.ts";
import { assetUrl } from "./http/assets.ts";
import { errorPageHtml } from "../views/errors/page.tsx";
import { accessLog } from "./http/logger.ts";
import { requestLimits } from "./http/limits.ts";
import { healthRoutes } from "./http/health.ts";
import { authorized as metricsAuthorized, createMetrics } from "./http/metrics.ts";
import type { ReadinessCheck } from "./readiness.ts";
import type { AppModule } from "./modules/index.ts";
import { mountRoutes } from "./http/route.ts";
import { PAGE_CSP } from "./http/csp.ts";

export type AppEnv = { Variables: { requestId: string } };

export interface AppOptions {
  modules: AppModule[];
  readinessChecks: ReadinessCheck[];
  /** Only /healthz, /readyz and /metrics (the worker role's listener). */
  healthOnly?: boolean;
}

export function createApp(deps: Deps, opts: AppOptions): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const log = deps.log.child({ component: "http" });

  app.use(requestId({
    headerName: "X-Request-Id",
    // A caller's plain X-Request-Id (hono checks length and characters) is kept for tracing.
    generator: () => crypto.randomUUID(),
  }));
  app.use(accessLog(log));
  const metrics = createMetrics(deps);
  app.use(metrics.middleware);
  // Size, time, media type and text rules for every request, before any route reads it.
  app.use(requestLimits(
    deps.config,
    opts.modules.flatMap((m) => m.bodyRules ?? []),
    opts.modules.flatMap((m) => (m.table ?? []).filter((r) => r.auth.bare).map((r) => r.path)),
  ));

  // Every HTML page (checkout, bridge, the payer's gateway page, the explorer, error pages) gets
  // the strict policy and no framing unless it set its own (the dashboard and API docs do): a
  // payment page framed by another site could have its buttons clicked under a decoy (an outside
  // audit, 2026-12-01). Our pages load code and styles from our origin only.
  app.use(async (c, next) => {
    await next();
    const type = c.res.headers.get("content-type") ?? "";
    if (!type.startsWith("text/html") || c.res.headers.has("content-security-policy")) return;
    c.res.headers.set("Content-Security-Policy", PAGE_CSP);
    c.res.headers.set("X-Frame-Options", "DENY");
    c.res.headers.set("X-Content-Type-Options", "nosniff");
    if (!c.res.headers.has("referrer-policy")) c.res.headers.set("Referrer-Policy", "same-origin");
  });

  // API answers carry keys, secrets and balances (the dashboard endpoint echoes the API key, the
  // webhook-secret endpoint the signing secret): no cache, shared or private, may keep them
  // unless a route says otherwise (an outside audit, 2026-12-01). Errors answered by onError
  // pass through here too.
  app.use("/api/*", async (c, next) => {
    await next();
    if (c.res.headers.has("cache-control")) return;
    try {
      c.res.headers.set("Cache-Control", "no-store");
    } catch {
      // A response with immutable headers (a fetched one passed through): copied once.
      c.res = new Response(c.res.body, c.res);
      c.res.headers.set("Cache-Control", "no-store");
    }
  });

  app.onError((err, c) => {
    const answer = answerFor(err);
    if (answer.backstop) {
      log.warn("request cut off by a database backstop", {
        requestId: c.get("requestId"),
        path: c.req.path,
        error: err,
      });
    }
    if (answer.unavailable) {
      log.warn("request failed: the database cannot be reached", {
        requestId: c.get("requestId"),
        path: c.req.path,
        error: err,
      });
    }
    if (!answer.unexpected) {
      for (const [k, v] of Object.entries(answer.headers)) c.header(k, v);
      // A page a browser navigated to that says "come back later" (the checkout page over its
      // rate limit, the database away) is a page, not JSON shown as text (an outside audit);
      // scripts' fetches and htmx swaps, and every other refusal, stay JSON.
      if (
        (answer.status === 429 || answer.status === 503) && !isApiPath(c.req.path) &&
        wantsHtml(c.req.header("accept")) && !c.req.header("hx-request")
      ) {
        const title = answer.status === 429 ? "Too many requests" : "Try again shortly";
        return c.html(
          errorPageHtml(title, answer.message, assetUrl("dashboard.css")),
          answer.status,
        );
      }
      return c.json(answer.body, answer.status);
    }
    if (err instanceof HTTPException) {
      const status = err.status;
      const message = status === 400 ? M.malformedJson : err.message || M.internal;
      return c.json({ success: false, error: message }, status);
    }
    if (err instanceof SyntaxError) {
      return c.json({ success: false, error: M.malformedJson, hint: M.malformedJsonHint }, 400);
    }
    log.error("unhandled error", {
      requestId: c.get("requestId"),
      path: c.req.path,
      error: err,
    });
    if (!isApiPath(c.req.path) && wantsHtml(c.req.header("accept"))) {
      return c.html(
        errorPageHtml("Something went wrong", answer.message, assetUrl("dashboard.css")),
        500,
      );
    }
    return c.json(answer.body, answer.status);
  });

  app.notFound((c) => {
    if (isApiPath(c.req.path)) {
      return c.json({ success: false, error: M.routeNotFound }, 404);
    }
    return c.html(errorPageHtml("Not found", M.notFound, assetUrl("dashboard.css")), 404);
  });

  app.route(
    "/",
    healthRoutes(opts.readinessChecks, { detailed: (c) => metricsAuthorized(c, deps.config) }),
  );
  app.route("/", metrics.routes);
  if (opts.healthOnly) return app;
  for (const mod of opts.modules) {
    if (mod.table) app.route("/", mountRoutes(deps, mod.table));
    if (mod.api) app.route("/", mod.api(deps));
    if (mod.pages) app.route("/", mod.pages(deps));
  }
  return app;
}

/** API paths answer with the spec's JSON errors; the rest are pages. */
function isApiPath(path: string): boolean {
  return path === "/api" || path.startsWith("/api/");
}

/** A browser navigation (a page wanted), not a script or a client asking for JSON. */
function wantsHtml(accept: string | undefined): boolean {
  return !!accept && accept.includes("text/html");
}
