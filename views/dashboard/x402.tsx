/**
 * x402 pay-per-call: the merchant's listings (price, methods, calls and revenue), a form to list
 * an upstream API, the payout address's wallet and gateway balances, a withdrawal (reviewed
 * before it is sent: it is irreversible), and the latest paid calls.
 */
import {
  Badge,
  CsrfInput,
  EmptyState,
  Field,
  FieldError,
  Notice,
  type NoticeData,
  Spinner,
  Submit,
  Time,
} from "./shell.tsx";

export const X402_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"] as const;

export interface ListingItem {
  slug: string;
  price: string;
  methods: string[];
  description: string | null;
  upstreamUrl: string;
  calls: number;
  failed: number;
  revenue: string;
  /** Where standard x402 clients call it. */
  resourceUrl: string;
}

export interface PaidCallItem {
  createdAt: string;
  listingSlug: string | null;
  scheme: string;
  payer: string;
  amount: string;
  status: string;
  agentId: string | null;
  explorerUrl: string | null;
}

export interface X402Balances {
  sellerAddress: string;
  wallet: string;
  total: string;
  available: string;
  withdrawing: string;
  withdrawable: string;
  /** Owed to the payout address by calls served, not yet settled on chain. */
  pending?: string;
  /**
   * The vault's withdrawal delay in seconds, when it has one: a withdrawal is started first
   * (available → withdrawing) and withdrawable once the delay has passed.
   */
  delaySeconds?: number;
  /** When what is withdrawing matures (ISO 8601), while something is. */
  withdrawableAt?: string;
  /**
   * The payout wallet is the merchant's own (external: the service has no key): it withdraws by
   * signing under the vault's EIP-712 domain, and the relayer sends it.
   */
  signing?: { vault: string; chainId: number };
}

/** Paid calls accepted now and settled later: gateway-balance batches and channel claims. */
export interface X402Settlement {
  pending: { kind: string; count: number; amount: string }[];
  charges: {
    createdAt: string;
    listingSlug: string | null;
    payer: string;
    amount: string;
    status: string;
    explorerUrl: string | null;
  }[];
  batches: {
    kind: string;
    createdAt: string;
    status: string;
    payments: number;
    explorerUrl: string | null;
  }[];
}

export interface X402Form {
  values?: Record<string, string | string[]>;
  errors?: Record<string, string>;
}

export interface X402ViewProps {
  csrf: string;
  listings: ListingItem[];
  calls: PaidCallItem[];
  balances: X402Balances | null;
  settlement?: X402Settlement;
  notice?: NoticeData;
  listingForm?: X402Form;
  withdrawForm?: X402Form;
  startForm?: X402Form;
  review?: { amount: string; destinationAddress: string };
}

export function X402View(props: X402ViewProps) {
  return (
    <section aria-labelledby="x402-title">
      <h1 id="x402-title">x402 pay-per-call</h1>
      <Notice notice={props.notice} />
      {props.review && <WithdrawReview csrf={props.csrf} review={props.review} />}
      <Balances {...props} />
      <Listings {...props} />
      <CreateListing {...props} />
      {props.settlement && <Settlement settlement={props.settlement} />}
      <PaidCalls calls={props.calls} />
    </section>
  );
}

