/**
 * Agents and jobs in the dashboard, in the session's mode (test: testnet, live: production):
 * deploy, fund and deposit for an agent (agents live on the test network, so test mode only),
 * the merchant's agents with balances, reputation and recent payments; create a job from one of
 * its wallets and act on the jobs its wallets take part in. Every form is checked by the API's
 * schema (the same texts) and every action that sends a transaction goes form → review (what
 * exactly will happen) → confirm, and answers with the transaction's link. The review carries a
 * request key, so a confirm sent twice finds the first transactions instead of sending again.
 */
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { Deps } from "../../deps.ts";
import { M, MF } from "../../http/messages.ts";
import { DomainError } from "../../errors.ts";
import { parseFields } from "../../http/contract.ts";
import type { ProfileName } from "../../chain/profiles.ts";
import { formatUsdc } from "../../money.ts";
import * as agents from "./agents.service.ts";
import { agentsX402Port } from "./agents.x402.ts";
import { deployAgentBody } from "./agents.schemas.ts";
import { agentIdentifier } from "./agents.rules.ts";
import * as jobs from "../commerce/commerce.service.ts";
import { dashboardJobs } from "../commerce/commerce.dashboard.ts";
import {
  createJobBody,
  evaluateBody,
  fundBody,
  refundBody,
  submitBody,
} from "../commerce/commerce.schemas.ts";
import {
  controlledWallet,
  listWallets,
  walletAddresses,
  withdraw,
} from "../wallets/wallets.service.ts";
import { withdrawBody } from "../wallets/wallets.schemas.ts";
import { deposit, gatewayView } from "../x402/x402.gateway.ts";
import { depositBody } from "../x402/x402.schemas.ts";
import {
  type AgentItem,
  AgentsView,
  type AgentsViewProps,
  type JobAction,
  type JobItem,
  type ReviewData,
  ReviewView,
} from "../../../views/dashboard/agents.tsx";
import {
  attempt,
  type DashContext,
  dashProfileOf,
  formBody,
  merchantOf,
  modeOf,
  page,
  single,
  walletChoiceLabel,
} from "../dashboard/dashboard.http.tsx";
import type { DashboardSection } from "../dashboard/section.ts";

const ACTIONS: JobAction[] = ["fund", "submit", "complete", "reject", "refund"];
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The confirm's request key (made at review): a second confirm finds the first transactions. */
function requestKeyOf(v: Record<string, string>): string | undefined {
  return UUID.test(v.requestKey ?? "") ? `dashboard:${v.requestKey}` : undefined;
}

const isConfirm = (v: Record<string, string>) => v.step === "confirm";

