/**
 * The merchant's escrows: a create form (depositor wallet, beneficiary, amount, expiry,
 * description, webhook), each escrow's state, parties, expiry countdown, the arbiter's
 * resolution and every transaction's link, and the actions the merchant may take with the
 * wallets it controls (release, confirm, dispute with a reason, refund once expired). Every
 * create and action is reviewed in a second step before anything is sent, and its result shows
 * the transaction link.
 */
import { liveAttrs } from "./live.ts";
import {
  Badge,
  CsrfInput,
  EmptyState,
  Field,
  Notice,
  type NoticeData,
  Select,
  Submit,
  Time,
} from "./shell.tsx";
import { ReviewPanel, type ReviewProps, type TxResult, TxResultNotice } from "./review.tsx";

export type EscrowAction = "release" | "confirm" | "dispute" | "refund";

export interface WalletChoice {
  id: string;
  label: string;
}

export const EXPIRY_UNITS = [
  { value: "minutes", label: "minutes" },
  { value: "hours", label: "hours" },
  { value: "days", label: "days" },
];

export interface EscrowItem {
  reference: string;
  status: string;
  amount: string;
  depositor: string;
  beneficiary: string;
  expiresAt: string;
  /** "in 2 h 13 min", "expired". */
  countdown: string;
  confirmed: boolean;
  description: string | null;
  disputeReason: string | null;
  explorerUrl: string;
  /** "released" or "refunded" once the arbiter decided a dispute, with its transaction. */
  resolution: string | null;
  /** Links of the escrow's later transactions (confirm, dispute, release, refund, resolve). */
  links: { label: string; href: string }[];
  /** What the merchant may do, and as which of its wallets. */
  actions: { action: EscrowAction; callerSCA: string }[];
}

export interface EscrowReview {
  reference: string;
  action: EscrowAction;
  callerSCA: string;
  reason: string;
  amount: string;
}

export interface EscrowViewProps {
  csrf: string;
  escrows: EscrowItem[];
  notice?: NoticeData;
  review?: EscrowReview;
  /** Field errors of one escrow's dispute form. */
  form?: { reference: string; errors: Record<string, string> };
  /** The create form's depositor choices (the merchant's wallets). */
  wallets?: WalletChoice[];
  create?: { values: Record<string, string>; errors: Record<string, string> };
  /** The create's review. */
  createReview?: Omit<ReviewProps, "csrf">;
  result?: TxResult;
}

const TONE: Record<string, "ok" | "warn" | "bad" | "neutral"> = {
  ACTIVE: "neutral",
  DISPUTED: "warn",
  RELEASED: "ok",
  REFUNDED: "bad",
};

const LABEL: Record<EscrowAction, string> = {
  release: "Release to the beneficiary",
  confirm: "Confirm delivery",
  dispute: "Dispute",
  refund: "Refund to the depositor",
};

export function EscrowView(props: EscrowViewProps) {
  return (
    <section aria-labelledby="escrow-title">
      <h1 id="escrow-title">Escrow</h1>
      <Notice notice={props.notice} />
      <TxResultNotice result={props.result} />
      {props.review && <ActionReview csrf={props.csrf} review={props.review} />}
      {props.createReview && <ReviewPanel csrf={props.csrf} {...props.createReview} />}
      {!props.review && !props.createReview && (
        <CreateForm csrf={props.csrf} wallets={props.wallets ?? []} form={props.create} />
      )}
      <h2>Your escrows</h2>
      {props.escrows.length === 0
        ? (
          <EmptyState title="No escrows yet.">
            <p>Create one with the form above, from one of your wallets.</p>
          </EmptyState>
        )
        : props.escrows.map((e) => <EscrowPanel key={e.reference} {...props} escrow={e} />)}
    </section>
  );
}

/**
 * A DISPUTED panel is refreshed on its escrow's events (the arbiter's resolution appears by
 * itself); polled every this many seconds only when the event stream is unavailable.
 */
export const DISPUTED_POLL_SECONDS = 5;

