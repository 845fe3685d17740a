/**
 * The dashboard's sections: each is a nav entry plus its routes. Adding one (Overview,
 * Payments, Payment links, later escrow, streams, ...) is its view in `views/dashboard/<name>.tsx`,
 * a `<name>.section.tsx` here that renders it with `page()`, and one entry in SECTIONS.
 *
 *   export const paymentsSection: DashboardSection = {
 *     id: "payments", label: "Payments", path: "/dashboard/payments", order: 20,
 *     routes(app, deps) {
 *       app.get("/payments", async (c) =>
 *         page(c, { title: "Payments", section: "payments", body: <PaymentsView … /> }));
 *     },
 *   };
 *
 * Route paths are relative to /dashboard. Every route already runs behind the session check
 * (no session → 302 to the login page) and CSRF verification of unsafe methods, and sees the
 * page token as `c.get("csrfToken")` for its forms. A section whose path is "/dashboard"
 * (Overview) becomes the landing page; until one exists, /dashboard opens the first section.
 */
import type { Hono } from "hono";
import type { BlankSchema } from "hono/types";
import type { Deps } from "../../deps.ts";
import type { NavItem } from "../../../views/dashboard/shell.tsx";
import type { DashEnv } from "./dashboard.http.tsx";
import { keysSection } from "./keys.section.tsx";
import { linksSection } from "./links.section.tsx";
import { overviewSection } from "./overview.section.tsx";
import { paymentsSection } from "./payments.section.tsx";
import { walletSection } from "./wallet.section.tsx";
import { webhooksSection } from "./webhooks.section.tsx";

export type DashboardApp = Hono<DashEnv, BlankSchema, "/dashboard">;

export interface DashboardSection {
  /** Stable id; `page({ section })` marks the nav entry current with it. */
  id: string;
  /** The nav text. */
  label: string;
  /** Where the nav entry links (absolute, e.g. "/dashboard/keys"). */
  path: string;
  /** Nav position: Overview 10, Payments 20, Payment links 30, API keys 40, Wallet 50, Webhooks 60. */
  order: number;
  /** Registers the section's routes (paths relative to /dashboard). */
  routes(app: DashboardApp, deps: Deps): void;
}

export const SECTIONS: DashboardSection[] = [
  overviewSection,
  paymentsSection,
  linksSection,
  keysSection,
  walletSection,
  webhooksSection,
];

export function sortedSections(list: DashboardSection[] = SECTIONS): DashboardSection[] {
  return [...list].sort((a, b) => a.order - b.order);
}

export function navItems(list: DashboardSection[] = SECTIONS): NavItem[] {
  return sortedSections(list).map(({ id, label, path }) => ({ id, label, path }));
}
