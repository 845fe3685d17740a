/**
 * Overview (the landing page /dashboard): the profile's stats, daily settled volume over 30
 * days as an SVG chart, and the newest payments, in a region that polls
 * `/dashboard/overview/live?v=<version>` and gets 204 until something it shows changed.
 */
import type { Deps } from "../../deps.ts";
import type { ProfileName } from "../../chain/profiles.ts";
import { displayUsdc, formatUsdc } from "../../money.ts";
import * as payments from "./payments.service.ts";
import { computeStats } from "../merchants/merchants.stats.ts";
import type { PaymentRow } from "./payments.rules.ts";
import {
  CHART,
  type ChartDay,
  type LiveData,
  LiveRegion,
  OverviewView,
  type VolumeChartData,
} from "../../../views/dashboard/overview.tsx";
import {
  fragment,
  isPartial,
  type Merchant,
  merchantOf,
  page,
  sessionOf,
} from "../dashboard/dashboard.http.tsx";
import { fingerprint, paymentItem } from "./payments.items.ts";
import type { DashboardSection } from "../dashboard/section.ts";

/** The profile's stats are over this many payments (spec), the list shows the first few. */
const STATS_OVER = 50;
const RECENT = 10;

export const overviewSection: DashboardSection = {
  id: "overview",
  label: "Overview",
  path: "/dashboard",
  order: 10,
  routes(app, deps) {
    app.get("/", async (c) => {
      const m = merchantOf(c);
      return page(c, {
        title: "Overview",
        section: "overview",
        body: (
          <OverviewView live={await liveData(deps, m, modeOf(c))} hasWallet={!!m.walletAddress} />
        ),
      });
    });

    app.get("/overview/live", async (c) => {
      if (!isPartial(c)) return c.redirect("/dashboard", 302);
      const live = await liveData(deps, merchantOf(c), modeOf(c));
      if (c.req.query("v") === live.version) return c.body(null, 204);
      return fragment(c, <LiveRegion live={live} />);
    });
  },
};

/** The chain of the session's mode: the overview, like the API's profile, shows that one only. */
function modeOf(c: Parameters<typeof merchantOf>[0]): ProfileName {
  return sessionOf(c)?.profile ?? "production";
}

async function liveData(deps: Deps, m: Merchant, profile: ProfileName): Promise<LiveData> {
  // The rows the API's profile computes its stats from (merchants.service.profile).
  const [rows, days] = await Promise.all([
    payments.recentForMerchant(deps, m.id, STATS_OVER, [profile]),
    payments.dailyVolume(deps, m.id, 30, [profile]),
  ]);
  const data = {
    stats: stats(rows),
    chart: chart(days),
    recent: rows.slice(0, RECENT).map((p) => paymentItem(deps, p)),
  };
  return { version: fingerprint(data), ...data };
}

/** computeStats (the profile's numbers) plus the volume as an exact string for display. */
function stats(rows: PaymentRow[]) {
  const s = computeStats(rows);
  const volume = rows.filter((p) => p.status === "SUCCESS").reduce((a, p) => a + p.amount, 0n);
  return {
    totalPayments: s.totalPayments,
    successfulPayments: s.successfulPayments,
    successRate: s.successRate,
    // Exact, as the chart and the lists show it (the API's `totalVolume` rounds to 4 places:
    // the headline read 1.2346 beside the chart's 1.234567 for one payment).
    volume: displayUsdc(volume),
    volumeValue: formatUsdc(volume),
  };
}

/** Bar heights in proportion to the best day (bigint arithmetic down to 1/10000 of the axis). */
export function chart(days: { day: string; volume: bigint; count: number }[]): VolumeChartData {
  const max = days.reduce((a, d) => (d.volume > a ? d.volume : a), 0n);
  const total = days.reduce((a, d) => a + d.volume, 0n);
  const list: ChartDay[] = days.map((d) => ({
    day: d.day,
    volume: displayUsdc(d.volume),
    volumeValue: formatUsdc(d.volume),
    count: d.count,
    height: max === 0n || d.volume === 0n
      ? 0
      : Math.max(2, Math.round(Number((d.volume * 10_000n) / max) * (CHART.height - 2)) / 10_000),
  }));
  const peak = max === 0n ? null : list[days.findIndex((d) => d.volume === max)];
  return {
    days: list,
    total: displayUsdc(total),
    totalValue: formatUsdc(total),
    count: days.reduce((a, d) => a + d.count, 0),
    max: displayUsdc(max),
    peak,
  };
}
