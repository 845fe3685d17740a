/**
 * Agents and jobs: the merchant's ERC-8004 agents (deploy, smart account, USDC and gateway
 * balances, reputation, recent payments, fund and deposit forms; test mode only) and the
 * ERC-8183 jobs it takes part in on the session's chain (create form, state, parties,
 * deliverable, and the actions its wallets may take in that state). Every action that sends a
 * transaction shows a review first (ReviewView), and its result links to the transaction.
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
  Time,
} from "./shell.tsx";

export interface AgentItem {
  name: string;
  tokenId: string;
  agentId: string;
  scaAddress: string;
  ownerNode: string;
  metadataURI: string;
  usdcBalance: string;
  reputation: number;
  paymentCount: number;
  totalPaid: number;
  recentPayments: { id: string; amount: number; status: string; timestamp: string }[];
  /** USDC in the agent's gateway balance (null: unreadable now). */
  gatewayBalance: string | null;
  /** The reputation registry's feedback on the agent (null: unreadable now). */
  onChainFeedback: { count: number; average: number } | null;
}

export type JobAction = "fund" | "submit" | "complete" | "reject" | "refund";

export interface JobItem {
  jobId: string;
  chain: string;
  status: string;
  budget: string;
  description: string;
  client: string;
  provider: string;
  evaluator: string;
  expiresAt: string;
  deliverableData: string | null;
  deliverableHash: string | null;
  /** Which parties are the merchant's own wallets. */
  mine: { client: boolean; provider: boolean; evaluator: boolean };
  /** What the merchant may do now, and as which of its wallets. */
  actions: { action: JobAction; walletId: string }[];
}

type FormState = { values: Record<string, string>; errors: Record<string, string> };

export interface AgentsViewProps {
  csrf: string;
  /** The session's chain (its mode): where jobs are created and listed. */
  chain: string;
  /** The merchant's wallets (a job's client, an agent's funding source). */
  wallets: { id: string; address: string; label?: string }[];
  /** Null in live mode: agents run on the test network only. */
  agents: AgentItem[] | null;
  jobs: JobItem[];
  notice?: NoticeData;
  /** The refusal's hint, under its notice. */
  hint?: string;
  /** The transaction an action sent. */
  result?: { txHash: string; explorerUrl: string };
  form?: { name?: string; metadataURI?: string; errors: Record<string, string> };
  jobForm?: FormState;
  agentForm?: FormState & { agentId: string; kind: "fund" | "deposit" };
}

/** What confirming will do: the facts, the effect in words, and the form that does it. */
export interface ReviewData {
  heading: string;
  effect: string;
  facts: [string, string][];
  action: string;
  /** The form's values, sent again with the confirm (and checked again). */
  fields: Record<string, string>;
  confirm: string;
  requestKey: string;
}

const JOB_TONE: Record<string, "ok" | "warn" | "bad" | "neutral"> = {
  OPEN: "neutral",
  FUNDED: "warn",
  SUBMITTED: "warn",
  COMPLETED: "ok",
  REJECTED: "bad",
  EXPIRED: "bad",
};

const ACTION_LABEL: Record<JobAction, string> = {
  fund: "Fund the budget",
  submit: "Submit the deliverable",
  complete: "Approve and pay the provider",
  reject: "Reject (refund the client)",
  refund: "Claim the refund",
};

export function AgentsView(props: AgentsViewProps) {
  return (
    <section aria-labelledby="agents-title">
      <h1 id="agents-title">Agents and jobs</h1>
      <Notice notice={props.notice} />
      {props.hint && <p class="hint" data-hint>{props.hint}</p>}
      {props.result && (
        <p data-result>
          Transaction <code>{props.result.txHash}</code>{" "}
          <a href={props.result.explorerUrl} target="_blank" rel="noopener">
            View the transaction
          </a>
        </p>
      )}
      {props.agents === null
        ? (
          <>
            <h2>Agents</h2>
            <p data-agents-test-only>
              Agents run on the test network. Switch to test mode to deploy, fund and watch them.
            </p>
          </>
        )
        : (
          <>
            <DeployForm {...props} />
            <h2>Agents</h2>
            {props.agents.length === 0
              ? <EmptyState title="No agents yet." />
              : props.agents.map((a) => <AgentPanel key={a.agentId} agent={a} {...props} />)}
          </>
        )}
      <h2>Jobs</h2>
      <CreateJobForm {...props} />
      {props.jobs.length === 0
        ? <EmptyState title="No jobs yet." />
        : props.jobs.map((j) => (
          <JobPanel
            key={`${j.chain}:${j.jobId}`}
            csrf={props.csrf}
            job={j}
          />
        ))}
    </section>
  );
}

