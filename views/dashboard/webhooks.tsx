/**
 * Webhooks: the signing secret (hidden until revealed, rolled after confirmation) and the
 * deliveries with their attempts, last status code, next retry time, and replay.
 */
import {
  Badge,
  CopyField,
  CsrfInput,
  EmptyState,
  Notice,
  type NoticeData,
  Select,
  Submit,
  Time,
} from "./shell.tsx";

export interface AttemptItem {
  attempt: number;
  at: string;
  durationMs: number;
  statusCode: number | null;
  error: string | null;
  outcome: string;
}

export interface DeliveryItem {
  id: string;
  event: string;
  reference: string | null;
  url: string;
  status: string;
  attempts: number;
  lastStatusCode: number | null;
  lastError: string | null;
  nextAttemptAt: string | null;
  createdAt: string;
  deliveredAt: string | null;
  history: AttemptItem[];
}

export interface DeliveryFilter {
  status?: string;
  reference?: string;
}

export interface WebhooksViewProps {
  csrf: string;
  deliveries: DeliveryItem[];
  filter: DeliveryFilter;
  notice?: NoticeData;
  /** The secret, when the merchant asked to see it. */
  secret?: string;
}

export function WebhooksView(props: WebhooksViewProps) {
  const f = props.filter;
  return (
    <section aria-labelledby="webhooks-title">
      <h1 id="webhooks-title">Webhooks</h1>
      <Notice notice={props.notice} />
      <SecretPanel csrf={props.csrf} secret={props.secret} />

      <div class="panel">
        <h2 id="deliveries-title">Deliveries</h2>
        <form
          method="get"
          action="/dashboard/webhooks"
          hx-get="/dashboard/webhooks"
          hx-target="#main"
          hx-push-url="true"
          class="row filters"
          role="search"
          aria-label="Filter deliveries"
        >
          <Select
            name="status"
            label="Status"
            value={f.status ?? ""}
            options={[
              { value: "", label: "All" },
              { value: "pending", label: "Pending" },
              { value: "delivered", label: "Delivered" },
              { value: "undelivered", label: "Undelivered" },
            ]}
          />
          <div class="field">
            <label for="f-reference">Reference</label>
            <input id="f-reference" name="reference" type="search" value={f.reference ?? ""} />
          </div>
          <div class="field end">
            <button type="submit">Filter</button>
          </div>
        </form>
        <DeliveriesTable csrf={props.csrf} deliveries={props.deliveries} filter={f} />
      </div>
    </section>
  );
}

export function SecretPanel(props: { csrf: string; secret?: string; notice?: NoticeData }) {
  return (
    <div id="webhook-secret" class="panel">
      <h2>Signing secret</h2>
      <Notice notice={props.notice} />
      <p>
        Deliveries are signed with the Standard Webhooks scheme. Verify them with this secret.
      </p>
      {props.secret
        ? <CopyField id="secret-value" label="Signing secret" value={props.secret} hideLabel />
        : (
          <p>
            <code class="masked" aria-label="Hidden secret">whsec_••••••••••••••••</code>
          </p>
        )}
      <div class="row">
        {props.secret
          ? (
            <button
              type="button"
              hx-get="/dashboard/webhooks/secret?hide=1"
              hx-target="#webhook-secret"
              hx-swap="outerHTML"
            >
              Hide secret
            </button>
          )
          : (
            <button
              type="button"
              hx-get="/dashboard/webhooks/secret"
              hx-target="#webhook-secret"
              hx-swap="outerHTML"
            >
              Reveal secret
            </button>
          )}
        <form
          method="post"
          action="/dashboard/webhooks/secret/roll"
          hx-post="/dashboard/webhooks/secret/roll"
          hx-target="#webhook-secret"
          hx-swap="outerHTML"
          hx-disabled-elt="find button"
          hx-confirm="Roll the signing secret? Deliveries are signed with the new secret at once; update your receivers."
        >
          <CsrfInput token={props.csrf} />
          <Submit class="danger" busy="Rolling…">Roll secret</Submit>
        </form>
      </div>
    </div>
  );
}

const TONE: Record<string, "ok" | "warn" | "bad"> = {
  delivered: "ok",
  pending: "warn",
  undelivered: "bad",
};

export function DeliveriesTable(
  props: { csrf: string; deliveries: DeliveryItem[]; filter: DeliveryFilter },
) {
  if (props.deliveries.length === 0) {
    const filtered = !!(props.filter.status || props.filter.reference);
    return (
      <EmptyState title={filtered ? "No deliveries match." : "No deliveries yet."}>
        {!filtered && (
          <p>
            Events are sent to the webhook URL you give on a payment or payment link, and each
            delivery appears here.
          </p>
        )}
      </EmptyState>
    );
  }
  return (
    <div class="table-wrap">
      <table class="cards deliveries">
        <caption class="visually-hidden">Webhook deliveries, newest first</caption>
        <thead>
          <tr>
            <th scope="col">Event</th>
            <th scope="col">Reference</th>
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
            <tr id={`delivery-${d.id}`} data-status={d.status}>
              <td data-label="Event">
                <div>
                  <code>{d.event}</code>
                  <div class="muted small">
                    <Time iso={d.createdAt} />
                  </div>
                </div>
              </td>
              <td data-label="Reference">{d.reference ?? <span class="muted">—</span>}</td>
              <td data-label="URL" class="url">{d.url}</td>
              <td data-label="Status">
                <Badge tone={TONE[d.status] ?? "neutral"}>{d.status}</Badge>
              </td>
              <td data-label="Attempts">
                <History d={d} />
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
                  action={`/dashboard/webhooks/deliveries/${d.id}/replay`}
                  hx-post={`/dashboard/webhooks/deliveries/${d.id}/replay`}
                  hx-target="#main"
                  hx-disabled-elt="find button"
                >
                  <CsrfInput token={props.csrf} />
                  {props.filter.status && (
                    <input type="hidden" name="status" value={props.filter.status} />
                  )}
                  {props.filter.reference && (
                    <input type="hidden" name="reference" value={props.filter.reference} />
                  )}
                  <Submit
                    class={d.status === "undelivered" ? "primary" : undefined}
                    busy="Sending…"
                  >
                    Replay<span class="visually-hidden">{` delivery ${d.id}`}</span>
                  </Submit>
                </form>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function History(props: { d: DeliveryItem }) {
  const d = props.d;
  if (d.history.length === 0) return <span>{d.attempts}</span>;
  return (
    <details class="history">
      <summary>
        {d.attempts} <span class="visually-hidden">attempts; show history</span>
      </summary>
      <ol>
        {d.history.map((a) => (
          <li>
            <Time iso={a.at} />
            {` · ${a.outcome}`}
            {a.statusCode !== null ? ` · HTTP ${a.statusCode}` : a.error ? ` · ${a.error}` : ""}
            {` · ${a.durationMs} ms`}
          </li>
        ))}
      </ol>
    </details>
  );
}
