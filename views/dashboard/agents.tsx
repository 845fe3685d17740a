/**
 * Agents and jobs: the merchant's ERC-8004 agents (deploy, smart account, USDC balance,
 * reputation, recent payments) and the ERC-8183 jobs it takes part in (state, parties,
 * deliverable, and the actions its wallets may take in that state).
 */
import { Badge, CsrfInput, EmptyState, Field, Notice, type NoticeData, Submit } from "./shell.tsx";

export interface AgentItem {
  name: string;
  agentId: string;
  scaAddress: string;
  ownerNode: string;
  metadataURI: string;
  usdcBalance: string;
  reputation: number;
  paymentCount: number;
  totalPaid: number;
  recentPayments: { id: string; amount: number; status: string; timestamp: string }[];
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

export interface AgentsViewProps {
  csrf: string;
  agents: AgentItem[];
  jobs: JobItem[];
  notice?: NoticeData;
  form?: { name?: string; metadataURI?: string; errors: Record<string, string> };
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
      <DeployForm {...props} />
      <h2>Agents</h2>
      {props.agents.length === 0
        ? <EmptyState title="No agents yet." />
        : props.agents.map((a) => <AgentPanel key={a.agentId} agent={a} />)}
      <h2>Jobs</h2>
      {props.jobs.length === 0
        ? (
          <EmptyState title="No jobs yet.">
            <p>Create one with POST /api/jobs/create from one of your wallets.</p>
          </EmptyState>
        )
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

function AgentPanel(props: { agent: AgentItem }) {
  const a = props.agent;
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
        <dt>Reputation</dt>
        <dd data-reputation>{a.reputation} / 100 ({a.paymentCount} payments)</dd>
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
    </div>
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
          <time datetime={j.expiresAt}>{j.expiresAt}</time>
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
          class={a.action === "submit" ? undefined : "inline"}
        >
          <CsrfInput token={props.csrf} />
          <input type="hidden" name="jobId" value={j.jobId} />
          <input type="hidden" name="chain" value={j.chain} />
          <input type="hidden" name="action" value={a.action} />
          <input type="hidden" name="walletId" value={a.walletId} />
          {a.action === "submit" && (
            <Field
              name="deliverableData"
              id={`f-deliverable-${j.jobId}`}
              label="Deliverable (ipfs:// or https://)"
              maxLength={2048}
            />
          )}
          <Submit busy="Sending…">{ACTION_LABEL[a.action]}</Submit>
        </form>
      ))}
    </div>
  );
}
