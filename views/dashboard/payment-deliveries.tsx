/**
 * The webhook deliveries of one payment (its detail page): event, target, status, attempts with
 * their history, last status code, next retry, and a replay button that swaps only this panel.
 */
import { Badge, CsrfInput, EmptyState, Notice, type NoticeData, Submit, Time } from "./shell.tsx";
import type { DeliveryItem } from "./webhooks.tsx";
import { detailPath, type PaymentItem } from "./payment-parts.tsx";

const DELIVERY_TONE: Record<string, "ok" | "warn" | "bad"> = {
  delivered: "ok",
  pending: "warn",
  undelivered: "bad",
};

/** The webhook deliveries of this payment; a replay swaps only this panel. */
export function DeliveriesPanel(
  props: {
    csrf: string;
    p: PaymentItem;
    deliveries: DeliveryItem[];
    notice?: NoticeData;
    oob?: boolean;
  },
) {
  const p = props.p;
  return (
    <div
      id="payment-deliveries"
      class="panel"
      hx-swap-oob={props.oob ? "true" : undefined}
    >
      <h2>Webhook deliveries</h2>
      <Notice notice={props.notice} />
      {props.deliveries.length === 0
        ? (
          <EmptyState
            title={p.webhookUrl ? "No deliveries yet." : "No webhook URL on this payment."}
          >
            <p>
              {p.webhookUrl
                ? "The payment.settled event is sent to the webhook URL when the payment settles."
                : "Give a webhook URL when you create a payment to be told when it settles."}
            </p>
          </EmptyState>
        )
        : (
          <div class="table-wrap">
            <table class="cards deliveries">
              <caption class="visually-hidden">Webhook deliveries of this payment</caption>
              <thead>
                <tr>
                  <th scope="col">Event</th>
                  <th scope="col">URL</th>
                  <th scope="col">Status</th>
                  <th scope="col">Attempts</th>
                  <th scope="col">Last code</th>
                  <th scope="col">Next retry</th>
                  <th scope="col">Actions</th>
                </tr>
              </thead>
              <tbody>
                {props.deliveries.map((d) => (
                  <DeliveryRow csrf={props.csrf} reference={p.reference} d={d} />
                ))}
              </tbody>
            </table>
          </div>
        )}
    </div>
  );
}

function DeliveryRow(props: { csrf: string; reference: string; d: DeliveryItem }) {
  const d = props.d;
  const action = `${detailPath(props.reference)}/deliveries/${encodeURIComponent(d.id)}/replay`;
  return (
    <tr id={`delivery-${d.id}`} data-status={d.status}>
      <td data-label="Event">
        <div>
          <code>{d.event}</code>
          <div class="muted small">
            <Time iso={d.createdAt} />
          </div>
        </div>
      </td>
      <td data-label="URL" class="url">{d.url}</td>
      <td data-label="Status">
        <Badge tone={DELIVERY_TONE[d.status] ?? "neutral"}>{d.status}</Badge>
      </td>
      <td data-label="Attempts">
        {d.history.length === 0 ? <span>{d.attempts}</span> : (
          <details class="history">
            <summary>
              {d.attempts} <span class="visually-hidden">attempts; show history</span>
            </summary>
            <ol>
              {d.history.map((a) => (
                <li>
                  <Time iso={a.at} />
                  {` · ${a.outcome}`}
                  {a.statusCode !== null
                    ? ` · HTTP ${a.statusCode}`
                    : a.error
                    ? ` · ${a.error}`
                    : ""}
                  {` · ${a.durationMs} ms`}
                </li>
              ))}
            </ol>
          </details>
        )}
      </td>
      <td data-label="Last code">
        {d.lastStatusCode ?? <span class="muted">{d.lastError ? "error" : "—"}</span>}
      </td>
      <td data-label="Next retry">
        <Time iso={d.nextAttemptAt} />
      </td>
      <td data-label="Actions" class="actions">
        <form
          method="post"
          action={action}
          hx-post={action}
          hx-target="#payment-deliveries"
          hx-swap="outerHTML"
          hx-disabled-elt="find button"
        >
          <CsrfInput token={props.csrf} />
          <Submit class={d.status === "undelivered" ? "primary" : undefined} busy="Sending…">
            Replay<span class="visually-hidden">{` delivery ${d.id}`}</span>
          </Submit>
        </form>
      </td>
    </tr>
  );
}
