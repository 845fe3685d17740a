/**
 * Payments: every payment of the merchant on every chain, newest first, filtered by status and
 * chain, searched by reference, a page at a time ("Load more" appends the next page in place;
 * without script it is a link to that page).
 */
import { EmptyState, Notice, type NoticeData, Select, Spinner } from "./shell.tsx";
import { type PaymentItem, PaymentRow, PaymentsHead, STATUS_LABEL } from "./payment-parts.tsx";

export interface PaymentsFilter {
  status?: string;
  chain?: string;
  reference?: string;
}

export interface PaymentsViewProps {
  filter: PaymentsFilter;
  /** Chain codes that can be chosen (Settle, Settle_Testnet). */
  chains: string[];
  rows: PaymentItem[];
  /** The next page, when there is one. */
  nextUrl: string | null;
  /** A later page opened without script: offer the way back. */
  firstPageUrl?: string;
  notice?: NoticeData;
}

export const PAYMENTS_PATH = "/dashboard/payments";

export function PaymentsView(props: PaymentsViewProps) {
  const f = props.filter;
  return (
    <section aria-labelledby="payments-title">
      <h1 id="payments-title">Payments</h1>
      <form
        method="get"
        action={PAYMENTS_PATH}
        hx-get={PAYMENTS_PATH}
        hx-target="#payments-results"
        hx-swap="outerHTML"
        hx-push-url="true"
        hx-trigger="submit, change, input delay:400ms"
        hx-sync="this:queue last"
        class="row filters"
        role="search"
        aria-label="Filter payments"
      >
        <Select
          name="status"
          id="p-status"
          label="Status"
          value={f.status ?? ""}
          options={[
            { value: "", label: "All statuses" },
            ...Object.entries(STATUS_LABEL).map(([value, label]) => ({ value, label })),
          ]}
        />
        <Select
          name="chain"
          id="p-chain"
          label="Chain"
          value={f.chain ?? ""}
          options={[
            { value: "", label: "All chains" },
            ...props.chains.map((c) => ({ value: c, label: c })),
          ]}
        />
        <div class="field grow">
          <label for="p-reference">Search by reference</label>
          <input
            id="p-reference"
            name="reference"
            type="search"
            value={f.reference ?? ""}
            maxlength={100}
            autocomplete="off"
            spellcheck={false}
            autocapitalize="off"
            placeholder="Any part of it"
          />
        </div>
        <div class="field end">
          <button type="submit">
            Filter
            <Spinner label="Loading payments…" />
          </button>
        </div>
      </form>
      <PaymentsResults {...props} />
    </section>
  );
}

/** The table below the filters: what the filter form swaps. */
export function PaymentsResults(props: PaymentsViewProps) {
  const f = props.filter;
  const filtered = !!(f.status || f.chain || f.reference);
  return (
    <div id="payments-results" class="results">
      <Notice notice={props.notice} />
      {props.rows.length === 0
        ? (
          <EmptyState title={filtered ? "No payments match." : "No payments yet."}>
            {filtered ? <p>Try another status, chain or reference.</p> : (
              <p>
                Payments made through your <a href="/dashboard/links">payment links</a>{" "}
                or API checkout sessions appear here.
              </p>
            )}
          </EmptyState>
        )
        : (
          <div class="table-wrap">
            <table class="cards payments" id="payments-table">
              <caption class="visually-hidden">
                Payments, newest first{filtered ? " (filtered)" : ""}
              </caption>
              <PaymentsHead />
              <tbody id="payments-rows">
                <MoreRows rows={props.rows} nextUrl={props.nextUrl} />
              </tbody>
            </table>
          </div>
        )}
      {props.firstPageUrl && (
        <p>
          <a href={props.firstPageUrl}>Back to the newest payments</a>
        </p>
      )}
    </div>
  );
}

/** A page of rows and, when more exist, the row that loads the next page in its place. */
export function MoreRows(
  props: { rows: PaymentItem[]; nextUrl: string | null; appended?: boolean },
) {
  return (
    <>
      {props.rows.map((p, i) => (
        <PaymentRow key={p.reference} p={p} firstNew={props.appended && i === 0} />
      ))}
      {props.nextUrl && (
        <tr id="load-more" class="more">
          <td colspan={6}>
            <a
              class="button"
              href={props.nextUrl}
              hx-get={props.nextUrl}
              hx-target="#load-more"
              hx-swap="outerHTML"
              hx-push-url="false"
            >
              Load more payments
              <Spinner label="Loading more payments…" />
            </a>
          </td>
        </tr>
      )}
    </>
  );
}