export const agentsSection: DashboardSection = {
  id: "agents",
  label: "Agents",
  path: "/dashboard/agents",
  order: 38,
  routes(app, deps) {
    app.get("/agents", (c) => render(c, deps));

    app.post("/agents/deploy", async (c) => {
      const values = single(await formBody(c));
      if (modeOf(c) !== "test") return testOnly(c, deps);
      const parsed = parseFields(deployAgentBody, {
        name: values.name ?? "",
        metadataURI: values.metadataURI || undefined,
      });
      if (!parsed.ok) {
        const form = { name: values.name, metadataURI: values.metadataURI, errors: parsed.errors };
        return render(
          c,
          deps,
          { form, notice: { kind: "error", text: parsed.first.message } },
          400,
        );
      }
      // Reviewed first, as every other form here: a deploy registers an identity on chain.
      if (!isConfirm(values)) {
        const profile = agents.agentProfile(deps);
        return review(c, {
          heading: `Deploy agent ${parsed.data.name}`,
          effect:
            `An ERC-8004 identity named ${parsed.data.name} will be registered on ${profile}: a new managed wallet owns its identity token and its smart account. The service's operator pays the gas; no USDC moves.`,
          facts: [
            ["Name", parsed.data.name],
            ["Registration file", parsed.data.metadataURI ?? ""],
            ["Chain", profile],
          ],
          action: "/dashboard/agents/deploy",
          fields: { name: values.name ?? "", metadataURI: values.metadataURI ?? "" },
          confirm: "Confirm and deploy",
        });
      }
      const r = await attempt(() =>
        agents.deployAgent(deps, merchantOf(c), parsed.data, requestKeyOf(values))
      );
      return r.ok
        ? render(c, deps, {
          notice: { kind: "ok", text: `Agent deployed: ${r.value.agentId}.` },
          result: { txHash: r.value.txHash, explorerUrl: r.value.explorerUrl },
        })
        : render(c, deps, { notice: { kind: "error", text: r.error.message } }, r.error.status);
    });

    // Fund an agent: USDC from one of the merchant's wallets to the agent's smart account (the
    // API's POST /api/wallets/withdraw with the account as destination).
    app.post("/agents/fund", async (c) => {
      const v = single(await formBody(c));
      if (modeOf(c) !== "test") return testOnly(c, deps);
      const m = merchantOf(c);
      const found = await attempt(() => agents.merchantAgent(deps, m, v.agentId ?? ""));
      if (!found.ok) return refused(c, deps, found.error);
      const agent = found.value;
      const parsed = parseFields(withdrawBody, {
        amount: v.amount ?? "",
        destinationAddress: agent.scaAddress,
        walletId: v.walletId || undefined,
      });
      const agentId = v.agentId ?? "";
      if (!parsed.ok) {
        return render(c, deps, {
          agentForm: { agentId, kind: "fund", values: v, errors: parsed.errors },
          notice: { kind: "error", text: parsed.first.message },
        }, 400);
      }
      const profile = agents.agentProfile(deps);
      if (!isConfirm(v)) {
        const from = await attempt(async () => {
          // The API's source: the wallet named, else the payout wallet if it is managed.
          const walletId = parsed.data.walletId ??
            (m.walletProvider === "MANAGED" ? m.managedWalletId ?? undefined : undefined);
          if (walletId === undefined) throw new DomainError("withdraw_external_wallet");
          const w = await controlledWallet(deps, m.id, { walletId });
          if (!w) throw new DomainError("wallet_not_found");
          return w;
        });
        if (!from.ok) return refused(c, deps, from.error);
        const amount = formatUsdc(parsed.data.amount, { decimals: "fixed" });
        // Checked here, as the escrow and stream forms do, not first at Confirm (where the
        // withdrawal's own text spoke of a withdrawal).
        const held = await deps.chain.usdcBalance(profile, from.value.address as `0x${string}`);
        if (held < parsed.data.amount) {
          return amountShort(
            c,
            deps,
            { agentId, kind: "fund", values: v },
            MF.dashAgentFundShort(
              formatUsdc(held, { decimals: "fixed" }),
              amount,
            ),
          );
        }
        return review(c, {
          heading: `Fund agent ${agent.name}`,
          effect:
            `${amount} USDC will be sent from your wallet ${from.value.address} to the agent's smart account ${agent.scaAddress} on ${profile}.`,
          facts: [
            ["Agent", agentId],
            ["From wallet", from.value.address],
            ["To smart account", agent.scaAddress],
            ["Amount", `${amount} USDC`],
            ["Chain", profile],
          ],
          action: "/dashboard/agents/fund",
          fields: { agentId, walletId: v.walletId ?? "", amount: v.amount ?? "" },
          confirm: "Confirm and send",
        });
      }
      const r = await attempt(() => withdraw(deps, m, profile, parsed.data, requestKeyOf(v)));
      if (!r.ok) {
        // Spent meanwhile: said as funding, not as a withdrawal.
        const error = r.error.code === "withdraw_insufficient_balance"
          ? {
            ...r.error,
            message: MF.dashAgentFundShort(
              String(r.error.body.balance ?? "0.000000"),
              formatUsdc(parsed.data.amount, { decimals: "fixed" }),
            ),
          }
          : r.error;
        return refused(c, deps, error, { agentId, kind: "fund", values: v, errors: {} });
      }
      return render(c, deps, {
        notice: { kind: "ok", text: `Agent funded: ${r.value.amount} USDC sent to its account.` },
        result: { txHash: r.value.txHash, explorerUrl: r.value.explorerUrl },
      });
    });

    // Deposit from the agent's smart account into its gateway balance (POST
    // /api/x402/gateway/deposit with agentId).
    app.post("/agents/deposit", async (c) => {
      const v = single(await formBody(c));
      if (modeOf(c) !== "test") return testOnly(c, deps);
      const m = merchantOf(c);
      const agentId = v.agentId ?? "";
      const parsed = parseFields(depositBody, { agentId, amount: v.amount ?? "" });
      if (!parsed.ok) {
        return render(c, deps, {
          agentForm: { agentId, kind: "deposit", values: v, errors: parsed.errors },
          notice: { kind: "error", text: parsed.first.message },
        }, 400);
      }
      const x = { ...deps, agents: agentsX402Port(deps) };
      if (!isConfirm(v)) {
        const found = await attempt(async () => {
          // The x402 port's lookup (the same the deposit makes).
          const a = await agents.ownAgent(deps, m.id, { agentId });
          if (!a || a.tokenId === null) throw new DomainError("x402_deposit_not_controlled");
          return { agentId: agentIdentifier(a.chainId, a.tokenId), account: a.scaAddress };
        });
        if (!found.ok) return refused(c, deps, found.error);
        const amount = formatUsdc(parsed.data.amount, { decimals: "fixed" });
        const profile = agents.agentProfile(deps);
        const held = await deps.chain.usdcBalance(profile, found.value.account as `0x${string}`);
        if (held < parsed.data.amount) {
          return amountShort(
            c,
            deps,
            { agentId, kind: "deposit", values: v },
            MF.dashAgentDepositShort(formatUsdc(held, { decimals: "fixed" }), amount),
          );
        }
        return review(c, {
          heading: `Deposit to the gateway for agent ${found.value.agentId}`,
          effect:
            `${amount} USDC will move from the agent's smart account ${found.value.account} into its gateway balance on ${profile}, where its paid calls draw from.`,
          facts: [
            ["Agent", found.value.agentId],
            ["Smart account", found.value.account],
            ["Amount", `${amount} USDC`],
            ["Chain", profile],
          ],
          action: "/dashboard/agents/deposit",
          fields: { agentId, amount: v.amount ?? "" },
          confirm: "Confirm and deposit",
        });
      }
      const r = await attempt(() => deposit(x, m, parsed.data, requestKeyOf(v)));
      if (!r.ok) {
        return refused(c, deps, r.error, { agentId, kind: "deposit", values: v, errors: {} });
      }
      return render(c, deps, {
        notice: {
          kind: "ok",
          text:
            `Deposited ${r.value.amount} USDC: the gateway balance is ${r.value.gateway.total}.`,
        },
        result: { txHash: r.value.txHash, explorerUrl: r.value.explorerUrl },
      });
    });

    app.post("/agents/jobs/create", async (c) => {
      const v = single(await formBody(c));
      const m = merchantOf(c);
      const profile = dashProfileOf(c);
      const seconds = v.expiresInSeconds ?? "";
      const parsed = parseFields(createJobBody, {
        clientWalletId: v.clientWalletId ?? "",
        provider: v.provider ?? "",
        evaluator: v.evaluator ?? "",
        budget: v.budget ?? "",
        // The API's number; anything else goes to the schema as it is (and gets its text).
        expiresInSeconds: /^[0-9]{1,15}$/.test(seconds) ? Number(seconds) : seconds || undefined,
        description: v.description ?? "",
      });
      if (!parsed.ok) {
        return render(c, deps, {
          jobForm: { values: v, errors: parsed.errors },
          notice: { kind: "error", text: parsed.first.message },
        }, 400);
      }
      const input = parsed.data;
      if (!isConfirm(v)) {
        const client = await attempt(async () => {
          const w = await controlledWallet(deps, m.id, { walletId: input.clientWalletId });
          if (!w) throw new DomainError("job_client_not_controlled");
          if (!deps.chain.has(profile)) throw new DomainError("chain_not_configured");
          return w;
        });
        if (!client.ok) {
          return render(c, deps, {
            jobForm: { values: v, errors: { clientWalletId: client.error.message } },
            notice: { kind: "error", text: client.error.message },
            hint: client.error.hint,
          }, client.error.status);
        }
        const budget = formatUsdc(input.budget, { decimals: "fixed" });
        const expires = new Date(
          (Math.floor(deps.clock.now().getTime() / 1000) + input.expiresInSeconds) * 1000,
        ).toISOString();
        return review(c, {
          heading: "Create a job",
          effect:
            `Your wallet ${client.value.address} will create the job on ${profile} with a budget of ${budget} USDC (two transactions: create, then set the budget). No USDC moves yet: funding is the next step.`,
          facts: [
            ["Client (your wallet)", client.value.address],
            ["Provider", input.provider],
            ["Evaluator", input.evaluator],
            ["Budget", `${budget} USDC`],
            ["Expires", expires],
            ["Description", input.description],
            ["Chain", profile],
          ],
          action: "/dashboard/agents/jobs/create",
          fields: {
            clientWalletId: v.clientWalletId ?? "",
            provider: v.provider ?? "",
            evaluator: v.evaluator ?? "",
            budget: v.budget ?? "",
            expiresInSeconds: seconds,
            description: v.description ?? "",
          },
          confirm: "Confirm and create",
        });
      }
      const r = await attempt(() => jobs.createJob(deps, m, profile, input, requestKeyOf(v)));
      if (!r.ok) {
        return render(c, deps, {
          jobForm: { values: v, errors: {} },
          notice: { kind: "error", text: r.error.message },
          hint: r.error.hint,
        }, r.error.status);
      }
      const view = jobs.jobView(deps, r.value);
      return render(c, deps, {
        notice: { kind: "ok", text: `Job ${view.jobId} created (OPEN): fund it to start.` },
        result: { txHash: view.txHash, explorerUrl: view.explorerUrl },
      });
    });

    app.post("/agents/job", async (c) => {
      const v = single(await formBody(c));
      const m = merchantOf(c);
      const profile = dashProfileOf(c);
      const action = ACTIONS.find((a) => a === v.action);
      if (!action) return refused(c, deps, { status: 404, message: M.jobNotFound });
      const parsed = parseAction(action, v);
      if (!parsed.ok) {
        return render(c, deps, { notice: { kind: "error", text: parsed.first.message } }, 400);
      }
      const jobId = v.jobId ?? "";
      if (!isConfirm(v)) {
        const found = await attempt(async () =>
          jobs.jobView(deps, await jobs.getJob(deps, profile, jobId))
        );
        if (!found.ok) return refused(c, deps, found.error);
        const j = found.value;
        return review(c, {
          heading: `${ACTION_HEADING[action]}: job ${j.jobId}`,
          effect: effectOf(action, j, v.deliverableData ?? ""),
          facts: [
            ["Job", j.jobId],
            ["Status now", j.status],
            ["Budget", `${j.budget} USDC`],
            ["Client", j.client],
            ["Provider", j.provider],
            ["Evaluator", j.evaluator],
            ["Expires", j.expiresAt],
            ...(action === "submit"
              ? [["Deliverable", v.deliverableData ?? ""] as [string, string]]
              : []),
            ...(action === "reject" && v.reason ? [["Reason", v.reason] as [string, string]] : []),
            ["Chain", profile],
          ],
          action: "/dashboard/agents/job",
          fields: {
            jobId,
            action,
            walletId: v.walletId ?? "",
            ...(action === "submit" ? { deliverableData: v.deliverableData ?? "" } : {}),
            ...(action === "reject" && v.reason ? { reason: v.reason } : {}),
          },
          confirm: "Confirm",
        });
      }
      const key = requestKeyOf(v);
      const walletId = v.walletId ?? "";
      const r = await attempt(async () => {
        switch (action) {
          case "fund": {
            const f = await jobs.fund(deps, m, profile, { jobId, clientWalletId: walletId }, key);
            return {
              text: "Job funded: the budget is held by the job contract.",
              txHash: f.fundTx,
              explorerUrl: f.explorerUrl,
            };
          }
          case "submit": {
            const s = await jobs.submit(deps, m, profile, {
              jobId,
              providerWalletId: walletId,
              deliverableData: v.deliverableData ?? "",
            }, key);
            return { text: "Deliverable submitted for evaluation.", ...s };
          }
          case "complete":
          case "reject": {
            const e = await jobs.evaluate(deps, m, profile, action, {
              jobId,
              evaluatorWalletId: walletId,
              reason: v.reason || undefined,
            }, key);
            const text = action === "complete"
              ? "Job completed: the provider has been paid."
              : "Job rejected: the budget went back to the client.";
            return { text, ...e };
          }
          case "refund": {
            const f = await jobs.refund(deps, m, profile, { jobId, clientWalletId: walletId }, key);
            return { text: "Refund claimed: the budget went back to the client.", ...f };
          }
        }
      });
      if (!r.ok) return refused(c, deps, r.error);
      return render(c, deps, {
        notice: { kind: "ok", text: r.value.text },
        result: { txHash: r.value.txHash, explorerUrl: r.value.explorerUrl },
      });
    });
  },
};

