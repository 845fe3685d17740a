/**
 * /api/jobs/*: a merchant or secret key as `x-api-key`, or the merchant's session cookie (the
 * spec's "Provide a valid x-api-key or log in."), scope `jobs`; 403 and 404 bodies are
 * `{ error }` only. The credential's chain (a key's prefix; a session: its mode) is where jobs
 * are created and looked up: a job of the other environment is not found (404), like any other.
 */
import { z } from "zod";
import { bareErrorBody, errorBody, errors } from "../../http/contract.ts";
import { defineRoute, type RouteAuth } from "../../http/route.ts";
import { M } from "../../http/messages.ts";
import * as service from "./commerce.service.ts";
import { JOB_STATUSES } from "./commerce.rules.ts";
import {
  createJobBody,
  evaluateBody,
  fundBody,
  hash,
  jobParams,
  jobRecord,
  refundBody,
  submitBody,
} from "./commerce.schemas.ts";

const auth = (write: boolean): RouteAuth => ({
  accept: ["apiKey", "cookie"],
  // Publishable keys are for browser pages, anyone's to read: no job, read or write.
  keyKinds: ["merchant", "secret"],
  scope: "jobs",
  write,
  messages: { missing: M.jobsAuthRequired },
  bareStatuses: [403, 404],
});
const write = auth(true);
const read = auth(false);
const ok = z.literal(true);
const tag = "Jobs";
const refused = (description: string) => ({ description, schema: bareErrorBody });
const chainErrors = errors([401, 408, 429, 500, 502]);

/** The job actions' fuzz sample: every field any action reads, so each action's parse runs. */
const actionFuzz = {
  sample: {
    jobId: 999999,
    clientWalletId: "00000000-0000-0000-0000-000000000000",
    providerWalletId: "00000000-0000-0000-0000-000000000000",
    evaluatorWalletId: "00000000-0000-0000-0000-000000000000",
    deliverableData: "ipfs://fuzz",
    reason: "fuzz",
  },
  runsDivisor: 5,
};

