/**
 * The merchant's streams: a create form (sender wallet, receiver, total, and a rate or a
 * duration), each stream with a progress bar and its accrual ticking in the page (the list also
 * refreshes itself with htmx), the amounts, and stop (from the sender) and withdraw (to a
 * receiver wallet the merchant controls) while ACTIVE. Every create and action shows a review
 * first, and its result with the transaction link.
 */
import {
  Badge,
  CsrfInput,
  EmptyState,
  Field,
  Notice,
  type NoticeData,
  Select,
  Submit,
} from "./shell.tsx";
import { ReviewPanel, type ReviewProps, type TxResult, TxResultNotice } from "./review.tsx";

export const STREAMS_POLL_SECONDS = 2;

export interface StreamItem {
  reference: string;
  status: "ACTIVE" | "STOPPED" | "COMPLETED";
  senderSCA: string;
  receiverSCA: string;
  ratePerSecond: number;
  totalDeposited: number;
  totalStreamed: number;
  currentStreamed: number;
  remainingBalance: number;
  secondsRemaining: number;
  percentComplete: number;
  startedAt: string;
  explorerUrl: string | null;
  /** Seconds accrued at render time (the server's clock), for the page's ticking. */
  elapsedSeconds: number;
  /** The merchant controls the receiver (withdraw) / the sender (stop). */
  canWithdraw: boolean;
  canStop: boolean;
}

export interface WalletOption {
  address: string;
  label: string;
}

export interface StreamForm {
  values: Record<string, string>;
  errors: Record<string, string>;
}

export interface StreamsViewProps {
  csrf: string;
  streams: StreamItem[];
  notice?: NoticeData;
  /** The create form's sender choices (the merchant's wallets). */
  wallets?: WalletOption[];
  form?: StreamForm;
  review?: Omit<ReviewProps, "csrf">;
  result?: TxResult;
}

export const DURATION_UNITS = [
  { value: "seconds", label: "seconds" },
  { value: "minutes", label: "minutes" },
  { value: "hours", label: "hours" },
  { value: "days", label: "days" },
];

export function StreamsView(props: StreamsViewProps) {
  return (
    <section aria-labelledby="streams-title">
      <h1 id="streams-title">Streams</h1>
      <Notice notice={props.notice} />
      <TxResultNotice result={props.result} />
      {props.review
        ? <ReviewPanel csrf={props.csrf} {...props.review} />
        : <CreateForm csrf={props.csrf} wallets={props.wallets ?? []} form={props.form} />}
      <h2 id="streams-list-title">Your streams</h2>
      <StreamsLive {...props} />
    </section>
  );
}

function CreateForm(props: { csrf: string; wallets: WalletOption[]; form?: StreamForm }) {
  const v = props.form?.values ?? {};
  const e = props.form?.errors ?? {};
  return (
    <section class="panel" aria-labelledby="stream-new-title" data-stream-create>
      <h2 id="stream-new-title">New stream</h2>
      <form
        method="post"
        action="/dashboard/streams/review"
        hx-post="/dashboard/streams/review"
        hx-target="#main"
        novalidate
      >
        <CsrfInput token={props.csrf} />
        <Select
          name="senderSCA"
          label="Sender wallet"
          value={v.senderSCA}
          error={e.senderSCA}
          hint="One of your wallets; the total is locked from it now."
          options={props.wallets.map((w) => ({ value: w.address, label: w.label }))}
        />
        <Field
          name="receiverSCA"
          label="Receiver address"
          value={v.receiverSCA}
          error={e.receiverSCA}
          spellcheck={false}
          autocomplete="off"
        />
        <Field
          name="totalDeposited"
          label="Total (USDC)"
          value={v.totalDeposited}
          error={e.totalDeposited}
          inputMode="decimal"
          autocomplete="off"
        />
        <Field
          name="ratePerSecond"
          label="Rate (USDC per second)"
          value={v.ratePerSecond}
          error={e.ratePerSecond}
          hint="Give a rate, or leave it empty and give a duration."
          inputMode="decimal"
          autocomplete="off"
        />
        <div class="field-row">
          <Field
            name="duration"
            label="Duration"
            value={v.duration}
            error={e.duration}
            inputMode="numeric"
            autocomplete="off"
          />
          <Select
            name="durationUnit"
            label="Duration unit"
            value={v.durationUnit ?? "hours"}
            options={DURATION_UNITS}
          />
        </div>
        <Field
          name="webhookUrl"
          label="Webhook URL (optional)"
          value={v.webhookUrl}
          error={e.webhookUrl}
          inputMode="url"
          autocomplete="off"
        />
        <Submit busy="Checking…">Review stream</Submit>
      </form>
    </section>
  );
}