/** The review before a transaction: what will happen, then Confirm (or back, nothing sent). */
export function ReviewView(props: { csrf: string; review: ReviewData }) {
  const r = props.review;
  return (
    <section aria-labelledby="review-title" data-review>
      <h1 id="review-title">Review: {r.heading}</h1>
      <p data-effect>{r.effect}</p>
      <dl class="facts">
        {r.facts.map(([k, v]) => (
          <>
            <dt>{k}</dt>
            <dd>{v}</dd>
          </>
        ))}
      </dl>
      <form method="post" action={r.action} hx-post={r.action} hx-target="#main" class="panel">
        <CsrfInput token={props.csrf} />
        {Object.entries(r.fields).map(([k, v]) => (
          <input
            key={k}
            type="hidden"
            name={k}
            value={v}
          />
        ))}
        <input type="hidden" name="step" value="confirm" />
        <input type="hidden" name="requestKey" value={r.requestKey} />
        <Submit busy="Sending…">{r.confirm}</Submit>{" "}
        <a href="/dashboard/agents">Back (nothing is sent)</a>
      </form>
    </section>
  );
}

function walletOptions(wallets: { id: string; address: string; label?: string }[]) {
  return wallets.map((w) => ({ value: w.id, label: w.label ?? w.address }));
}

function CreateJobForm(props: AgentsViewProps) {
  const values = props.jobForm?.values ?? {};
  const errors = props.jobForm?.errors ?? {};
  if (props.wallets.length === 0) {
    return <p>Create a wallet (Wallets) to be a job's client.</p>;
  }
  return (
    <form
      method="post"
      action="/dashboard/agents/jobs/create"
      hx-post="/dashboard/agents/jobs/create"
      hx-target="#main"
      class="panel"
      aria-labelledby="create-job-title"
    >
      <h3 id="create-job-title">Create a job on {props.chain}</h3>
      <CsrfInput token={props.csrf} />
      <Select
        name="clientWalletId"
        label="Client wallet (pays the budget)"
        options={walletOptions(props.wallets)}
        value={values.clientWalletId}
        error={errors.clientWalletId}
      />
      <Field
        name="provider"
        label="Provider address (does the work, is paid)"
        value={values.provider}
        error={errors.provider}
      />
      <Field
        name="evaluator"
        label="Evaluator address (completes or rejects)"
        value={values.evaluator}
        error={errors.evaluator}
      />
      <Field
        name="budget"
        label="Budget (USDC)"
        inputMode="decimal"
        value={values.budget}
        error={errors.budget}
      />
      <Field
        name="expiresInSeconds"
        label="Expires in (seconds, 60 to 31536000)"
        inputMode="numeric"
        value={values.expiresInSeconds ?? "86400"}
        error={errors.expiresInSeconds}
      />
      <Field
        name="description"
        label="Description"
        maxLength={1000}
        value={values.description}
        error={errors.description}
      />
      <input type="hidden" name="step" value="review" />
      <Submit busy="Checking…">Review the job</Submit>
    </form>
  );
}
function DeployForm(props: AgentsViewProps) {
  const errors = props.form?.errors ?? {};
  return (
    <form
      method="post"
      action="/dashboard/agents/deploy"
      hx-post="/dashboard/agents/deploy"
      hx-target="#main"
      class="panel"
    >
      <h2>Deploy an agent</h2>
      <CsrfInput token={props.csrf} />
      <Field
        name="name"
        label="Name"
        maxLength={100}
        value={props.form?.name}
        error={errors.name}
      />
      <Field
        name="metadataURI"
        label="Registration file (ipfs:// or https://)"
        maxLength={2048}
        value={props.form?.metadataURI}
        error={errors.metadataURI}
      />
      <Submit busy="Deploying…">Deploy agent</Submit>
    </form>
  );
}

