/**
 * Agents and jobs in the dashboard: deploy an agent (the API's schema checks the form), the
 * merchant's agents with balance, reputation and recent payments, and the jobs its wallets take
 * part in with the actions each of its wallets may take in the job's state.
 */
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { Deps } from "../../deps.ts";
import { M } from "../../http/messages.ts";
import { DomainError } from "../../errors.ts";
import { parseFields } from "../../http/contract.ts";
import type { ProfileName } from "../../chain/profiles.ts";
import * as agents from "./agents.service.ts";
import { deployAgentBody } from "./agents.schemas.ts";
import * as jobs from "../commerce/commerce.service.ts";
import { dashboardJobs } from "../commerce/commerce.dashboard.ts";
import { submitBody } from "../commerce/commerce.schemas.ts";
import { walletAddresses } from "../wallets/wallets.service.ts";
import {
  AgentsView,
  type AgentsViewProps,
  type JobAction,
  type JobItem,
} from "../../../views/dashboard/agents.tsx";
import {
  attempt,
  type DashContext,
  dashProfileOf,
  formBody,
  merchantOf,
  page,
  single,
} from "../dashboard/dashboard.http.tsx";
import type { DashboardSection } from "../dashboard/section.ts";

export const agentsSection: DashboardSection = {
  id: "agents",
  label: "Agents",
  path: "/dashboard/agents",
  order: 37,
  routes(app, deps) {
    app.get("/agents", (c) => render(c, deps));

    app.post("/agents/deploy", async (c) => {
      const values = single(await formBody(c));
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
      const r = await attempt(() => agents.deployAgent(deps, merchantOf(c), parsed.data));
      return r.ok
        ? render(c, deps, { notice: { kind: "ok", text: `Agent deployed: ${r.value.agentId}.` } })
        : render(c, deps, { notice: { kind: "error", text: r.error.message } }, r.error.status);
    });

    app.post("/agents/job", async (c) => {
      const v = single(await formBody(c));
      const m = merchantOf(c);
      // Only the session's mode's chain: a job of the other environment is not found.
      const profile = deps.chain.profiles().find((p) => p === v.chain && p === dashProfileOf(c)) as
        | ProfileName
        | undefined;
      const action = v.action as JobAction;
      if (action === "submit" && !isDeliverable(v.deliverableData ?? "")) {
        return render(c, deps, { notice: { kind: "error", text: M.jobDeliverable } }, 400);
      }
      const r = await attempt(async () => {
        if (!profile) throw new DomainError("job_not_found");
        const jobId = v.jobId ?? "";
        const walletId = v.walletId ?? "";
        switch (action) {
          case "fund":
            await jobs.fund(deps, m, profile, { jobId, clientWalletId: walletId });
            return "Job funded: the budget is held by the job contract.";
          case "submit":
            await jobs.submit(deps, m, profile, {
              jobId,
              providerWalletId: walletId,
              deliverableData: v.deliverableData ?? "",
            });
            return "Deliverable submitted for evaluation.";
          case "complete":
          case "reject":
            await jobs.evaluate(deps, m, profile, action, { jobId, evaluatorWalletId: walletId });
            return action === "complete"
              ? "Job completed: the provider has been paid."
              : "Job rejected: the budget went back to the client.";
          case "refund":
            await jobs.refund(deps, m, profile, { jobId, clientWalletId: walletId });
            return "Refund claimed: the budget went back to the client.";
          default:
            throw new DomainError("job_not_found");
        }
      });
      return r.ok
        ? render(c, deps, { notice: { kind: "ok", text: r.value } })
        : render(c, deps, { notice: { kind: "error", text: r.error.message } }, r.error.status);
    });
  },
};

/** The submit form's deliverable, held to the API's rule (submitBody). */
function isDeliverable(text: string): boolean {
  return submitBody.shape.deliverableData.safeParse(text).success;
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

async function render(
  c: DashContext,
  deps: Deps,
  extra: Partial<AgentsViewProps> = {},
  status?: ContentfulStatusCode,
) {
  const m = merchantOf(c);
  const [agentList, jobList] = await Promise.all([
    agents.listAgents(deps, m),
    walletAddresses(deps, m.id).then((wallets) =>
      dashboardJobs(deps, m, wallets, [dashProfileOf(c)])
    ),
  ]);
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
    body: <AgentsView csrf={c.get("csrfToken")} agents={agentList} jobs={items} {...extra} />,
  });
}
