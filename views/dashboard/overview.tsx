/**
 * Overview, the landing page: the profile's totals, a server-rendered SVG chart of daily
 * settled volume over the last 30 days, and the newest payments. The totals, chart and list
 * form one region refreshed when the event stream announces a payment change (polled only when the
 * stream is unavailable); the server answers 204 while nothing changed, so nothing is swapped
 * (and focus stays put) until a payment moves.
 */
import { EmptyState } from "./shell.tsx";
import { liveAttrs } from "./live.ts";
import { type PaymentItem, PaymentRow, PaymentsHead } from "./payment-parts.tsx";

export interface OverviewStats {
  totalPayments: number;
  successfulPayments: number;
  successRate: number;
  /** Display volume, exact, e.g. "1,234.50" or "1.234567". */
  volume: string;
  /** The same as a plain decimal string, e.g. "1234.5". */
  volumeValue: string;
}

export interface ChartDay {
  /** YYYY-MM-DD (UTC). */
  day: string;
  volume: string;
  volumeValue: string;
  count: number;
  /** Bar height in the chart's units (0 for a day without volume). */
  height: number;
}

export interface VolumeChartData {
  days: ChartDay[];
  total: string;
  totalValue: string;
  count: number;
  max: string;
  peak: ChartDay | null;
}

export interface LiveData {
  version: string;
  stats: OverviewStats;
  chart: VolumeChartData;
  recent: PaymentItem[];
}

export interface OverviewViewProps {
  live: LiveData;
  hasWallet: boolean;
}

export const LIVE_PATH = "/dashboard/overview/live";
/** How often the region asks whether anything changed when its event stream is unavailable. */
export const POLL_SECONDS = 4;

export function OverviewView(props: OverviewViewProps) {
  return (
    <section aria-labelledby="overview-title">
      <div class="title-row">
        <h1 id="overview-title">Overview</h1>
        <a
          class="button primary"
          href="/dashboard/links"
          hx-get="/dashboard/links"
          hx-target="#main"
          hx-push-url="true"
        >
          New payment link
        </a>
      </div>
      {!props.hasWallet && (
        <div class="notice info" role="status">
          Payments need a payout wallet. <a href="/dashboard/wallet">Set one up</a>.
        </div>
      )}
      <LiveRegion live={props.live} />
    </section>
  );
}

/** The part that updates itself. */
export function LiveRegion(props: { live: LiveData }) {
  const l = props.live;
  return (
    <div
      id="overview-live"
      class="live"
      data-version={l.version}
      hx-get={`${LIVE_PATH}?v=${encodeURIComponent(l.version)}`}
      {...liveAttrs({ events: "payment", pollSeconds: POLL_SECONDS })}
      hx-swap="outerHTML"
      hx-disinherit="*"
    >
      <Stats stats={l.stats} />
      <div class="panel">
        <h2 id="chart-heading">Settled volume, last 30 days</h2>
        <VolumeChart chart={l.chart} />
      </div>
      <div class="panel">
        <div class="title-row">
          <h2 id="recent-title">Recent payments</h2>
          {l.recent.length > 0 && (
            <a
              href="/dashboard/payments"
              hx-get="/dashboard/payments"
              hx-target="#main"
              hx-push-url="true"
            >
              All payments
            </a>
          )}
        </div>
        <RecentPayments recent={l.recent} />
        <p class="muted small">
          <span class="live-dot" aria-hidden="true"></span> Updates by itself as payments change.
        </p>
      </div>
    </div>
  );
}

function Stats(props: { stats: OverviewStats }) {
  const s = props.stats;
  return (
    <div class="stats-block">
      <dl class="stats" aria-describedby="stats-note">
        <div class="stat">
          <dt>Volume</dt>
          <dd data-stat="totalVolume" data-value={s.volumeValue}>
            {s.volume} <span class="unit">USDC</span>
          </dd>
        </div>
        <div class="stat">
          <dt>Payments</dt>
          <dd data-stat="totalPayments" data-value={String(s.totalPayments)}>
            {s.totalPayments}
            <span class="sub">{s.successfulPayments} successful</span>
          </dd>
        </div>
        <div class="stat">
          <dt>Success rate</dt>
          <dd data-stat="successRate" data-value={String(s.successRate)}>
            {s.successRate}
            <span class="unit">%</span>
          </dd>
        </div>
      </dl>
      <p id="stats-note" class="muted small">
        Over your 50 most recent payments in this mode (its chain), as in the API's merchant
        profile.
      </p>
    </div>
  );
}

