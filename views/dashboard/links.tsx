/**
 * Payment links: create one (amount, description, webhook URL) with the API's texts next to the
 * fields, the link just made with a copy button and its QR code, and the 100 newest links with
 * their status, a copy button and a QR code each.
 */
import { liveAttrs } from "./live.ts";
import {
  CopyField,
  CsrfInput,
  EmptyState,
  Field,
  Notice,
  type NoticeData,
  Submit,
  Time,
} from "./shell.tsx";
import { PaymentCells, type PaymentItem, PaymentLink } from "./payment-parts.tsx";
import { qrPath } from "./payment-detail.tsx";

export interface LinkForm {
  values?: Record<string, string>;
  errors?: Record<string, string>;
}

export interface LinksViewProps {
  csrf: string;
  links: PaymentItem[];
  hasWallet: boolean;
  /** The link just created. */
  created?: PaymentItem;
  form?: LinkForm;
  notice?: NoticeData;
  /** How many links the list shows at most. */
  limit: number;
}

export function LinksView(props: LinksViewProps) {
  const v = props.form?.values ?? {};
  const e = props.form?.errors ?? {};
  return (
    <section aria-labelledby="links-title">
      <h1 id="links-title">Payment links</h1>
      <Notice notice={props.notice} />
      {props.created && <CreatedLink p={props.created} />}

      <div class="panel">
        <h2 id="create-link-title">Create a payment link</h2>
        {!props.hasWallet && (
          <div class="notice info" role="status">
            Payments need a payout wallet first. <a href="/dashboard/wallet">Set one up</a>.
          </div>
        )}
        <form
          method="post"
          action="/dashboard/links"
          hx-post="/dashboard/links"
          hx-target="#main"
          hx-disabled-elt="find button[type=submit]"
          class="stack"
          aria-labelledby="create-link-title"
        >
          <CsrfInput token={props.csrf} />
          <div class="row">
            <Field
              name="amount"
              label="Amount (USDC)"
              value={v.amount}
              error={e.amount}
              inputMode="decimal"
              autocomplete="off"
              hint="A decimal such as 12.50, at most 6 decimal places."
              maxLength={40}
            />
            <Field
              name="description"
              label="Description (optional)"
              value={v.description}
              error={e.description}
              hint="Shown to the payer on the checkout page."
              maxLength={500}
            />
          </div>
          <Field
            name="webhookUrl"
            label="Webhook URL (optional)"
            value={v.webhookUrl}
            error={e.webhookUrl}
            inputMode="url"
            autocomplete="off"
            spellcheck={false}
            autocapitalize="off"
            hint="We send payment.settled here, signed with your webhook secret."
            maxLength={2000}
          />
          <Submit busy="Creating the link…">Create link</Submit>
        </form>
      </div>

      <h2 id="links-list-title">Your links</h2>
      <LinksList links={props.links} limit={props.limit} />
    </section>
  );
}

/** Seconds between refreshes of the list when the event stream is unavailable. */
export const LINKS_POLL_SECONDS = 10;

/**
 * The list, which updates itself: refreshed when a payment of this merchant changes (a link paid
 * or expired shows so without a reload, as on the overview).
 */
export function LinksList(props: { links: PaymentItem[]; limit: number }) {
  return (
    <div
      id="links-live"
      hx-get={LINKS_LIST_PATH}
      {...liveAttrs({ events: "payment", pollSeconds: LINKS_POLL_SECONDS })}
      hx-swap="outerHTML"
      hx-disinherit="*"
    >
      {props.links.length === 0
        ? (
          <EmptyState title="No payment links yet.">
            <p>Create one above, then send it to your customer or show its QR code.</p>
          </EmptyState>
        )
        : <LinksTable links={props.links} limit={props.limit} />}
    </div>
  );
}

export const LINKS_LIST_PATH = "/dashboard/links/list";

function CreatedLink(props: { p: PaymentItem }) {
  const p = props.p;
  return (
    <div class="panel created" id="created-link" data-reference={p.reference}>
      <h2>
        New link: {p.amount} {p.currency}
        {p.description ? ` · ${p.description}` : ""}
      </h2>
      <div class="created-body">
        <div class="grow">
          <CopyField id="new-link-url" label="Checkout link" value={p.checkoutUrl} />
          <p>
            <a href={p.checkoutUrl} target="_blank" rel="noopener">Open the checkout page</a>
            {" · "}
            <PaymentLink reference={p.reference} />
          </p>
          <p class="muted small">
            Valid until <Time iso={p.expiresAt} />.
          </p>
        </div>
        <img
          class="qr-image"
          src={qrPath(p.reference)}
          alt={`QR code of the checkout link ${p.checkoutUrl}`}
          width="160"
          height="160"
        />
      </div>
    </div>
  );
}

function LinksTable(props: { links: PaymentItem[]; limit: number }) {
  return (
    <div class="table-wrap">
      <table class="cards links" id="links-table">
        <caption class="visually-hidden">
          Payment links, newest first (at most {props.limit})
        </caption>
        <thead>
          <tr>
            <th scope="col">Reference</th>
            <th scope="col" class="num">Amount</th>
            <th scope="col">Status</th>
            <th scope="col">Created</th>
            <th scope="col">Link</th>
          </tr>
        </thead>
        <tbody>
          {props.links.map((p) => (
            <tr data-reference={p.reference} data-status={p.status}>
              <PaymentCells p={p} />
              <td data-label="Created">
                <Time iso={p.createdAt} />
              </td>
              <td data-label="Link">
                <div class="actions link-actions">
                  <code id={`url-${p.reference}`} class="visually-hidden">{p.checkoutUrl}</code>
                  <button type="button" data-copy={`url-${p.reference}`}>
                    Copy<span class="visually-hidden">{` the link of ${p.reference}`}</span>
                  </button>
                  <a class="button" href={p.checkoutUrl} target="_blank" rel="noopener">
                    Open<span class="visually-hidden">
                      {` the checkout page of ${p.reference}`}
                    </span>
                  </a>
                  <details class="qr">
                    <summary class="button">
                      QR<span class="visually-hidden">{` code of ${p.reference}`}</span>
                    </summary>
                    <img
                      src={qrPath(p.reference)}
                      alt={`QR code of the checkout link ${p.checkoutUrl}`}
                      width="160"
                      height="160"
                      loading="lazy"
                    />
                  </details>
                </div>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
