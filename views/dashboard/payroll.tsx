/**
 * Payroll in the dashboard: upload a CSV (recipient, amount, label), a preview with each bad
 * line's error, run it, a progress bar that follows the batch (htmx polling) and the history
 * with every recipient's result and explorer link; payments waiting for the browser wallet are
 * sent from it (views/assets/dashboard.js drives EIP-1193).
 */
import { liveAttrs } from "./live.ts";
import {
  Badge,
  CsrfInput,
  EmptyState,
  Notice,
  type NoticeData,
  Spinner,
  Submit,
  Time,
} from "./shell.tsx";

export const PAYROLL_POLL_SECONDS = 1;

export interface PayrollResultItem {
  recipientSCA: string;
  amount: string;
  label: string | null;
  status: "SUCCESS" | "PENDING_SIGNATURE" | "FAILED";
  txHash?: string;
  explorerUrl?: string;
  requestId?: string;
  error?: string;
}

export interface PayrollBatchItem {
  batchRef: string;
  status: string;
  totalAmount: number;
  recipientCount: number;
  successCount: number;
  failedCount: number;
  pendingSignatureCount: number;
  createdAt: string;
  completedAt: string | null;
  results: PayrollResultItem[];
}

export interface PreviewLine {
  line: number;
  recipient: string;
  amount: string;
  label: string;
  error?: string;
}

export interface PayrollPreview {
  csv: string;
  runKey: string;
  description: string;
  lines: PreviewLine[];
  fileError?: string;
  valid: boolean;
  total: string;
  /** The payout wallet that pays, and its USDC when managed (null: it signs each payment). */
  payer?: { address: string; balance: string | null };
}

export interface SignRequestItem {
  id: string;
  batchRef: string;
  index: number;
  recipientSCA: string;
  amount: string;
  amountUnits: string;
  label: string | null;
  memo: string | null;
  token: string;
  chainId: number;
  payerSCA: string;
}

export interface PayrollViewProps {
  csrf: string;
  batches: PayrollBatchItem[];
  signRequests: SignRequestItem[];
  preview?: PayrollPreview;
  notice?: NoticeData;
}

export function PayrollView(props: PayrollViewProps) {
  return (
    <section aria-labelledby="payroll-title">
      <h1 id="payroll-title">Payroll</h1>
      <Notice notice={props.notice} />
      {props.signRequests.length > 0 && <SignRequests requests={props.signRequests} />}
      {props.preview
        ? <Preview csrf={props.csrf} preview={props.preview} />
        : <Upload csrf={props.csrf} />}
      <h2>History</h2>
      {props.batches.length === 0
        ? (
          <EmptyState title="No payroll batches yet.">
            <p>Upload a CSV above, or use POST /api/payroll/run.</p>
          </EmptyState>
        )
        : props.batches.map((b) => <BatchPanel key={b.batchRef} batch={b} />)}
    </section>
  );
}

function Upload(props: { csrf: string }) {
  return (
    <div class="panel">
      <h2>Pay from a CSV</h2>
      <form
        method="post"
        action="/dashboard/payroll/preview"
        hx-post="/dashboard/payroll/preview"
        hx-target="#main"
        hx-encoding="multipart/form-data"
        enctype="multipart/form-data"
      >
        <CsrfInput token={props.csrf} />
        <p>
          One recipient per line: <code>recipient,amount,label</code>{" "}
          (a header line is optional; the label may be left out). At most 5,000 lines.
        </p>
        <p>
          <label for="f-csv">CSV file</label>
          <input id="f-csv" type="file" name="csv" accept=".csv,text/csv" required />
        </p>
        <p>
          <label for="f-description">Description (the memo of lines without a label)</label>
          <input id="f-description" type="text" name="description" maxlength={500} />
        </p>
        <Submit busy="Reading the file…">Preview</Submit>
      </form>
    </div>
  );
}