/** Chart geometry (viewBox units). */
export const CHART = { width: 300, height: 120, slot: 10, bar: 7 };

export function VolumeChart(props: { chart: VolumeChartData }) {
  const c = props.chart;
  const first = c.days[0]?.day ?? "";
  const last = c.days.at(-1)?.day ?? "";
  const summary = c.count === 0
    ? `No settled payments from ${first} to ${last}: every day is zero.`
    : `${c.total} USDC settled in ${c.count} ${c.count === 1 ? "payment" : "payments"} ` +
      `from ${first} to ${last}; the highest day was ${c.peak?.day} with ${c.peak?.volume} USDC. ` +
      "Days without payments are zero.";
  return (
    <figure class="chart" data-total={c.totalValue}>
      <p class="chart-max muted small" aria-hidden="true">
        {c.count === 0 ? "0 USDC" : `${c.max} USDC`}
      </p>
      <svg
        class="volume-chart"
        viewBox={`0 0 ${CHART.width} ${CHART.height}`}
        preserveAspectRatio="none"
        role="img"
        aria-labelledby="chart-title chart-desc"
        focusable="false"
      >
        <title id="chart-title">Daily settled volume in USDC, {first} to {last} (UTC)</title>
        <desc id="chart-desc">{summary}</desc>
        <line
          class="gridline"
          x1="0"
          x2={String(CHART.width)}
          y1="0.5"
          y2="0.5"
          vector-effect="non-scaling-stroke"
        />
        {c.days.map((d, i) => {
          const x = i * CHART.slot + (CHART.slot - CHART.bar) / 2;
          const h = d.height > 0 ? d.height : 1;
          return (
            <rect
              class={d.height > 0 ? "bar" : "bar-zero"}
              x={String(x)}
              y={String(CHART.height - h)}
              width={String(CHART.bar)}
              height={String(h)}
              data-day={d.day}
              data-volume={d.volumeValue}
            >
              <title>
                {d.day}: {d.volume} USDC ({d.count} {d.count === 1 ? "payment" : "payments"})
              </title>
            </rect>
          );
        })}
      </svg>
      <div class="chart-axis muted small" aria-hidden="true">
        <span>{first}</span>
        <span>{last}</span>
      </div>
      <figcaption>
        {c.count === 0
          ? <span class="muted">No settled payments in the last 30 days.</span>
          : (
            <span>
              <strong>{c.total} USDC</strong> settled in the last 30 days.
            </span>
          )}
      </figcaption>
      <details class="chart-data">
        <summary>Show the numbers</summary>
        <div class="table-wrap">
          <table>
            <caption class="visually-hidden">Settled volume per day (UTC)</caption>
            <thead>
              <tr>
                <th scope="col">Day</th>
                <th scope="col" class="num">Volume (USDC)</th>
                <th scope="col" class="num">Payments</th>
              </tr>
            </thead>
            <tbody>
              {[...c.days].reverse().map((d) => (
                <tr class={d.count === 0 ? "muted" : undefined}>
                  <th scope="row">{d.day}</th>
                  <td class="num">{d.volume}</td>
                  <td class="num">{d.count}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </details>
    </figure>
  );
}

function RecentPayments(props: { recent: PaymentItem[] }) {
  if (props.recent.length === 0) {
    return (
      <EmptyState title="No payments yet.">
        <p>
          Create a <a href="/dashboard/links">payment link</a>{" "}
          and share it; payments appear here as they happen.
        </p>
      </EmptyState>
    );
  }
  return (
    <div class="table-wrap">
      <table class="cards payments" id="recent-payments">
        <caption class="visually-hidden">The newest payments</caption>
        <PaymentsHead />
        <tbody>
          {props.recent.map((p) => <PaymentRow key={p.reference} p={p} />)}
        </tbody>
      </table>
    </div>
  );
}
