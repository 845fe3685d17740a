/**
 * What a module declares: its HTTP API, pages, dashboard sections, jobs and chain log handlers. A file of its own so
 * a module's entry (mail.module.ts) and the list in index.ts do not import each other.
 */
import type { Hono } from "hono";
import type { Deps } from "../deps.ts";
import type { JobDefinition } from "../queue/registry.ts";
import type { LogHandler } from "../chain/index.ts";
import type { RouteDoc } from "../http/contract.ts";
import type { BodyRule } from "../http/limits.ts";
import type { DashboardSection } from "./dashboard/section.ts";
import type { ApiRoute } from "../http/route.ts";

export interface AppModule {
  name: string;
  // deno-lint-ignore no-explicit-any
  api?: (deps: Deps) => Hono<any>;
  // deno-lint-ignore no-explicit-any
  pages?: (deps: Deps) => Hono<any>;
  /**
   * The module's `/api/` routes, each declared once (src/http/route.ts): mounted, documented
   * and fuzzed from this table.
   */
  table?: ApiRoute[];
  /**
   * Routes `api` mounts by hand, documented apart; a test checks both agree. Only the docs
   * module's own two (`/api/openapi.json`, `/api/docs`: no guard, so no rate limit) are left:
   * every other `/api/` route is in a `table`.
   */
  routes?: RouteDoc[];
  /** Its dashboard sections (`<name>.section.tsx`); the dashboard mounts every module's. */
  sections?: DashboardSection[];
  // deno-lint-ignore no-explicit-any
  jobs?: JobDefinition<any, Deps>[];
  /** Handlers for our contracts' logs, run by the chain module's watcher. */
  logHandlers?: (deps: Deps) => LogHandler[];
  /**
   * Runs once the queue and workers are up, in processes that run workers (a restart's resume:
   * re-enqueue work a killed process left half done). Failures are logged, not fatal.
   */
  onStart?: (deps: Deps) => Promise<void>;
  /** Routes that take a larger body or another media type than JSON (src/http/limits.ts). */
  bodyRules?: BodyRule[];
}
