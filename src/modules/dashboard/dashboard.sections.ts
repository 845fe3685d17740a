/**
 * The dashboard's sections: each is a nav entry plus its routes. Adding one is its view in
 * `views/dashboard/<name>.tsx`, a `<name>.section.tsx` in its module's folder
 * (src/modules/<name>/) that renders it with `page()`, and the section in its module's
 * `sections` (src/modules/index.ts). The section's type is in `section.ts`.
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
 * Nav orders are unique: two sections with one order are refused at start.
 */
import type { NavItem } from "../../../views/dashboard/shell.tsx";
import type { DashboardSection } from "./section.ts";

export type { DashboardApp, DashboardSection } from "./section.ts";

export function sortedSections(list: DashboardSection[]): DashboardSection[] {
  const sorted = [...list].sort((a, b) => a.order - b.order);
  sorted.forEach((s, i) => {
    if (i > 0 && sorted[i - 1].order === s.order) {
      throw new Error(
        `dashboard sections ${sorted[i - 1].id} and ${s.id} share nav order ${s.order}`,
      );
    }
  });
  return sorted;
}

export function navItems(list: DashboardSection[]): NavItem[] {
  return sortedSections(list).map(({ id, label, path }) => ({ id, label, path }));
}
