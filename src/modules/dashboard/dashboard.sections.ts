/**
 * The dashboard's sections: each is a nav entry plus its routes. Adding one (Overview,
 * Payments, Payment links, later escrow, streams, ...) is its view in `views/dashboard/<name>.tsx`,
 * a `<name>.section.tsx` in its module's folder (src/modules/<name>/) that renders it with
 * `page()`, and one entry in SECTIONS. The section's type is in `section.ts`.
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
import type { NavItem } from "../../../views/dashboard/shell.tsx";
import type { DashboardSection } from "./section.ts";
import { keysSection } from "../keys/keys.section.tsx";
import { linksSection } from "../payments/payments.links.section.tsx";
import { overviewSection } from "../payments/payments.overview.section.tsx";
import { paymentsSection } from "../payments/payments.section.tsx";
import { webhooksSection } from "../webhooks/webhooks.section.tsx";
import { walletsSection } from "../wallets/wallets.section.tsx";
import { streamsSection } from "../streams/streams.section.tsx";
import { escrowSection } from "../escrow/escrow.section.tsx";
import { x402Section } from "../x402/x402.section.tsx";
import { payrollSection } from "../payroll/payroll.section.tsx";
import { agentsSection } from "../agents/agents.section.tsx";

export type { DashboardApp, DashboardSection } from "./section.ts";

export const SECTIONS: DashboardSection[] = [
  overviewSection,
  paymentsSection,
  linksSection,
  streamsSection,
  escrowSection,
  x402Section,
  payrollSection,
  agentsSection,
  keysSection,
  walletsSection,
  webhooksSection,
];

export function sortedSections(list: DashboardSection[] = SECTIONS): DashboardSection[] {
  return [...list].sort((a, b) => a.order - b.order);
}

export function navItems(list: DashboardSection[] = SECTIONS): NavItem[] {
  return sortedSections(list).map(({ id, label, path }) => ({ id, label, path }));
}