const ACTION_HEADING: Record<JobAction, string> = {
  fund: "Fund the budget",
  submit: "Submit the deliverable",
  complete: "Approve and pay the provider",
  reject: "Reject the job",
  refund: "Claim the refund",
};

/** The job action's form, held to the API's body schema for that action. */
function parseAction(action: JobAction, v: Record<string, string>) {
  const jobId = v.jobId ?? "";
  const walletId = v.walletId ?? "";
  switch (action) {
    case "fund":
      return parseFields(fundBody, { jobId, clientWalletId: walletId });
    case "refund":
      return parseFields(refundBody, { jobId, clientWalletId: walletId });
    case "submit":
      return parseFields(submitBody, {
        jobId,
        providerWalletId: walletId,
        deliverableData: v.deliverableData ?? "",
      });
    default:
      return parseFields(evaluateBody, {
        jobId,
        evaluatorWalletId: walletId,
        reason: v.reason || undefined,
      });
  }
}

/** What confirming the action does, in the job's terms. */
function effectOf(action: JobAction, j: jobs.JobView, deliverable: string): string {
  switch (action) {
    case "fund":
      return `${j.budget} USDC will move from the client wallet ${j.client} into the job contract ${j.contractAddress}, held there until the job is completed, rejected or refunded.`;
    case "submit":
      return `The deliverable ${deliverable} will be recorded on the job (its keccak256 on chain) for the evaluator ${j.evaluator} to decide on; the budget stays held.`;
    case "complete":
      return `The job contract will pay the held budget of ${j.budget} USDC to the provider ${j.provider}, and the job ends COMPLETED.`;
    case "reject":
      return `The job ends REJECTED and the job contract returns any held budget (${j.budget} USDC) to the client ${j.client}.`;
    case "refund":
      return `The job expired at ${j.expiresAt}: the job contract returns the held budget of ${j.budget} USDC to the client ${j.client}, and the job ends EXPIRED.`;
  }
}