export function EscrowPanel(props: EscrowViewProps & { escrow: EscrowItem }) {
  const e = props.escrow;
  const errors = props.form?.reference === e.reference ? props.form.errors : {};
  // A DISPUTED escrow has no form to lose: its panel follows the arbiter's decision.
  const live = e.status === "DISPUTED"
    ? {
      "hx-get": `/dashboard/escrow/${e.reference}/panel`,
      ...liveAttrs({
        events: "escrow",
        pollSeconds: DISPUTED_POLL_SECONDS,
        reference: e.reference,
      }),
      "hx-swap": "outerHTML",
      "hx-disinherit": "*",
    }
    : {};
  return (
    <div class="panel" data-escrow={e.reference} {...live}>
      <h3>
        <code>{e.reference}</code> <Badge tone={TONE[e.status] ?? "neutral"}>{e.status}</Badge>
        {e.confirmed && e.status === "ACTIVE" && <Badge tone="ok">Delivered</Badge>}
      </h3>
      <dl class="facts">
        <dt>Amount</dt>
        <dd>{e.amount} USDC</dd>
        <dt>Depositor</dt>
        <dd>
          <code>{e.depositor}</code>
        </dd>
        <dt>Beneficiary</dt>
        <dd>
          <code>{e.beneficiary}</code>
        </dd>
        <dt>Expires</dt>
        <dd>
          <Time iso={e.expiresAt} />
          {e.status === "ACTIVE" && (
            <>
              {" "}
              <span data-countdown>({e.countdown})</span>
            </>
          )}
        </dd>
        {e.description && (
          <>
            <dt>Description</dt>
            <dd>{e.description}</dd>
          </>
        )}
        {e.disputeReason && (
          <>
            <dt>Dispute</dt>
            <dd>{e.disputeReason}</dd>
          </>
        )}
        {e.resolution && (
          <>
            <dt>Arbiter's resolution</dt>
            <dd data-testid="escrow-resolution">
              {e.resolution === "released"
                ? "Released to the beneficiary"
                : "Refunded to the depositor"}
            </dd>
          </>
        )}
      </dl>
      <ul class="tx-links">
        <li>
          <a href={e.explorerUrl} rel="noopener">Funding transaction</a>
        </li>
        {e.links.map((l) => (
          <li>
            <a href={l.href} rel="noopener">{l.label}</a>
          </li>
        ))}
      </ul>
      {e.actions.map((a) => (
        <form
          method="post"
          action="/dashboard/escrow/review"
          hx-post="/dashboard/escrow/review"
          hx-target="#main"
          class={a.action === "dispute" ? undefined : "inline"}
        >
          <CsrfInput token={props.csrf} />
          <input type="hidden" name="reference" value={e.reference} />
          <input type="hidden" name="action" value={a.action} />
          {a.callerSCA && <input type="hidden" name="callerSCA" value={a.callerSCA} />}
          {a.action === "dispute" && (
            <Field
              name="reason"
              id={`f-reason-${e.reference}`}
              label="Reason"
              maxLength={1000}
              error={errors.reason}
            />
          )}
          <Submit busy="Checking…">{LABEL[a.action]}</Submit>
        </form>
      ))}
    </div>
  );
}

function ActionReview(props: { csrf: string; review: EscrowReview }) {
  const r = props.review;
  const what = {
    release: (
      <>
        Release <strong>{r.amount} USDC</strong> to the beneficiary? This cannot be undone.
      </>
    ),
    confirm: <>Confirm delivery? The escrow stays active until the depositor releases it.</>,
    dispute: (
      <>
        Dispute this escrow as{" "}
        <code>{r.callerSCA}</code>? Release and confirmation are blocked until the operator resolves
        it. Reason: {r.reason || "No reason provided"}
      </>
    ),
    refund: (
      <>
        Refund <strong>{r.amount} USDC</strong> to the depositor? The escrow has expired.
      </>
    ),
  }[r.action];
  return (
    <section
      class="panel review"
      data-escrow-review={r.action}
      aria-labelledby="escrow-review-title"
    >
      <h2 id="escrow-review-title" data-focus tabindex={-1}>Confirm: {LABEL[r.action]}</h2>
      <p>
        <code>{r.reference}</code>: {what}
      </p>
      <form
        method="post"
        action="/dashboard/escrow/act"
        hx-post="/dashboard/escrow/act"
        hx-target="#main"
        hx-disabled-elt="find button"
      >
        <CsrfInput token={props.csrf} />
        <input type="hidden" name="reference" value={r.reference} />
        <input type="hidden" name="action" value={r.action} />
        {r.callerSCA && <input type="hidden" name="callerSCA" value={r.callerSCA} />}
        <input type="hidden" name="reason" value={r.reason} />
        <Submit busy="Sending…">Confirm</Submit> <a href="/dashboard/escrow">Cancel</a>
      </form>
    </section>
  );
}

function CreateForm(
  props: { csrf: string; wallets: WalletChoice[]; form?: EscrowViewProps["create"] },
) {
  const v = props.form?.values ?? {};
  const e = props.form?.errors ?? {};
  return (
    <section class="panel" aria-labelledby="escrow-new-title" data-escrow-create>
      <h2 id="escrow-new-title">New escrow</h2>
      <form
        method="post"
        action="/dashboard/escrow/new/review"
        hx-post="/dashboard/escrow/new/review"
        hx-target="#main"
        novalidate
      >
        <CsrfInput token={props.csrf} />
        <Select
          name="depositorWalletId"
          label="Depositor wallet"
          value={v.depositorWalletId}
          error={e.depositorWalletId}
          hint="One of your wallets; the amount is held from it now."
          options={props.wallets.map((w) => ({ value: w.id, label: w.label }))}
        />
        <Field
          name="beneficiarySCA"
          label="Beneficiary address"
          value={v.beneficiarySCA}
          error={e.beneficiarySCA}
          spellcheck={false}
          autocomplete="off"
        />
        <Field
          name="amount"
          label="Amount (USDC)"
          value={v.amount}
          error={e.amount}
          inputMode="decimal"
          autocomplete="off"
        />
        <div class="field-row">
          <Field
            name="expiresIn"
            label="Expires in"
            value={v.expiresIn}
            error={e.expiresIn}
            inputMode="numeric"
            autocomplete="off"
          />
          <Select
            name="expiresUnit"
            label="Expiry unit"
            value={v.expiresUnit ?? "days"}
            options={EXPIRY_UNITS}
          />
        </div>
        <Field
          name="description"
          label="Description (optional)"
          value={v.description}
          error={e.description}
          maxLength={500}
        />
        <Field
          name="webhookUrl"
          label="Webhook URL (optional)"
          value={v.webhookUrl}
          error={e.webhookUrl}
          inputMode="url"
          autocomplete="off"
        />
        <Submit busy="Checking…">Review escrow</Submit>
      </form>
    </section>
  );
}
