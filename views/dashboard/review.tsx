/**
 * The two steps every dashboard form that moves money shares (issue 28): a review page that says
 * exactly what will be sent (the facts, the chain, the wallets), with a confirm form carrying the
 * checked values, and the result with its transaction link.
 */
import type { Child } from "hono/jsx";
import { CsrfInput, Submit } from "./shell.tsx";
export { utcMinute } from "./shell.tsx";

export interface Fact {
  label: string;
  value: Child;
}

export interface ReviewProps {
  /** The panel's heading, e.g. "Review: create a stream". */
  title: string;
  /** One sentence: what will happen when confirmed. */
  summary: Child;
  facts: Fact[];
  csrf: string;
  /** Where the confirm form posts (also htmx's hx-post). */
  action: string;
  /** The checked values, sent again with the confirmation. */
  hidden: Record<string, string>;
  confirm: string;
  busy?: string;
  /** Where "Cancel" goes. */
  back: string;
  /** Identifies the panel for tests (`data-review`). */
  id: string;
}

export function ReviewPanel(p: ReviewProps) {
  const heading = `review-${p.id}-title`;
  return (
    <section class="panel review" aria-labelledby={heading} data-review={p.id}>
      <h2 id={heading} data-focus tabindex={-1}>{p.title}</h2>
      <p>{p.summary}</p>
      <dl class="facts">
        {p.facts.map((f) => (
          <>
            <dt>{f.label}</dt>
            <dd>{f.value}</dd>
          </>
        ))}
      </dl>
      <form
        method="post"
        action={p.action}
        hx-post={p.action}
        hx-target="#main"
        hx-disabled-elt="find button"
      >
        <CsrfInput token={p.csrf} />
        {Object.entries(p.hidden).map(([name, value]) => (
          <input type="hidden" name={name} value={value} />
        ))}
        <Submit busy={p.busy ?? "Sending…"}>{p.confirm}</Submit> <a href={p.back}>Cancel</a>
      </form>
    </section>
  );
}

export interface TxResult {
  text: string;
  txHash: string;
  explorerUrl: string;
}

/** What was done, with the transaction's explorer link (the API's `explorerUrl`). */
export function TxResultNotice(props: { result?: TxResult }) {
  const r = props.result;
  if (!r) return null;
  return (
    <div class="notice ok" role="status" data-focus data-result>
      <p>{r.text}</p>
      <p>
        <a href={r.explorerUrl} rel="noopener" data-testid="tx-link">
          View the transaction <code>{`${r.txHash.slice(0, 10)}…`}</code>
        </a>
      </p>
    </div>
  );
}

/** "2 d 3 h", "1 h 5 min", "42 s": a duration people read. */
export function humanSeconds(total: number): string {
  const d = Math.floor(total / 86400),
    h = Math.floor((total % 86400) / 3600),
    m = Math.floor((total % 3600) / 60),
    s = total % 60;
  const parts = [d && `${d} d`, h && `${h} h`, m && `${m} min`, s && `${s} s`].filter(Boolean);
  return parts.length ? parts.slice(0, 2).join(" ") : "0 s";
}

/** The session's mode in words, shown on every review. */
export function modeText(mode: "test" | "live", chain: string): string {
  return mode === "test" ? `Test mode (${chain})` : `Live (${chain})`;
}