/** What the merchant's wallets may do in each state (the contract has the final word). */
function actionsFor(
  status: string,
  expired: boolean,
  w: { client: string | null; provider: string | null; evaluator: string | null },
): JobItem["actions"] {
  const out: JobItem["actions"] = [];
  if (status === "OPEN" && w.client) out.push({ action: "fund", walletId: w.client });
  if (status === "FUNDED" && w.provider && !expired) {
    out.push({ action: "submit", walletId: w.provider });
  }
  if (status === "SUBMITTED" && w.evaluator) {
    out.push({ action: "complete", walletId: w.evaluator });
  }
  if ((status === "FUNDED" || status === "SUBMITTED") && w.evaluator) {
    out.push({ action: "reject", walletId: w.evaluator });
  }
  if ((status === "FUNDED" || status === "SUBMITTED") && expired && w.client) {
    out.push({ action: "refund", walletId: w.client });
  }
  return out;
}

function review(c: DashContext, data: Omit<ReviewData, "requestKey">) {
  return page(c, {
    title: "Review",
    section: "agents",
    body: (
      <ReviewView csrf={c.get("csrfToken")} review={{ ...data, requestKey: crypto.randomUUID() }} />
    ),
  });
}

/** A service's refusal, inline: the API's text (and hint), nothing written. */
function refused(
  c: DashContext,
  deps: Deps,
  error: { status: ContentfulStatusCode; message: string; hint?: string },
  agentForm?: AgentsViewProps["agentForm"],
) {
  return render(
    c,
    deps,
    { notice: { kind: "error", text: error.message }, hint: error.hint, agentForm },
    error.status,
  );
}