function Balances(props: X402ViewProps) {
  const b = props.balances;
  const v = (props.withdrawForm?.values ?? {}) as Record<string, string>;
  const e = props.withdrawForm?.errors ?? {};
  return (
    <div class="panel" aria-labelledby="x402-balance-title">
      <h2 id="x402-balance-title">Seller balance</h2>
      {!b
        ? (
          <div class="notice info" role="status">
            Listings pay your payout wallet. <a href="/dashboard/wallet">Set one up</a>.
          </div>
        )
        : (
          <>
            <dl class="facts" data-testid="x402-balances">
              <dt>Payout address</dt>
              <dd>
                <code>{b.sellerAddress}</code>
              </dd>
              <dt>Wallet (on chain)</dt>
              <dd data-balance="wallet">{b.wallet} USDC</dd>
              <dt>Gateway total (settled on chain)</dt>
              <dd data-balance="total">{b.total} USDC</dd>
              {b.pending !== undefined && (
                <>
                  <dt>Pending (served, not yet settled)</dt>
                  <dd data-balance="pending">{b.pending} USDC</dd>
                </>
              )}
              <dt>Available</dt>
              <dd data-balance="available">{b.available} USDC</dd>
              <dt>Withdrawing</dt>
              <dd data-balance="withdrawing">{b.withdrawing} USDC</dd>
              <dt>Withdrawable</dt>
              <dd data-balance="withdrawable">{b.withdrawable} USDC</dd>
              {b.withdrawableAt && (
                <>
                  <dt>Withdrawing matures</dt>
                  <dd data-balance="withdrawable-at">
                    <Time iso={b.withdrawableAt} />
                  </dd>
                </>
              )}
            </dl>
            {b.signing && <SignedWithdrawal {...props} />}
            {!b.signing && b.delaySeconds !== undefined && <StartWithdrawal {...props} />}
            {!b.signing && (
              <form
                method="post"
                action="/dashboard/x402/withdraw/review"
                hx-post="/dashboard/x402/withdraw/review"
                hx-target="#main"
                class="stack"
                aria-label="Withdraw from the gateway"
              >
                <CsrfInput token={props.csrf} />
                <div class="row">
                  <Field
                    name="amount"
                    id="f-withdraw-amount"
                    label="Withdraw amount (USDC)"
                    value={v.amount}
                    error={e.amount}
                    inputMode="decimal"
                    autocomplete="off"
                    maxLength={40}
                    hint={`At most ${b.withdrawable} USDC.`}
                  />
                  <Field
                    name="destinationAddress"
                    id="f-withdraw-destination"
                    label="Destination address (optional)"
                    value={v.destinationAddress}
                    error={e.destinationAddress}
                    autocomplete="off"
                    spellcheck={false}
                    maxLength={42}
                    hint="Default: your payout address. On Settle Testnet."
                  />
                </div>
                <Submit busy="Checking…">Review withdrawal</Submit>
              </form>
            )}
          </>
        )}
    </div>
  );
}

/**
 * An external payout wallet withdraws by signature: the page has the wallet sign a `Withdraw` (or,
 * on a vault with a delay, an `InitiateWithdrawal`) under the vault's domain
 * (views/assets/dashboard.js), and the relayer sends it; the wallet needs no gas.
 */
function SignedWithdrawal(props: X402ViewProps) {
  const b = props.balances!;
  const s = b.signing!;
  const hours = Math.round(((b.delaySeconds ?? 0) / 3600) * 10) / 10;
  return (
    <div
      class="stack"
      role="group"
      aria-labelledby="x402-signed-title"
      data-x402-signed
      data-vault={s.vault}
      data-chain-id={String(s.chainId)}
      data-account={b.sellerAddress}
      data-submit-url="/dashboard/x402/withdraw/signed"
    >
      <h3 id="x402-signed-title">Withdraw with your wallet</h3>
      <p>
        Your payout wallet is your own: it signs the withdrawal to itself, and the service sends it
        and pays the gas.
        {b.delaySeconds !== undefined &&
          ` This vault pays a withdrawal ${hours} h after it starts: start it first.`}
      </p>
      <Field
        name="amount"
        id="f-signed-amount"
        label="Amount to withdraw (USDC)"
        inputMode="decimal"
        autocomplete="off"
        maxLength={40}
        hint={b.delaySeconds !== undefined
          ? `Start: at most ${b.available} USDC, less paid calls not yet settled. Withdraw: at most ${b.withdrawable} USDC.`
          : `At most ${b.withdrawable} USDC, less paid calls not yet settled.`}
      />
      <div class="row">
        {b.delaySeconds !== undefined && (
          <button type="button" data-x402-sign="start">
            Sign and start withdrawal
            <Spinner label="Waiting for your wallet…" />
          </button>
        )}
        <button type="button" data-x402-sign="withdraw">
          Sign and withdraw
          <Spinner label="Waiting for your wallet…" />
        </button>
      </div>
      <div class="notice" data-x402-signed-status role="status" aria-live="polite" hidden></div>
    </div>
  );
}

/**
 * On a vault with a withdrawal delay: moves an amount from available to withdrawing (paid calls
 * not yet settled keep theirs), withdrawable by the form below once the delay has passed.
 */
function StartWithdrawal(props: X402ViewProps) {
  const b = props.balances!;
  const v = (props.startForm?.values ?? {}) as Record<string, string>;
  const e = props.startForm?.errors ?? {};
  const hours = Math.round(((b.delaySeconds ?? 0) / 3600) * 10) / 10;
  return (
    <form
      method="post"
      action="/dashboard/x402/withdraw/start"
      hx-post="/dashboard/x402/withdraw/start"
      hx-target="#main"
      class="stack"
      aria-label="Start a withdrawal"
    >
      <CsrfInput token={props.csrf} />
      <Field
        name="amount"
        id="f-start-amount"
        label="Start withdrawing (USDC)"
        value={v.amount}
        error={e.amount}
        inputMode="decimal"
        autocomplete="off"
        maxLength={40}
        hint={`This vault pays a withdrawal ${hours} h after it starts. At most ${b.available} USDC, less paid calls not yet settled.`}
      />
      <Submit busy="Starting…">Start withdrawal</Submit>
    </form>
  );
}

