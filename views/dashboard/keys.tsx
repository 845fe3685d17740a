/** API keys: create (shown once), the list with hints, status and last use, revoke and rotate. */
import { KeyOnce } from "./entry.tsx";
import {
  Badge,
  CsrfInput,
  EmptyState,
  Field,
  FieldError,
  Notice,
  type NoticeData,
  Select,
  Submit,
  Time,
} from "./shell.tsx";

export interface KeyItem {
  id: string;
  type: string;
  environment: string;
  hint: string;
  label: string | null;
  scopes: string[];
  status: string;
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
}

export interface KeysViewProps {
  csrf: string;
  keys: KeyItem[];
  scopes: readonly string[];
  /** A key just issued: shown this once. */
  issued?: { key: string; label: string; warning: string };
  notice?: NoticeData;
  form?: { values?: Record<string, string | string[]>; errors?: Record<string, string> };
}

const TYPE_LABEL: Record<string, string> = {
  merchant: "Merchant",
  secret: "Secret",
  publishable: "Publishable",
};

export function KeysView(props: KeysViewProps) {
  const v = props.form?.values ?? {};
  const e = props.form?.errors ?? {};
  const chosen = new Set(Array.isArray(v.scopes) ? v.scopes : v.scopes ? [v.scopes] : []);
  const others = props.keys.filter((k) => k.type !== "merchant");
  return (
    <section aria-labelledby="keys-title">
      <h1 id="keys-title">API keys</h1>
      <Notice notice={props.notice} />
      {props.issued && (
        <KeyOnce
          id="new-key"
          label={props.issued.label}
          value={props.issued.key}
          warning={props.issued.warning}
        />
      )}

      <details class="panel" open={!!props.form?.errors || others.length === 0}>
        <summary>Create a key</summary>
        <form
          method="post"
          action="/dashboard/keys"
          hx-post="/dashboard/keys"
          hx-target="#main"
          hx-disabled-elt="find button[type=submit]"
          class="stack"
        >
          <CsrfInput token={props.csrf} />
          <div class="row">
            <Select
              name="type"
              label="Type"
              value={String(v.type ?? "secret")}
              error={e.type}
              options={[
                { value: "secret", label: "Secret (server side)" },
                { value: "publishable", label: "Publishable (browser side)" },
              ]}
            />
            <Select
              name="environment"
              label="Environment"
              value={String(v.environment ?? "test")}
              error={e.environment}
              options={[
                { value: "test", label: "Test (testnet)" },
                { value: "live", label: "Live" },
              ]}
            />
          </div>
          <Field
            name="label"
            label="Label (optional)"
            value={typeof v.label === "string" ? v.label : undefined}
            error={e.label}
            maxLength={100}
          />
          <fieldset
            class={e.scopes ? "scopes invalid" : "scopes"}
            aria-describedby="f-scopes-hint"
          >
            <legend>Scopes (secret keys; none means all)</legend>
            <p class="hint" id="f-scopes-hint">Limit what a secret key can do.</p>
            <div class="checks">
              {props.scopes.map((s) => (
                <label class="check">
                  <input type="checkbox" name="scopes" value={s} checked={chosen.has(s)} /> {s}
                </label>
              ))}
            </div>
            <FieldError id="f-scopes" error={e.scopes} />
          </fieldset>
          <Submit busy="Creating the key…">Create key</Submit>
        </form>
      </details>

      <h2>Your keys</h2>
      {others.length === 0 && (
        <EmptyState title="No secret or publishable keys yet.">
          <p>Create one above to call the API from your server or your checkout.</p>
        </EmptyState>
      )}
      <div class="table-wrap">
        <table class="cards">
          <caption class="visually-hidden">API keys</caption>
          <thead>
            <tr>
              <th scope="col">Key</th>
              <th scope="col">Type</th>
              <th scope="col">Environment</th>
              <th scope="col">Label</th>
              <th scope="col">Status</th>
              <th scope="col">Created</th>
              <th scope="col">Last used</th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {props.keys.map((k) => <KeyRow key={k.id} csrf={props.csrf} k={k} />)}
          </tbody>
        </table>
      </div>
    </section>
  );
}

function KeyRow(props: { key?: string; csrf: string; k: KeyItem }) {
  const k = props.k;
  const active = k.status === "active";
  const name = k.label ? `${k.label} (${k.hint})` : k.hint;
  return (
    <tr id={`key-${k.id}`} class={active ? undefined : "revoked"}>
      <td data-label="Key">
        <code>{k.hint}</code>
      </td>
      <td data-label="Type">{TYPE_LABEL[k.type] ?? k.type}</td>
      <td data-label="Environment">{k.environment}</td>
      <td data-label="Label">
        <div>
          {k.label ?? <span class="muted">—</span>}
          {k.scopes.length > 0 && <div class="muted small">scopes: {k.scopes.join(", ")}</div>}
        </div>
      </td>
      <td data-label="Status">
        {active ? <Badge tone="ok">active</Badge> : <Badge tone="neutral">revoked</Badge>}
      </td>
      <td data-label="Created">
        <Time iso={k.createdAt} />
      </td>
      <td data-label="Last used">
        <Time iso={k.lastUsedAt} empty="never" />
      </td>
      <td data-label="Actions" class="actions">
        {active && (
          <form
            method="post"
            action={`/dashboard/keys/${k.id}/rotate`}
            hx-post={`/dashboard/keys/${k.id}/rotate`}
            hx-target="#main"
            hx-disabled-elt="find button"
            hx-confirm={`Rotate ${name}? A new key replaces it and this one stops working at once.`}
          >
            <CsrfInput token={props.csrf} />
            <Submit busy="Rotating…">
              Rotate<span class="visually-hidden">{` key ${name}`}</span>
            </Submit>
          </form>
        )}
        {active && k.type !== "merchant" && (
          <form
            method="post"
            action={`/dashboard/keys/${k.id}/revoke`}
            hx-post={`/dashboard/keys/${k.id}/revoke`}
            hx-target="#main"
            hx-disabled-elt="find button"
            hx-confirm={`Revoke ${name}? Anything using it stops working at once.`}
          >
            <CsrfInput token={props.csrf} />
            <Submit class="danger" busy="Revoking…">
              Revoke<span class="visually-hidden">{` key ${name}`}</span>
            </Submit>
          </form>
        )}
        {!active && (
          <span class="muted">
            Revoked <Time iso={k.revokedAt} />
          </span>
        )}
      </td>
    </tr>
  );
}
