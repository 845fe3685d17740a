/**
 * The merchant's streams: each with a progress bar that follows the accrual live (the list polls
 * itself with htmx), the amounts, and stop (from the sender) and withdraw (to the receiver)
 * buttons while it is ACTIVE.
 */
import { Badge, CsrfInput, EmptyState, Notice, type NoticeData, Submit } from "./shell.tsx";

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
}

export interface StreamsViewProps {
  csrf: string;
  streams: StreamItem[];
  notice?: NoticeData;
}

export function StreamsView(props: StreamsViewProps) {
  return (
    <section aria-labelledby="streams-title">
      <h1 id="streams-title">Streams</h1>
      <Notice notice={props.notice} />
      <StreamsLive {...props} />
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
            <p>Create one with POST /api/payments/stream.</p>
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
      <h2>
        <code>{s.reference}</code> <Badge tone={tone(s.status)}>{s.status}</Badge>
      </h2>
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
        <dd data-testid="stream-current">
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
      {s.status === "ACTIVE" && (
        <div class="actions">
          <form
            method="post"
            action={`/dashboard/streams/${s.reference}/withdraw`}
            hx-post={`/dashboard/streams/${s.reference}/withdraw`}
            hx-target="#main"
            class="inline"
          >
            <CsrfInput token={props.csrf} />
            <Submit busy="Withdrawing…">Withdraw to receiver</Submit>
          </form>
          <form
            method="post"
            action={`/dashboard/streams/${s.reference}/stop`}
            hx-post={`/dashboard/streams/${s.reference}/stop`}
            hx-target="#main"
            hx-confirm="Stop this stream? The receiver gets what has accrued and the rest is refunded."
            class="inline"
          >
            <CsrfInput token={props.csrf} />
            <Submit busy="Stopping…">Stop stream</Submit>
          </form>
        </div>
      )}
    </div>
  );
}