function WithdrawReview(
  props: { csrf: string; review: { amount: string; destinationAddress: string } },
) {
  const r = props.review;
  return (
    <div class="panel" data-x402-review="withdraw">
      <h2>Confirm the withdrawal</h2>
      <p>
        Withdraw <strong>{r.amount} USDC</strong> from the gateway to{" "}
        <code>{r.destinationAddress}</code>? Withdrawals are irreversible.
      </p>
      <form
        method="post"
        action="/dashboard/x402/withdraw"
        hx-post="/dashboard/x402/withdraw"
        hx-target="#main"
        hx-disabled-elt="find button"
      >
        <CsrfInput token={props.csrf} />
        <input type="hidden" name="amount" value={r.amount} />
        <input type="hidden" name="destinationAddress" value={r.destinationAddress} />
        <Submit busy="Sending…">Confirm withdrawal</Submit> <a href="/dashboard/x402">Cancel</a>
      </form>
    </div>
  );
}

function Listings(props: X402ViewProps) {
  return (
    <div class="panel">
      <h2 id="x402-listings-title">Listings</h2>
      <p class="hint">
        Buyers pay from a gateway balance. One without gas funds it, and takes it back out, by
        signing in its wallet at <a href="/gateway">/gateway</a>.
      </p>
      {props.listings.length === 0
        ? (
          <EmptyState title="No listings yet.">
            <p>List an upstream API below; buyers pay per call through POST /api/x402/pay.</p>
          </EmptyState>
        )
        : (
          <div class="table-wrap">
            <table aria-labelledby="x402-listings-title">
              <thead>
                <tr>
                  <th scope="col">Slug</th>
                  <th scope="col">Price</th>
                  <th scope="col">Methods</th>
                  <th scope="col">Calls</th>
                  <th scope="col">Revenue</th>
                  <th scope="col">Failed</th>
                </tr>
              </thead>
              <tbody>
                {props.listings.map((l) => (
                  <tr data-listing={l.slug}>
                    <td>
                      <code>{l.slug}</code>
                      {l.description && <div class="hint">{l.description}</div>}
                      <div class="hint">
                        <code>{l.resourceUrl}</code>
                      </div>
                    </td>
                    <td data-cell="price">{l.price} USDC</td>
                    <td>{l.methods.join(", ")}</td>
                    <td data-cell="calls">{l.calls}</td>
                    <td data-cell="revenue">{l.revenue} USDC</td>
                    <td data-cell="failed">{l.failed}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
    </div>
  );
}

function CreateListing(props: X402ViewProps) {
  const v = props.listingForm?.values ?? {};
  const e = props.listingForm?.errors ?? {};
  const chosen = new Set(Array.isArray(v.methods) ? v.methods : v.methods ? [v.methods] : ["GET"]);
  const text = (k: string) => (typeof v[k] === "string" ? v[k] as string : undefined);
  return (
    <div class="panel">
      <h2 id="x402-create-title">List an API</h2>
      <form
        method="post"
        action="/dashboard/x402/listings"
        hx-post="/dashboard/x402/listings"
        hx-target="#main"
        hx-disabled-elt="find button[type=submit]"
        class="stack"
        aria-labelledby="x402-create-title"
      >
        <CsrfInput token={props.csrf} />
        <div class="row">
          <Field
            name="slug"
            label="Slug"
            value={text("slug")}
            error={e.slug}
            autocomplete="off"
            spellcheck={false}
            maxLength={63}
            hint="Lowercase letters, digits and hyphens."
          />
          <Field
            name="price"
            label="Price per call (USDC)"
            value={text("price")}
            error={e.price}
            inputMode="decimal"
            autocomplete="off"
            maxLength={40}
          />
        </div>
        <Field
          name="upstreamUrl"
          label="Upstream URL"
          value={text("upstreamUrl")}
          error={e.upstreamUrl}
          inputMode="url"
          autocomplete="off"
          spellcheck={false}
          maxLength={2048}
          hint="Called for each paid request; a public HTTPS URL in production."
        />
        <fieldset class={e.methods ? "field invalid" : "field"}>
          <legend>Methods</legend>
          {X402_METHODS.map((m) => (
            <label class="inline">
              <input type="checkbox" name="methods" value={m} checked={chosen.has(m)} /> {m}
            </label>
          ))}
          <FieldError id="f-methods" error={e.methods} />
        </fieldset>
        <Field
          name="description"
          label="Description (optional)"
          value={text("description")}
          error={e.description}
          maxLength={500}
        />
        <Submit busy="Listing…">Create listing</Submit>
      </form>
    </div>
  );
}

const TONE: Record<string, "ok" | "warn" | "bad" | "neutral"> = {
  SUCCESS: "ok",
  PENDING: "neutral",
  FAILED: "bad",
  settled: "ok",
  confirmed: "ok",
  pending: "neutral",
  failed: "bad",
  released: "neutral",
};

function Settlement(props: { settlement: X402Settlement }) {
  const s = props.settlement;
  return (
    <div class="panel" data-testid="x402-settlement">
      <h2 id="x402-settlement-title">Settlement in batches</h2>
      <dl class="facts">
        {s.pending.map((p) => (
          <>
            <dt>Pending {p.kind === "channel" ? "channel charges" : "gateway charges"}</dt>
            <dd data-pending={p.kind}>
              {p.count} ({p.amount} USDC)
            </dd>
          </>
        ))}
      </dl>
      <h3 id="x402-batches-title">Latest batches</h3>
      {s.batches.length === 0 ? <p>No settlement batch yet.</p> : (
        <div class="table-wrap">
          <table aria-labelledby="x402-batches-title">
            <thead>
              <tr>
                <th scope="col">When</th>
                <th scope="col">Kind</th>
                <th scope="col">Payments</th>
                <th scope="col">Status</th>
              </tr>
            </thead>
            <tbody>
              {s.batches.map((b) => (
                <tr data-batch-status={b.status}>
                  <td>
                    <Time iso={b.createdAt} />
                  </td>
                  <td>{b.kind}</td>
                  <td>{b.payments}</td>
                  <td>
                    <Badge tone={TONE[b.status] ?? "neutral"}>{b.status}</Badge>{" "}
                    {b.explorerUrl && <a href={b.explorerUrl} rel="noopener">tx</a>}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <h3 id="x402-charges-title">Latest charges on the gateway balance</h3>
      {s.charges.length === 0 ? <p>No charge yet.</p> : (
        <div class="table-wrap">
          <table aria-labelledby="x402-charges-title">
            <thead>
              <tr>
                <th scope="col">When</th>
                <th scope="col">Listing</th>
                <th scope="col">Payer</th>
                <th scope="col">Amount</th>
                <th scope="col">Status</th>
              </tr>
            </thead>
            <tbody>
              {s.charges.map((c) => (
                <tr data-charge-status={c.status}>
                  <td>
                    <Time iso={c.createdAt} />
                  </td>
                  <td>
                    <code>{c.listingSlug ?? "—"}</code>
                  </td>
                  <td>
                    <code>{c.payer}</code>
                  </td>
                  <td>{c.amount} USDC</td>
                  <td>
                    <Badge tone={TONE[c.status] ?? "neutral"}>{c.status}</Badge>{" "}
                    {c.explorerUrl && <a href={c.explorerUrl} rel="noopener">tx</a>}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </div>
  );
}

function PaidCalls(props: { calls: PaidCallItem[] }) {
  return (
    <div class="panel">
      <h2 id="x402-calls-title">Latest paid calls</h2>
      {props.calls.length === 0 ? <p>No paid calls yet.</p> : (
        <div class="table-wrap">
          <table aria-labelledby="x402-calls-title">
            <thead>
              <tr>
                <th scope="col">When</th>
                <th scope="col">Listing</th>
                <th scope="col">Payer</th>
                <th scope="col">Amount</th>
                <th scope="col">Status</th>
                <th scope="col">Agent</th>
              </tr>
            </thead>
            <tbody>
              {props.calls.map((p) => (
                <tr data-call-status={p.status}>
                  <td>
                    <Time iso={p.createdAt} />
                  </td>
                  <td>
                    <code>{p.listingSlug ?? "facilitator"}</code>{" "}
                    <span class="hint">{p.scheme}</span>
                  </td>
                  <td>
                    <code>{p.payer}</code>
                  </td>
                  <td>{p.amount} USDC</td>
                  <td>
                    <Badge tone={TONE[p.status] ?? "neutral"}>{p.status}</Badge>{" "}
                    {p.explorerUrl && <a href={p.explorerUrl} rel="noopener">tx</a>}
                  </td>
                  <td>{p.agentId ?? "—"}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </div>
  );
}