/** A form's amount more than its source holds: refused at its review, with the form kept. */
function amountShort(
  c: DashContext,
  deps: Deps,
  form: { agentId: string; kind: "fund" | "deposit"; values: Record<string, string> },
  text: string,
) {
  return render(c, deps, {
    agentForm: { ...form, errors: { amount: text } },
    notice: { kind: "error", text },
  }, 400);
}

function testOnly(c: DashContext, deps: Deps) {
  return render(c, deps, { notice: { kind: "error", text: M.dashAgentsTestMode } }, 400);
}

/** An agent with its gateway balance and the registry's feedback; unreadable parts are null. */
async function agentItem(
  deps: Deps,
  m: ReturnType<typeof merchantOf>,
  a: agents.AgentView,
): Promise<AgentItem> {
  const [gateway, rep] = await Promise.all([
    gatewayView(deps, a.chain as ProfileName, a.scaAddress as `0x${string}`).catch(() => null),
    agents.reputation(deps, m, a.agentId).catch(() => null),
  ]);
  return {
    ...a,
    gatewayBalance: gateway?.total ?? null,
    onChainFeedback: rep
      ? {
        count: rep.reputationSummary.onChainFeedbackCount,
        average: rep.reputationSummary.onChainAverage,
      }
      : null,
  };
}

