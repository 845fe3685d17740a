/**
 * The module list: every domain module declares its HTTP API, pages, dashboard sections and jobs
 * here once.
 * Adding a module is one entry.
 */
import type { Deps } from "../deps.ts";
import type { JobDefinition } from "../queue/registry.ts";
import type { AppModule } from "./module.ts";
import { chainJobs } from "../chain/jobs.ts";
import { explorerPages } from "../chain/explorer.pages.tsx";
import { rateLimitJobs } from "../http/rate-limit.jobs.ts";
import { claimsCleanupJob } from "../db/claims.jobs.ts";
import { mailModule } from "./mail/mail.module.ts";
import { merchantsRoutes } from "./merchants/merchants.api.ts";
import { merchantJobs } from "./merchants/merchants.jobs.ts";
import { keysRoutes } from "./keys/keys.api.ts";
import { consumersRoutes } from "./consumers/consumers.api.ts";
import { webhooksRoutes } from "./webhooks/webhooks.api.ts";
import { webhookJobs } from "./webhooks/webhooks.jobs.ts";
import { idempotencyCleanupJob } from "../http/idempotency.jobs.ts";
import { paymentsRoutes } from "./payments/payments.api.ts";
import { paymentJobs } from "./payments/payments.jobs.ts";
import { settlementHandlers } from "./payments/payments.settlement.ts";
import { checkoutPages } from "./payments/payments.pages.tsx";
import { rpcRoutes } from "../http/rpc-route.ts";
import { assetPages } from "../http/assets.ts";
import { dashboardPages } from "./dashboard/dashboard.pages.tsx";
import type { RouteDoc } from "../http/contract.ts";
import { docsApi, docsRoutes } from "../http/openapi.ts";
import { docOf } from "../http/route.ts";
import { walletsRoutes } from "./wallets/wallets.api.ts";
import { streamsRoutes } from "./streams/streams.api.ts";
import { streamJobs, streamsOnStart } from "./streams/streams.jobs.ts";
import { escrowRoutes } from "./escrow/escrow.api.ts";
import { escrowJobs, escrowOnStart } from "./escrow/escrow.jobs.ts";
import { bridgeModule } from "./bridge/bridge.module.ts";
import { x402Module } from "./x402/x402.module.ts";
import { x402ChannelsModule } from "./x402/x402.channels.module.ts";
import { payrollRoutes } from "./payroll/payroll.api.ts";
import { payrollJobs, payrollOnStart } from "./payroll/payroll.jobs.ts";
import { jobsRoutes } from "./commerce/commerce.api.ts";
import { commerceJobs, commerceOnStart } from "./commerce/commerce.jobs.ts";
import { agentsRoutes } from "./agents/agents.api.ts";
import { agentJobs } from "./agents/agents.jobs.ts";
import { agentsX402Port } from "./agents/agents.x402.ts";
import type { DashboardSection } from "./dashboard/section.ts";
import { keysSection } from "./keys/keys.section.tsx";
import { linksSection } from "./payments/payments.links.section.tsx";
import { overviewSection } from "./payments/payments.overview.section.tsx";
import { paymentsSection } from "./payments/payments.section.tsx";
import { webhooksSection } from "./webhooks/webhooks.section.tsx";
import { walletsSection } from "./wallets/wallets.section.tsx";
import { streamsSection } from "./streams/streams.section.tsx";
import { escrowSection } from "./escrow/escrow.section.tsx";
import { x402Section } from "./x402/x402.section.tsx";
import { payrollSection } from "./payroll/payroll.section.tsx";
import { agentsSection } from "./agents/agents.section.tsx";

export type { AppModule } from "./module.ts";

/** Platform jobs: transaction recovery, rate-limit window cleanup; the local explorer pages. */
export const platformModule: AppModule = {
  name: "platform",
  jobs: [...chainJobs, ...rateLimitJobs, idempotencyCleanupJob, claimsCleanupJob],
  pages: explorerPages,
};

export const modules: AppModule[] = [
  platformModule,
  mailModule,
  { name: "merchants", table: merchantsRoutes, jobs: merchantJobs },
  { name: "keys", table: keysRoutes, sections: [keysSection] },
  { name: "wallets", table: walletsRoutes, sections: [walletsSection] },
  { name: "consumers", table: consumersRoutes },
  { name: "webhooks", table: webhooksRoutes, jobs: webhookJobs, sections: [webhooksSection] },
  {
    name: "payments",
    table: paymentsRoutes,
    pages: checkoutPages,
    sections: [overviewSection, paymentsSection, linksSection],
    jobs: paymentJobs,
    logHandlers: settlementHandlers,
  },
  {
    name: "streams",
    table: streamsRoutes,
    sections: [streamsSection],
    jobs: streamJobs,
    // Creates a killed process left half done are finished from the chain (streams.recovery.ts).
    onStart: streamsOnStart,
  },
  {
    name: "escrow",
    table: escrowRoutes,
    sections: [escrowSection],
    jobs: escrowJobs,
    // Escrows whose action was mined while the process stopped are caught up (escrow.catchup.ts).
    onStart: escrowOnStart,
  },
  bridgeModule,
  { ...x402Module({ agentPort: agentsX402Port }), sections: [x402Section] },
  // The x402 batch-settlement claim job (x402.channels.claims.ts).
  x402ChannelsModule,
  {
    name: "payroll",
    table: payrollRoutes,
    sections: [payrollSection],
    jobs: payrollJobs,
    // Batches a killed process left PROCESSING are resumed at once (payroll.jobs.ts).
    onStart: payrollOnStart,
    // 5,000 recipients with labels exceed the default body limit.
    bodyRules: [{ method: "POST", path: "/api/payroll/run", maxBytes: 4 * 1024 * 1024 }],
  },
  {
    name: "commerce",
    table: jobsRoutes,
    jobs: commerceJobs,
    // Job actions a crash left recorded are settled at once (commerce.catchup.ts).
    onStart: commerceOnStart,
  },
  { name: "agents", table: agentsRoutes, jobs: agentJobs, sections: [agentsSection] },
  { name: "rpc", api: rpcRoutes },
  { name: "assets", pages: assetPages },
  { name: "dashboard", pages: (deps) => dashboardPages(deps, dashboardSections(modules)) },
  {
    name: "docs",
    api: (deps) => docsApi(() => apiRoutes(modules), deps.config.BASE_URL),
    routes: docsRoutes,
  },
];

/** Every documented `/api/` route of the list (the docs module's own included). */
export function apiRoutes(list: AppModule[] = modules): RouteDoc[] {
  return list.flatMap((m) => [...(m.table ?? []).map(docOf), ...(m.routes ?? [])]);
}

/** Every module's dashboard sections. */
export function dashboardSections(list: AppModule[] = modules): DashboardSection[] {
  return list.flatMap((m) => m.sections ?? []);
}

export function allJobs(list: AppModule[] = modules): JobDefinition<unknown, Deps>[] {
  return list.flatMap((m) => m.jobs ?? []) as JobDefinition<unknown, Deps>[];
}
