/**
 * Payments: the table (status and chain filters, reference search, cursor pages appended with
 * "Load more"), and one payment's page with its timeline, link, QR code and webhook deliveries
 * (replayed in place). Another merchant's or an unknown reference is a 404 page.
 *
 * One URL serves the page and its fragments: htmx names the element it swaps in `HX-Target`,
 * so `payments-results` gets the table, `load-more` the next rows, and the detail page's
 * `payment-status` its status panel (204 while unchanged).
 */
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { z } from "zod";
import type { Deps } from "../../deps.ts";
import { M } from "../../http/messages.ts";
import type { ProfileName } from "../../chain/profiles.ts";
import * as payments from "./payments.service.ts";
import { chainCode, type PaymentStatus } from "./payments.rules.ts";
import { historyQuery } from "./payments.schemas.ts";
import * as webhooks from "../webhooks/webhooks.service.ts";
import {
  MoreRows,
  PAYMENTS_PATH,
  PaymentsResults,
  PaymentsView,
  type PaymentsViewProps,
} from "../../../views/dashboard/payments.tsx";
import { PaymentDetailView, StatusPanel } from "../../../views/dashboard/payment-detail.tsx";
import { DeliveriesPanel } from "../../../views/dashboard/payment-deliveries.tsx";
import type { PaymentItem } from "../../../views/dashboard/payment-parts.tsx";
import { ErrorView, type NoticeData } from "../../../views/dashboard/shell.tsx";
import {
  attempt,
  type DashContext,
  dashProfileOf,
  fragment,
  isPartial,
  merchantOf,
  page,
} from "../dashboard/dashboard.http.tsx";
import { fingerprint, paymentItem } from "./payments.items.ts";
import type { DashboardSection } from "../dashboard/section.ts";

const PAGE_SIZE = 25;

const dashboardFilter = historyQuery.extend({
  chain: z.string().optional(),
  reference: z.string().transform((r) => r.trim().slice(0, 100)).optional(),
});

interface Query {
  status?: PaymentStatus;
  chain?: string;
  reference?: string;
  limit: number;
  cursor?: string;
}

export const paymentsSection: DashboardSection = {
  id: "payments",
  label: "Payments",
  path: PAYMENTS_PATH,
  order: 20,
  routes(app, deps) {
    app.get("/payments", (c) => list(c, deps));

    app.get("/payments/:reference", async (c) => {
      const p = await find(deps, c);
      if (!p) return notFound(c);
      return await detail(c, deps, p);
    });

    app.get("/payments/:reference/status", async (c) => {
      const p = await find(deps, c);
      if (!p) return notFound(c);
      if (!isPartial(c)) return c.redirect(`${PAYMENTS_PATH}/${p.reference}`, 302);
      const version = statusVersion(p);
      if (c.req.query("v") === version) return c.body(null, 204);
      // Settling creates the payment.settled delivery: the deliveries panel follows along.
      const deliveries = await deliveriesOf(deps, c, p);
      return fragment(
        c,
        <>
          <StatusPanel p={p} version={version} />
          <DeliveriesPanel csrf={c.get("csrfToken")} p={p} deliveries={deliveries} oob />
        </>,
      );
    });

    app.post("/payments/:reference/deliveries/:id/replay", async (c) => {
      const p = await find(deps, c);
      if (!p) return notFound(c);
      const id = c.req.param("id");
      const ours = (await deliveriesOf(deps, c, p)).some((d) => d.id === id);
      const r = ours ? await attempt(() => webhooks.replay(deps, merchantOf(c).id, id)) : undefined;
      const notice: NoticeData = !r
        ? { kind: "error", text: M.deliveryNotFound }
        : !r.ok
        ? { kind: "error", text: r.error.message }
        : {
          kind: r.value.status === "delivered" ? "ok" : "error",
          text: `${M.dashReplayed} ${id}: ${r.value.status}${
            r.value.lastStatusCode ? ` (HTTP ${r.value.lastStatusCode})` : ""
          }.`,
        };
      const status = !r ? 404 : r.ok ? 200 : r.error.status;
      if (isPartial(c)) {
        const deliveries = await deliveriesOf(deps, c, p);
        return fragment(
          c,
          <DeliveriesPanel
            csrf={c.get("csrfToken")}
            p={p}
            deliveries={deliveries}
            notice={notice}
          />,
          status,
        );
      }
      return await detail(c, deps, p, notice, status);
    });
  },
};