function AgentPanel(props: AgentsViewProps & { agent: AgentItem }) {
  const a = props.agent;
  const form = props.agentForm?.agentId === a.agentId ? props.agentForm : undefined;
  return (
    <div class="panel" data-agent={a.agentId}>
      <h3>
        {a.name} <code>{a.agentId}</code>
      </h3>
      <dl class="facts">
        <dt>Smart account</dt>
        <dd>
          <code>{a.scaAddress}</code>
        </dd>
        <dt>Owner</dt>
        <dd>
          <code>{a.ownerNode}</code>
        </dd>
        <dt>Balance</dt>
        <dd data-balance>{a.usdcBalance} USDC</dd>
        <dt>Gateway balance</dt>
        <dd data-gateway>
          {a.gatewayBalance === null ? "unavailable" : `${a.gatewayBalance} USDC`}
        </dd>
        <dt>Reputation</dt>
        <dd data-reputation>{a.reputation} / 100 ({a.paymentCount} payments)</dd>
        <dt>Registry feedback</dt>
        <dd data-feedback>
          {a.onChainFeedback === null
            ? "unavailable"
            : `${a.onChainFeedback.count} entries, average ${a.onChainFeedback.average}`}
        </dd>
        <dt>Total paid</dt>
        <dd>{a.totalPaid} USDC</dd>
        <dt>Registration</dt>
        <dd>
          <code>
            {a.metadataURI.length > 80 ? `${a.metadataURI.slice(0, 77)}…` : a.metadataURI}
          </code>
        </dd>
      </dl>
      {a.recentPayments.length > 0 && (
        <table>
          <caption>Recent payments</caption>
          <thead>
            <tr>
              <th>Payment</th>
              <th>Amount</th>
              <th>Status</th>
              <th>When</th>
            </tr>
          </thead>
          <tbody>
            {a.recentPayments.map((p) => (
              <tr>
                <td>
                  <code>{p.id}</code>
                </td>
                <td>{p.amount}</td>
                <td>{p.status}</td>
                <td>
                  <time datetime={p.timestamp}>{p.timestamp}</time>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {a.recentPayments.length === 0 && <p>No payments yet.</p>}
      <AgentForm
        csrf={props.csrf}
        agent={a}
        kind="fund"
        wallets={props.wallets}
        form={form?.kind === "fund" ? form : undefined}
      />
      <AgentForm
        csrf={props.csrf}
        agent={a}
        kind="deposit"
        wallets={props.wallets}
        form={form?.kind === "deposit" ? form : undefined}
      />
    </div>
  );
}

function AgentForm(props: {
  csrf: string;
  agent: AgentItem;
  kind: "fund" | "deposit";
  wallets: { id: string; address: string }[];
  form?: FormState;
}) {
  const a = props.agent;
  const id = `${props.kind}-${a.tokenId}`;
  const values = props.form?.values ?? {};
  const errors = props.form?.errors ?? {};
  const action = `/dashboard/agents/${props.kind}`;
  return (
    <form
      method="post"
      action={action}
      hx-post={action}
      hx-target="#main"
      class="panel"
      aria-labelledby={`${id}-title`}
      data-form={props.kind}
    >
      <h4 id={`${id}-title`}>
        {props.kind === "fund"
          ? "Fund the agent (from your wallet to its account)"
          : "Deposit to its gateway balance (from its account)"}
      </h4>
      <CsrfInput token={props.csrf} />
      <input type="hidden" name="agentId" value={a.agentId} />
      <input type="hidden" name="step" value="review" />
      {props.kind === "fund" && (
        <Select
          name="walletId"
          id={`f-${id}-wallet`}
          label="From wallet"
          options={walletOptions(props.wallets)}
          value={values.walletId}
          error={errors.walletId}
        />
      )}
      <Field
        name="amount"
        id={`f-${id}-amount`}
        label={props.kind === "fund" ? "Amount to send (USDC)" : "Amount to deposit (USDC)"}
        inputMode="decimal"
        value={values.amount}
        error={props.kind === "fund" ? errors.amount : errors.amount ?? errors.walletId}
      />
      <Submit busy="Checking…">
        {props.kind === "fund" ? "Review funding" : "Review deposit"}
      </Submit>
    </form>
  );
}

function Party(props: { label: string; address: string; mine: boolean }) {
  return (
    <>
      <dt>{props.label}</dt>
      <dd>
        <code>{props.address}</code> {props.mine && <Badge tone="neutral">yours</Badge>}
      </dd>
    </>
  );
}

function JobPanel(props: { csrf: string; job: JobItem }) {
  const j = props.job;
  return (
    <div class="panel" data-job={j.jobId}>
      <h3>
        Job <code>{j.jobId}</code> <Badge tone={JOB_TONE[j.status] ?? "neutral"}>{j.status}</Badge>
      </h3>
      <p>{j.description}</p>
      <dl class="facts">
        <dt>Budget</dt>
        <dd>{j.budget} USDC</dd>
        <Party label="Client" address={j.client} mine={j.mine.client} />
        <Party label="Provider" address={j.provider} mine={j.mine.provider} />
        <Party label="Evaluator" address={j.evaluator} mine={j.mine.evaluator} />
        <dt>Expires</dt>
        <dd>
          <Time iso={j.expiresAt} />
        </dd>
        {j.deliverableData && (
          <>
            <dt>Deliverable</dt>
            <dd data-deliverable>
              {j.deliverableData} <code>{j.deliverableHash}</code>
            </dd>
          </>
        )}
      </dl>
      {j.actions.map((a) => (
        <form
          method="post"
          action="/dashboard/agents/job"
          hx-post="/dashboard/agents/job"
          hx-target="#main"
          class={a.action === "submit" || a.action === "reject" ? undefined : "inline"}
        >
          <CsrfInput token={props.csrf} />
          <input type="hidden" name="jobId" value={j.jobId} />
          <input type="hidden" name="action" value={a.action} />
          <input type="hidden" name="walletId" value={a.walletId} />
          <input type="hidden" name="step" value="review" />
          {a.action === "submit" && (
            <Field
              name="deliverableData"
              id={`f-deliverable-${j.jobId}`}
              label="Deliverable (ipfs:// or https://)"
              maxLength={2048}
            />
          )}
          {a.action === "reject" && (
            <Field
              name="reason"
              id={`f-reason-${j.jobId}`}
              label="Reason (optional, hashed on chain)"
              maxLength={500}
            />
          )}
          <Submit busy="Checking…">{ACTION_LABEL[a.action]}</Submit>
        </form>
      ))}
    </div>
  );
}
