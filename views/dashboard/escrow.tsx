/**
 * The merchant's escrows: state, parties, expiry countdown, and the actions the merchant may take
 * with the wallets it controls (release, confirm, dispute with a reason), each confirmed in a
 * second step before anything is sent.
 */
import { Badge, CsrfInput, EmptyState, Field, Notice, type NoticeData, Submit } from "./shell.tsx";

export type EscrowAction = "release" | "confirm" | "dispute";

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
};

export function EscrowView(props: EscrowViewProps) {
  return (
    <section aria-labelledby="escrow-title">
      <h1 id="escrow-title">Escrow</h1>
      <Notice notice={props.notice} />
      {props.review && <ReviewPanel csrf={props.csrf} review={props.review} />}
      {props.escrows.length === 0
        ? (
          <EmptyState title="No escrows yet.">
            <p>Create one with POST /api/escrow/create from one of your wallets.</p>
          </EmptyState>
        )
        : props.escrows.map((e) => <EscrowPanel key={e.reference} {...props} escrow={e} />)}
    </section>
  );
}

function EscrowPanel(props: EscrowViewProps & { escrow: EscrowItem }) {
  const e = props.escrow;
  const errors = props.form?.reference === e.reference ? props.form.errors : {};
  return (
    <div class="panel" data-escrow={e.reference}>
      <h2>
        <code>{e.reference}</code> <Badge tone={TONE[e.status] ?? "neutral"}>{e.status}</Badge>
        {e.confirmed && e.status === "ACTIVE" && <Badge tone="ok">Delivered</Badge>}
      </h2>
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
          <time datetime={e.expiresAt}>{e.expiresAt}</time>{" "}
          <span data-countdown>({e.countdown})</span>
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
      </dl>
      <p>
        <a href={e.explorerUrl} rel="noopener">Funding transaction</a>
      </p>
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
          <input type="hidden" name="callerSCA" value={a.callerSCA} />
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

function ReviewPanel(props: { csrf: string; review: EscrowReview }) {
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
  }[r.action];
  return (
    <div class="panel" data-escrow-review={r.action}>
      <h2>Confirm: {LABEL[r.action]}</h2>
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
        <input type="hidden" name="callerSCA" value={r.callerSCA} />
        <input type="hidden" name="reason" value={r.reason} />
        <Submit busy="Sending…">Confirm</Submit> <a href="/dashboard/escrow">Cancel</a>
      </form>
    </div>
  );
}
