/**
 * What a dashboard section is: a nav entry plus its routes. A file of its own so the sections,
 * which live in their modules' folders, the modules that declare them (module.ts) and the
 * dashboard that mounts them do not import each other.
 */
import type { Hono } from "hono";
import type { BlankSchema } from "hono/types";
import type { Deps } from "../../deps.ts";
import type { DashEnv } from "./dashboard.http.tsx";

export type DashboardApp = Hono<DashEnv, BlankSchema, "/dashboard">;

export interface DashboardSection {
  /** Stable id; `page({ section })` marks the nav entry current with it. */
  id: string;
  /** The nav text. */
  label: string;
  /** Where the nav entry links (absolute, e.g. "/dashboard/keys"). */
  path: string;
  /** Nav position: Overview 10, Payments 20, Payment links 30, Streams 35, API keys 40, Wallets 50, Webhooks 60. */
  order: number;
  /** Registers the section's routes (paths relative to /dashboard). */
  routes(app: DashboardApp, deps: Deps): void;
}