function Preview(props: { csrf: string; preview: PayrollPreview }) {
  const p = props.preview;
  const bad = p.lines.filter((l) => l.error).length;
  return (
    <div class="panel" data-testid="payroll-preview">
      <h2>Preview</h2>
      {p.fileError && <p class="notice error" role="alert">{p.fileError}</p>}
      {p.lines.length > 0 && (
        <p data-testid="preview-summary">
          {p.lines.length} lines, {bad === 0 ? "all valid" : `${bad} with errors`}; total {p.total}
          {" "}
          USDC.
        </p>
      )}
      {p.payer && (
        <p data-testid="preview-payer">
          Paid from the payout wallet <code>{p.payer.address}</code>
          {p.payer.balance === null
            ? " (it signs each payment)."
            : `, holding ${p.payer.balance} USDC.`}
        </p>
      )}
      {p.lines.length > 0 && (
        <table>
          <thead>
            <tr>
              <th scope="col">Line</th>
              <th scope="col">Recipient</th>
              <th scope="col">Amount</th>
              <th scope="col">Label</th>
              <th scope="col">Check</th>
            </tr>
          </thead>
          <tbody>
            {p.lines.map((l) => (
              <tr data-line={l.line} class={l.error ? "bad" : undefined}>
                <td>{l.line}</td>
                <td>
                  <code>{l.recipient}</code>
                </td>
                <td>{l.amount}</td>
                <td>{l.label}</td>
                <td data-testid="line-check">
                  {l.error ? <span class="error">{l.error}</span> : <Badge tone="ok">OK</Badge>}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <div class="actions">
        {p.valid && (
          <form
            method="post"
            action="/dashboard/payroll/run"
            hx-post="/dashboard/payroll/run"
            hx-target="#main"
          >
            <CsrfInput token={props.csrf} />
            <input type="hidden" name="csv" value={p.csv} />
            <input type="hidden" name="runKey" value={p.runKey} />
            <input type="hidden" name="description" value={p.description} />
            <Submit busy="Starting…">Run payroll ({p.total} USDC)</Submit>
          </form>
        )}
        <a href="/dashboard/payroll">Start over</a>
      </div>
    </div>
  );
}

const tone = (s: string) =>
  s === "COMPLETED"
    ? "ok" as const
    : s === "FAILED"
    ? "bad" as const
    : s === "PROCESSING"
    ? "neutral" as const
    : "warn" as const;

/** One batch; while PROCESSING it replaces itself on each of its events (its progress bar moves). */
export function BatchPanel(props: { batch: PayrollBatchItem }) {
  const b = props.batch;
  const done = b.successCount + b.failedCount + b.pendingSignatureCount;
  const percent = b.recipientCount ? Math.floor((done * 100) / b.recipientCount) : 100;
  const live = b.status === "PROCESSING";
  return (
    <div
      class="panel"
      data-batch={b.batchRef}
      hx-get={live ? `/dashboard/payroll/batches/${b.batchRef}` : undefined}
      hx-swap={live ? "outerHTML" : undefined}
      {...(live
        ? liveAttrs({ events: "payroll", pollSeconds: PAYROLL_POLL_SECONDS, reference: b.batchRef })
        : {})}
    >
      <h3>
        <code>{b.batchRef}</code> <Badge tone={tone(b.status)}>{b.status}</Badge>
        {live && <Spinner label="Paying…" />}
      </h3>
      <progress
        max={100}
        value={percent}
        aria-label={`${percent}% processed`}
        data-testid="payroll-progress"
      >
        {percent}%
      </progress>
      <dl class="facts">
        <dt>Processed</dt>
        <dd data-testid="payroll-counts">
          {done} of {b.recipientCount}: {b.successCount} paid, {b.failedCount} failed
          {b.pendingSignatureCount > 0 && `, ${b.pendingSignatureCount} awaiting your wallet`}
        </dd>
        <dt>Total</dt>
        <dd>{b.totalAmount} USDC</dd>
        <dt>Created</dt>
        <dd>
          <Time iso={b.createdAt} />
        </dd>
      </dl>
      {b.results.length > 0 && (
        <details>
          <summary>Recipients</summary>
          <table>
            <thead>
              <tr>
                <th scope="col">Recipient</th>
                <th scope="col">Amount</th>
                <th scope="col">Label</th>
                <th scope="col">Result</th>
              </tr>
            </thead>
            <tbody>
              {b.results.map((r) => (
                <tr data-result={r.status}>
                  <td>
                    <code>{r.recipientSCA}</code>
                  </td>
                  <td>{r.amount}</td>
                  <td>{r.label ?? ""}</td>
                  <td>
                    {r.status === "SUCCESS" && r.explorerUrl
                      ? <a href={r.explorerUrl} rel="noopener">paid</a>
                      : r.status === "FAILED"
                      ? <span class="error">failed: {r.error}</span>
                      : <span>awaiting your wallet</span>}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          {b.recipientCount > b.results.length && done > b.results.length && (
            <p class="muted">
              The first {b.results.length} of {done}{" "}
              processed; GET /api/payroll/run?batchRef={b.batchRef} has them all.
            </p>
          )}
        </details>
      )}
    </div>
  );
}

function SignRequests(props: { requests: SignRequestItem[] }) {
  return (
    <div class="panel" data-sign-requests>
      <h2>Payments waiting for your wallet</h2>
      <p>
        Your payout wallet is an external wallet: send each payment from it. The service checks each
        transaction on chain.
      </p>
      <table>
        <thead>
          <tr>
            <th scope="col">Batch</th>
            <th scope="col">Recipient</th>
            <th scope="col">Amount</th>
            <th scope="col"></th>
          </tr>
        </thead>
        <tbody>
          {props.requests.map((r) => (
            <tr data-sign-request={r.id}>
              <td>
                <code>{r.batchRef}</code> #{r.index}
              </td>
              <td>
                <code>{r.recipientSCA}</code> {r.memo ?? ""}
              </td>
              <td>{r.amount} USDC</td>
              <td>
                <button
                  type="button"
                  data-sign-send
                  data-id={r.id}
                  data-token={r.token}
                  data-to={r.recipientSCA}
                  data-amount={r.amountUnits}
                  data-from={r.payerSCA}
                  data-chain-id={`0x${r.chainId.toString(16)}`}
                  data-submit-url={`/dashboard/payroll/sign-requests/${r.id}`}
                >
                  Send from wallet
                  <Spinner label="Waiting for your wallet…" />
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <div class="notice" data-sign-status role="status" aria-live="polite" hidden></div>
    </div>
  );
}