/** The part that updates itself every few seconds. */
export function StreamsLive(props: StreamsViewProps) {
  return (
    <div
      id="streams-live"
      hx-get="/dashboard/streams/live"
      hx-trigger={`every ${STREAMS_POLL_SECONDS}s`}
      hx-swap="outerHTML"
      hx-disinherit="*"
    >
      {props.streams.length === 0
        ? (
          <EmptyState title="No streams yet.">
            <p>Create one with the form above.</p>
          </EmptyState>
        )
        : props.streams.map((s) => <StreamPanel key={s.reference} csrf={props.csrf} stream={s} />)}
    </div>
  );
}

const tone = (s: StreamItem["status"]) =>
  s === "ACTIVE" ? "ok" as const : s === "COMPLETED" ? "neutral" as const : "warn" as const;

function StreamPanel(props: { csrf: string; stream: StreamItem }) {
  const s = props.stream;
  return (
    <div class="panel" data-stream={s.reference}>
      <h3>
        <code>{s.reference}</code> <Badge tone={tone(s.status)}>{s.status}</Badge>
      </h3>
      <progress
        max={100}
        value={s.percentComplete}
        aria-label={`${s.percentComplete}% streamed`}
        data-testid="stream-progress"
      >
        {s.percentComplete}%
      </progress>
      <dl class="facts">
        <dt>Streamed</dt>
        <dd
          data-testid="stream-current"
          data-accrual={s.status === "ACTIVE" ? "" : undefined}
          data-rate={units(s.ratePerSecond)}
          data-deposit={units(s.totalDeposited)}
          data-elapsed={s.elapsedSeconds}
        >
          {s.currentStreamed} of {s.totalDeposited} USDC ({s.percentComplete}%)
        </dd>
        <dt>Paid to receiver</dt>
        <dd>{s.totalStreamed} USDC</dd>
        <dt>Rate</dt>
        <dd>{s.ratePerSecond} USDC/s</dd>
        <dt>Remaining</dt>
        <dd>{s.remainingBalance} USDC, {s.secondsRemaining} s</dd>
        <dt>From</dt>
        <dd>
          <code>{s.senderSCA}</code>
        </dd>
        <dt>To</dt>
        <dd>
          <code>{s.receiverSCA}</code>
        </dd>
        {s.explorerUrl && (
          <>
            <dt>Created</dt>
            <dd>
              <a href={s.explorerUrl} rel="noopener">transaction</a>
            </dd>
          </>
        )}
      </dl>
      {s.status === "ACTIVE" && (s.canWithdraw || s.canStop) && (
        <div class="actions">
          {s.canWithdraw && (
            <form
              method="post"
              action={`/dashboard/streams/${s.reference}/withdraw/review`}
              hx-post={`/dashboard/streams/${s.reference}/withdraw/review`}
              hx-target="#main"
              class="inline"
            >
              <CsrfInput token={props.csrf} />
              <Submit busy="Checking…">Withdraw to receiver</Submit>
            </form>
          )}
          {s.canStop && (
            <form
              method="post"
              action={`/dashboard/streams/${s.reference}/stop/review`}
              hx-post={`/dashboard/streams/${s.reference}/stop/review`}
              hx-target="#main"
              class="inline"
            >
              <CsrfInput token={props.csrf} />
              <Submit busy="Checking…">Stop stream</Submit>
            </form>
          )}
        </div>
      )}
    </div>
  );
}

/** A USDC number (6 places at most) as base units, for the page's ticking. */
function units(n: number): string {
  return String(Math.round(n * 1_000_000));
}
