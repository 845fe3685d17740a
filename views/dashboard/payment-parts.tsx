/**
 * Pieces the payment pages share (Overview, Payments, Payment links, the detail page): the
 * payment as the views see it, its status badge, its chain, and the payments table.
 */
import type { PaymentStatus } from "../../src/modules/payments/payments.rules.ts";
import { Badge, Time } from "./shell.tsx";

export interface PaymentItem {
  reference: string;
  kind: "link" | "session";
  /** Display amount, e.g. "1,234.50". */
  amount: string;
  currency: string;
  status: PaymentStatus;
  /** The record's chain: Settle or Settle_Testnet. */
  chain: string;
  chainId: number;
  description: string | null;
  createdAt: string;
  expiresAt: string;
  settledAt: string | null;
  settledAfterExpiry: boolean;
  updatedAt: string;
  payer: string | null;
  chainTxHash: string | null;
  submittedTxHash: string | null;
  failureReason: string | null;
  explorerUrl: string | null;
  checkoutUrl: string;
  webhookUrl: string | null;
}

export const STATUS_LABEL: Record<string, string> = {
  PENDING: "Pending",
  SUCCESS: "Success",
  FAILED: "Failed",
  EXPIRED: "Expired",
};

const STATUS_TONE: Record<string, "ok" | "warn" | "bad" | "neutral"> = {
  PENDING: "warn",
  SUCCESS: "ok",
  FAILED: "bad",
  EXPIRED: "neutral",
};

export const KIND_LABEL: Record<string, string> = {
  link: "Payment link",
  session: "Checkout session",
};

export function StatusBadge(props: { status: string; late?: boolean }) {
  return (
    <span class="status-badges">
      <Badge tone={STATUS_TONE[props.status] ?? "neutral"}>
        {STATUS_LABEL[props.status] ?? props.status}
      </Badge>
      {props.late && <Badge tone="warn">settled after expiry</Badge>}
    </span>
  );
}

export function ChainLabel(props: { chain: string }) {
  return <span class={props.chain === "Settle" ? "chain" : "chain test"}>{props.chain}</span>;
}

export function detailPath(reference: string): string {
  return `/dashboard/payments/${encodeURIComponent(reference)}`;
}

/** A link to the payment's detail page that htmx opens in place (the URL follows). */
export function PaymentLink(props: { reference: string }) {
  const href = detailPath(props.reference);
  return (
    <a
      href={href}
      hx-get={href}
      hx-target="#main"
      hx-swap="innerHTML"
      hx-push-url="true"
      class="mono"
    >
      {props.reference}
    </a>
  );
}

/** One payment as a table row (cards on a phone); `firstNew` marks where appended rows begin. */
/** The reference, amount and status cells every payment table starts with. */
export function PaymentCells(
  props: {
    p: Pick<
      PaymentItem,
      "reference" | "description" | "amount" | "currency" | "status" | "settledAfterExpiry"
    >;
  },
) {
  const p = props.p;
  return (
    <>
      <td data-label="Reference">
        <div>
          <PaymentLink reference={p.reference} />
          {p.description && <div class="muted small clip">{p.description}</div>}
        </div>
      </td>
      <td data-label="Amount" class="num">
        <span class="money">
          <span class="amount">{p.amount}</span> <span class="muted">{p.currency}</span>
        </span>
      </td>
      <td data-label="Status">
        <StatusBadge status={p.status} late={p.settledAfterExpiry} />
      </td>
    </>
  );
}

export function PaymentRow(props: { key?: string; p: PaymentItem; firstNew?: boolean }) {
  const p = props.p;
  return (
    <tr
      data-reference={p.reference}
      data-status={p.status}
      data-first-new={props.firstNew ? "" : undefined}
    >
      <PaymentCells p={p} />
      <td data-label="Chain">
        <ChainLabel chain={p.chain} />
      </td>
      <td data-label="Type">{KIND_LABEL[p.kind] ?? p.kind}</td>
      <td data-label="Created">
        <Time iso={p.createdAt} />
      </td>
    </tr>
  );
}

export function PaymentsHead() {
  return (
    <thead>
      <tr>
        <th scope="col">Reference</th>
        <th scope="col" class="num">Amount</th>
        <th scope="col">Status</th>
        <th scope="col">Chain</th>
        <th scope="col">Type</th>
        <th scope="col">Created</th>
      </tr>
    </thead>
  );
}