async function render(
  c: DashContext,
  deps: Deps,
  extra: Partial<AgentsViewProps> = {},
  status?: ContentfulStatusCode,
) {
  const m = merchantOf(c);
  const mode = modeOf(c);
  const profile = dashProfileOf(c);
  const wallets = await walletAddresses(deps, m.id);
  const [agentList, jobList, choices] = await Promise.all([
    // Agents live on the test network: none in live mode, none where it is not configured.
    mode !== "test"
      ? Promise.resolve(null)
      : !deps.chain.has("testnet")
      ? Promise.resolve([])
      : agents.listAgents(deps, m).then((list) =>
        Promise.all(list.map((a) => agentItem(deps, m, a)))
      ),
    dashboardJobs(deps, m, profile, wallets),
    // The pickers name each wallet and its balance, as Escrow's and Streams' do.
    listWallets(deps, m, [profile]),
  ]);
  const labels = new Map(choices.map((w) => [w.id, walletChoiceLabel(w, profile)]));
  const now = deps.clock.now().getTime();
  const items: JobItem[] = jobList.map(({ view, walletOf }) => ({
    ...view,
    mine: {
      client: walletOf.client !== null,
      provider: walletOf.provider !== null,
      evaluator: walletOf.evaluator !== null,
    },
    actions: actionsFor(view.status, Date.parse(view.expiresAt) <= now, walletOf),
  }));
  return page(c, {
    title: "Agents",
    section: "agents",
    status,
    body: (
      <AgentsView
        csrf={c.get("csrfToken")}
        chain={profile}
        wallets={wallets.map((w) => ({ ...w, label: labels.get(w.id) }))}
        agents={agentList}
        jobs={items}
        {...extra}
      />
    ),
  });
}