export const jobsRoutes = [
  defineRoute({
    method: "post",
    path: "/api/jobs/create",
    summary: "Create an ERC-8183 job from one of your wallets (the client) with its budget",
    tag,
    auth: write,
    idempotent: true,
    body: createJobBody,
    bodyExample: {
      clientWalletId: "3f1c…",
      provider: "0x5B38Da6a701c568545dCfcB03FcB875f56beddC4",
      evaluator: "0xAb8483F64d9C6d1EcF9b849Ae677dD3315835cb2",
      budget: "25.00",
      expiresInSeconds: 86400,
      description: "Summarise this paper",
    },
    responses: {
      201: {
        description: "Created and budgeted on chain (OPEN)",
        schema: z.object({
          success: ok,
          jobId: z.string(),
          status: z.literal("OPEN"),
          txHash: hash,
          explorerUrl: z.string(),
          job: jobRecord,
        }),
      },
      ...errors([400]),
      403: refused("clientWalletId is not a wallet you control, or the key may not do this"),
      ...chainErrors,
    },
    handler: async (x) => {
      const row = await service.createJob(x.deps, x.merchant, x.profile, x.body, x.idempotencyKey);
      const job = service.jobView(x.deps, row);
      return { ...job, status: "OPEN", job };
    },
    fuzz: {
      sample: {
        clientWalletId: "00000000-0000-0000-0000-000000000000",
        provider: "$dead",
        evaluator: "$dead",
        budget: "1",
        expiresInSeconds: 3600,
        description: "fuzz",
      },
    },
  }),
  defineRoute({
    method: "get",
    path: "/api/jobs/:jobId",
    summary: "A job by its on-chain id (any authenticated caller; jobs cross merchants)",
    tag,
    auth: read,
    params: jobParams,
    responses: {
      200: {
        description: "The job, and what the database holds for it",
        schema: z.object({
          success: ok,
          job: jobRecord,
          database: z.object({
            status: z.enum(JOB_STATUSES),
            deliverableHash: z.string().nullable(),
            deliverableData: z.string().nullable(),
            updatedAt: z.string(),
          }),
        }),
      },
      401: { description: "No credential", schema: errorBody },
      403: refused("The key may not do this"),
      404: refused("`Job not found`"),
      429: { description: "Rate limited", schema: errorBody },
    },
    handler: async (x) => {
      const row = await service.reconcile(
        x.deps,
        await service.getJob(x.deps, x.profile, x.params.jobId),
      );
      return {
        job: service.jobView(x.deps, row),
        database: {
          status: row.status,
          deliverableHash: row.deliverableHash,
          deliverableData: row.deliverableData,
          updatedAt: row.updatedAt.toISOString(),
        },
      };
    },
    fuzz: { paramPrefix: "j" },
  }),
  defineRoute({
    method: "post",
    path: "/api/jobs/fund",
    summary: "The client approves and escrows the budget (OPEN → FUNDED)",
    tag,
    auth: write,
    idempotent: true,
    body: fundBody,
    bodyExample: { jobId: "1", clientWalletId: "3f1c…" },
    responses: {
      200: {
        description: "Funded",
        schema: z.object({
          success: ok,
          jobId: z.string(),
          status: z.literal("FUNDED"),
          approveTx: hash.nullable(),
          fundTx: hash,
          explorerUrl: z.string(),
        }),
      },
      ...errors([]),
      400: {
        description:
          "Malformed input, the job's status, or the client wallet's balance is below the budget (then `balance`)",
        schema: errorBody.extend({ balance: z.string().optional() }),
      },
      403: refused("clientWalletId is not the job's client, or not a wallet you control"),
      404: refused("`Job not found`"),
      ...chainErrors,
    },
    handler: async (x) =>
      await service.fund(x.deps, x.merchant, x.profile, x.body, x.idempotencyKey),
    fuzz: actionFuzz,
  }),
  defineRoute({
    method: "post",
    path: "/api/jobs/submit",
    summary: "The provider submits the deliverable's hash (FUNDED → SUBMITTED)",
    tag,
    auth: write,
    idempotent: true,
    body: submitBody,
    bodyExample: { jobId: "1", providerWalletId: "9a0b…", deliverableData: "ipfs://bafy…" },
    responses: {
      200: {
        description: "Submitted",
        schema: z.object({
          success: ok,
          jobId: z.string(),
          status: z.literal("SUBMITTED"),
          deliverableHash: z.string(),
          txHash: hash,
          explorerUrl: z.string(),
        }),
      },
      ...errors([400]),
      403: refused("providerWalletId is not the job's provider, or not a wallet you control"),
      404: refused("`Job not found`"),
      ...chainErrors,
    },
    handler: async (x) =>
      await service.submit(x.deps, x.merchant, x.profile, x.body, x.idempotencyKey),
    fuzz: actionFuzz,
  }),
  ...(["complete", "reject"] as const).map((action) =>
    defineRoute({
      method: "post",
      path: `/api/jobs/${action}`,
      summary: action === "complete"
        ? "The evaluator approves: the budget goes to the provider (SUBMITTED → COMPLETED)"
        : "The evaluator rejects: the budget goes back to the client (→ REJECTED)",
      tag,
      auth: write,
      idempotent: true,
      body: evaluateBody,
      bodyExample: { jobId: "1", evaluatorWalletId: "77c2…" },
      responses: {
        200: {
          description: action === "complete" ? "Completed" : "Rejected",
          schema: z.object({
            success: ok,
            jobId: z.string(),
            status: z.literal(action === "complete" ? "COMPLETED" : "REJECTED"),
            reasonHash: z.string(),
            txHash: hash,
            explorerUrl: z.string(),
          }),
        },
        ...errors([400]),
        403: refused("evaluatorWalletId is not the job's evaluator, or not a wallet you control"),
        404: refused("`Job not found`"),
        ...chainErrors,
      },
      handler: async (x) =>
        await service.evaluate(x.deps, x.merchant, x.profile, action, x.body, x.idempotencyKey),
      fuzz: actionFuzz,
    })
  ),
  defineRoute({
    method: "post",
    path: "/api/jobs/refund",
    summary: "After expiry the client takes back a funded or submitted job's budget (→ EXPIRED)",
    tag,
    auth: write,
    idempotent: true,
    body: refundBody,
    bodyExample: { jobId: "1", clientWalletId: "3f1c…" },
    responses: {
      200: {
        description: "Refunded",
        schema: z.object({
          success: ok,
          jobId: z.string(),
          status: z.literal("EXPIRED"),
          txHash: hash,
          explorerUrl: z.string(),
        }),
      },
      ...errors([400]),
      403: refused("clientWalletId is not the job's client, or not a wallet you control"),
      404: refused("`Job not found`"),
      ...chainErrors,
    },
    handler: async (x) =>
      await service.refund(x.deps, x.merchant, x.profile, x.body, x.idempotencyKey),
    fuzz: actionFuzz,
  }),
];