async function list(c: DashContext, deps: Deps) {
  const m = merchantOf(c);
  // The session's mode: its one chain (test → testnet, live → production), like a key's prefix.
  const mode = dashProfileOf(c);
  const chains = deps.chain.profiles().filter((p) => p === mode).map(chainCode);
  const parsed = parseQuery(c.req.query(), chains);
  const filter = { status: parsed.q.status, chain: parsed.q.chain, reference: parsed.q.reference };
  const props: PaymentsViewProps = { filter, chains, rows: [], nextUrl: null };
  let status: ContentfulStatusCode = 200;
  if (parsed.error) {
    props.notice = { kind: "error", text: parsed.error };
    status = 400;
  } else {
    const q = parsed.q;
    const profiles = q.chain ? [profileOf(deps, q.chain)] : [mode];
    const r = await attempt(() =>
      payments.history(deps, m.id, profiles, {
        status: q.status,
        reference: q.reference,
        limit: q.limit,
        cursor: q.cursor,
      })
    );
    if (!r.ok) {
      props.notice = { kind: "error", text: r.error.message };
      status = r.error.status;
    } else {
      props.rows = r.value.rows.map((p) => paymentItem(deps, p));
      props.nextUrl = r.value.nextCursor ? listUrl({ ...q, cursor: r.value.nextCursor }) : null;
      if (q.cursor) props.firstPageUrl = listUrl({ ...q, cursor: undefined });
    }
  }
  const target = isPartial(c) ? c.req.header("hx-target") : undefined;
  if (target === "load-more" && status === 200) {
    return fragment(c, <MoreRows rows={props.rows} nextUrl={props.nextUrl} appended />);
  }
  if (target === "payments-results" || target === "load-more") {
    return fragment(c, <PaymentsResults {...props} />, status);
  }
  return page(c, {
    title: "Payments",
    section: "payments",
    status,
    body: <PaymentsView {...props} />,
  });
}

/**
 * The query string, checked with the API's history filter plus chain and reference search: an
 * unknown status or chain is refused, not ignored. The form sends empty fields for "all".
 */
function parseQuery(
  raw: Record<string, string>,
  chains: string[],
): { q: Query; error?: string } {
  const given = Object.fromEntries(Object.entries(raw).filter(([, v]) => v !== ""));
  const r = dashboardFilter.safeParse(given);
  if (!r.success) return { q: { limit: PAGE_SIZE }, error: M.dashPaymentsFilter };
  const { chain, reference, ...rest } = r.data;
  const q: Query = { ...rest, limit: rest.limit ?? PAGE_SIZE };
  if (chain && !chains.includes(chain)) return { q, error: M.dashPaymentsFilter };
  if (chain) q.chain = chain;
  if (reference) q.reference = reference;
  return { q };
}

function listUrl(q: Query): string {
  const params = new URLSearchParams();
  if (q.status) params.set("status", q.status);
  if (q.chain) params.set("chain", q.chain);
  if (q.reference) params.set("reference", q.reference);
  if (q.limit !== PAGE_SIZE) params.set("limit", String(q.limit));
  if (q.cursor) params.set("cursor", q.cursor);
  const s = params.toString();
  return s ? `${PAYMENTS_PATH}?${s}` : PAYMENTS_PATH;
}

function profileOf(deps: Deps, code: string): ProfileName {
  return deps.chain.profiles().find((p) => chainCode(p) === code)!;
}

async function find(deps: Deps, c: DashContext): Promise<PaymentItem | null> {
  const p = await payments.merchantPayment(deps, merchantOf(c).id, c.req.param("reference") ?? "", [
    dashProfileOf(c),
  ]);
  return p ? paymentItem(deps, p) : null;
}

function deliveriesOf(deps: Deps, c: DashContext, p: PaymentItem) {
  return webhooks.listDeliveries(deps, merchantOf(c).id, { reference: p.reference, limit: 100 });
}

/** What the status panel shows. */
function statusVersion(p: PaymentItem): string {
  const { status, settledAt, settledAfterExpiry, payer, chainTxHash, submittedTxHash } = p;
  return fingerprint({
    status,
    settledAt,
    settledAfterExpiry,
    payer,
    chainTxHash,
    submittedTxHash,
  });
}

async function detail(
  c: DashContext,
  deps: Deps,
  p: PaymentItem,
  notice?: NoticeData,
  status?: ContentfulStatusCode,
) {
  return page(c, {
    title: `Payment ${p.reference}`,
    section: "payments",
    status,
    body: (
      <PaymentDetailView
        csrf={c.get("csrfToken")}
        p={p}
        version={statusVersion(p)}
        deliveries={await deliveriesOf(deps, c, p)}
        notice={notice}
      />
    ),
  });
}

function notFound(c: DashContext) {
  return page(c, {
    title: "Payment not found",
    section: "payments",
    status: 404,
    body: <ErrorView title="Payment not found" message={M.paymentNotFound} back={PAYMENTS_PATH} />,
  });
}
