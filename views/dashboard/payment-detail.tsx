/**
 * One payment: its status and timeline (polling while it is pending), what was asked and where
 * it pays, the checkout link with a copy button and a QR code, and the webhook deliveries of
 * this payment with their attempts and a replay button each.
 */
import { liveAttrs } from "./live.ts";
import { CopyField, Notice, type NoticeData, Time } from "./shell.tsx";
import type { DeliveryItem } from "./webhooks.tsx";
import { DeliveriesPanel } from "./payment-deliveries.tsx";
import {
  ChainLabel,
  detailPath,
  KIND_LABEL,
  type PaymentItem,
  StatusBadge,
} from "./payment-parts.tsx";

export interface PaymentDetailProps {
  csrf: string;
  p: PaymentItem;
  /** Fingerprint of the status panel, for its polling. */
  version: string;
  deliveries: DeliveryItem[];
  notice?: NoticeData;
}

export function qrPath(reference: string): string {
  return `/dashboard/links/${encodeURIComponent(reference)}/qr.svg`;
}

export function PaymentDetailView(props: PaymentDetailProps) {
  const p = props.p;
  return (
    <section aria-labelledby="payment-title" class="payment-detail" data-reference={p.reference}>
      <nav aria-label="Breadcrumb" class="crumbs">
        <a
          href="/dashboard/payments"
          hx-get="/dashboard/payments"
          hx-target="#main"
          hx-push-url="true"
        >
          Payments
        </a>
        <span aria-hidden="true">/</span>
        <span class="mono" aria-current="page">{p.reference}</span>
      </nav>
      <h1 id="payment-title">
        {p.amount} <span class="unit">{p.currency}</span>
      </h1>
      <Notice notice={props.notice} />
      <StatusPanel p={p} version={props.version} />

      <div class="panel">
        <h2>Details</h2>
        <dl class="facts">
          <dt>Reference</dt>
          <dd>
            <code>{p.reference}</code>
          </dd>
          <dt>Amount</dt>
          <dd>
            {p.amount} {p.currency}
          </dd>
          <dt>Chain</dt>
          <dd>
            <ChainLabel chain={p.chain} /> <span class="muted">(chain {p.chainId})</span>
          </dd>
          <dt>Type</dt>
          <dd>{KIND_LABEL[p.kind] ?? p.kind}</dd>
          <dt>Description</dt>
          <dd>{p.description || <span class="muted">—</span>}</dd>
          <dt>Created</dt>
          <dd>
            <Time iso={p.createdAt} />
          </dd>
          <dt>Expires</dt>
          <dd>
            <Time iso={p.expiresAt} />
          </dd>
          <dt>Webhook URL</dt>
          <dd class="url">{p.webhookUrl ?? <span class="muted">none</span>}</dd>
        </dl>
      </div>

      <div class="panel">
        <h2>Checkout link</h2>
        <CopyField id="checkout-url" label="Checkout link" value={p.checkoutUrl} hideLabel />
        <p>
          <a href={p.checkoutUrl} target="_blank" rel="noopener">Open the checkout page</a>
        </p>
        <details class="qr">
          <summary>QR code</summary>
          <img
            src={qrPath(p.reference)}
            alt={`QR code of the checkout link ${p.checkoutUrl}`}
            width="200"
            height="200"
            loading="lazy"
          />
        </details>
      </div>

      <DeliveriesPanel csrf={props.csrf} p={p} deliveries={props.deliveries} />
    </section>
  );
}

/** Status, timeline, payer and transaction: the part that changes; live while pending. */
export function StatusPanel(props: { p: PaymentItem; version: string }) {
  const p = props.p;
  const poll = p.status === "PENDING"
    ? {
      "hx-get": `${detailPath(p.reference)}/status?v=${encodeURIComponent(props.version)}`,
      ...liveAttrs({ events: "payment", pollSeconds: 4, reference: p.reference }),
      "hx-swap": "outerHTML",
      "hx-disinherit": "*",
    }
    : {};
  return (
    <div id="payment-status" class="panel" data-status={p.status} {...poll}>
      <div class="title-row">
        <h2>Status</h2>
        <StatusBadge status={p.status} late={p.settledAfterExpiry} />
      </div>
      {p.settledAfterExpiry && (
        <div class="notice info" role="note">
          The payment settled after it had expired. The money reached your wallet and the payment
          counts as successful; check whether the order was already cancelled.
        </div>
      )}
      <Timeline p={p} />
      <dl class="facts">
        <dt>Payer</dt>
        <dd>
          {p.payer ? <code data-testid="payer">{p.payer}</code> : <span class="muted">—</span>}
        </dd>
        <dt>Transaction</dt>
        <dd>
          {p.chainTxHash
            ? (
              <span class="tx">
                <code data-testid="tx-hash">{p.chainTxHash}</code>{" "}
                {p.explorerUrl && (
                  <a href={p.explorerUrl} target="_blank" rel="noopener">
                    View in the explorer
                  </a>
                )}
              </span>
            )
            : <span class="muted">—</span>}
        </dd>
      </dl>
    </div>
  );
}

interface Step {
  key: string;
  label: string;
  at: string | null;
  tone: "ok" | "warn" | "bad" | "neutral";
  note?: string;
}

function steps(p: PaymentItem): Step[] {
  const list: Step[] = [{
    key: "created",
    label: `${KIND_LABEL[p.kind] ?? "Payment"} created`,
    at: p.createdAt,
    tone: "neutral",
  }];
  if (p.submittedTxHash && p.status !== "SUCCESS") {
    list.push({
      key: "submitted",
      label: "The payer sent a transaction",
      at: null,
      tone: "neutral",
      note: p.submittedTxHash,
    });
  }
  if (p.status === "SUCCESS" && p.settledAfterExpiry) {
    list.push({ key: "expired", label: "Expired", at: p.expiresAt, tone: "neutral" });
    list.push({ key: "settled", label: "Settled after expiry", at: p.settledAt, tone: "warn" });
  } else if (p.status === "SUCCESS") {
    list.push({ key: "settled", label: "Settled", at: p.settledAt, tone: "ok" });
  } else if (p.status === "EXPIRED") {
    list.push({ key: "expired", label: "Expired unpaid", at: p.expiresAt, tone: "neutral" });
  } else if (p.status === "FAILED") {
    list.push({
      key: "failed",
      label: "Failed",
      at: p.updatedAt,
      tone: "bad",
      note: p.failureReason ?? undefined,
    });
  } else {
    list.push({
      key: "waiting",
      label: "Waiting for payment until",
      at: p.expiresAt,
      tone: "warn",
      // A reported transaction that reverted (the payment stays open).
      note: p.failureReason ?? undefined,
    });
  }
  return list;
}

function Timeline(props: { p: PaymentItem }) {
  return (
    <ol class="timeline" aria-label="Status timeline">
      {steps(props.p).map((s) => (
        <li class={`step ${s.tone}`} data-step={s.key}>
          <span class="dot" aria-hidden="true"></span>
          <span class="what">{s.label}</span> {s.at && <Time iso={s.at} />}
          {s.note && <div class="muted small mono clip">{s.note}</div>}
        </li>
      ))}
    </ol>
  );
}
