/**
 * Jobs (ERC-8183): request bodies, the job record, the responses and the routes. The spec fixes
 * fund, submit and complete; create, the detail, reject and refund are ours (DESIGN §9).
 */
import { z } from "zod";
import { M } from "../../http/messages.ts";
import { bareErrorBody, errorBody, errors, type RouteDoc } from "../../http/contract.ts";
import { isAddress } from "../../chain/address.ts";
import { usdcAmount } from "../../money.ts";
import { JOB_ID, JOB_STATUSES, MAX_JOB_SECONDS, MIN_JOB_SECONDS } from "./commerce.rules.ts";

const ZERO_ADDRESS = /^0x0{40}$/i;
const address = z.string({ error: M.jobAddress })
  .refine((a) => isAddress(a) && !ZERO_ADDRESS.test(a), M.jobAddress)
  .transform((a) => a.toLowerCase() as `0x${string}`);
// The spec's "jobId string required": a JSON number is refused with a text saying so (a job id
// is a uint256, which a JSON number cannot carry exactly beyond 2^53).
const jobId = z.string({ error: (iss) => iss.input === undefined ? M.jobId : M.jobIdString })
  .regex(JOB_ID, M.jobIdFormat)
  .describe('The on-chain job id, as a string of digits ("42")');
const walletId = (text: string) =>
  z.string({ error: text }).min(1, text).max(64, text).describe("A managed wallet's id (UUID)");
const reason = z.string({ error: M.jobReason }).max(500, M.jobReason).optional();

export const createJobBody = z.object({
  clientWalletId: walletId(M.jobClientWalletId),
  provider: address.describe("Who does the work and is paid on completion"),
  evaluator: address.describe("Who alone completes or rejects the submitted work"),
  budget: usdcAmount(M.jobBudget),
  expiresInSeconds: z.number({ error: M.jobExpiry }).int(M.jobExpiry)
    .min(MIN_JOB_SECONDS, M.jobExpiry).max(MAX_JOB_SECONDS, M.jobExpiry)
    .describe("After this a funded job can be refunded to the client"),
  description: z.string({ error: M.jobDescription }).min(1, M.jobDescription)
    .max(1000, M.jobDescription),
});
export type CreateJobInput = z.output<typeof createJobBody>;

export const fundBody = z.object({ jobId, clientWalletId: walletId(M.jobWalletId) });
export const refundBody = fundBody;
export const submitBody = z.object({
  jobId,
  providerWalletId: walletId(M.jobWalletId),
  deliverableData: z.string({ error: M.jobDeliverable }).max(2048, M.jobDeliverable)
    .refine(isDeliverable, M.jobDeliverable)
    .describe("An ipfs:// URI or an https:// URL; its keccak256 goes on chain"),
});
export const evaluateBody = z.object({
  jobId,
  evaluatorWalletId: walletId(M.jobWalletId),
  reason: reason.describe("Hashed with keccak256 and stored on chain"),
});

function isDeliverable(s: string): boolean {
  if (/^ipfs:\/\/[A-Za-z0-9./_-]+$/.test(s)) return true;
  try {
    const u = new URL(s);
    return u.protocol === "https:" && u.hostname !== "";
  } catch {
    return false;
  }
}

export const jobParams = z.object({ jobId: z.string().describe("The on-chain job id") });

const hash = z.string().describe("Transaction hash");
export const jobRecord = z.object({
  jobId: z.string(),
  status: z.enum(JOB_STATUSES),
  client: z.string(),
  provider: z.string(),
  evaluator: z.string(),
  budget: z.string().describe("USDC with 6 decimal places"),
  currency: z.literal("USDC"),
  description: z.string(),
  expiresAt: z.string(),
  chain: z.string(),
  contractAddress: z.string(),
  deliverableData: z.string().nullable(),
  deliverableHash: z.string().nullable(),
  reason: z.string().nullable(),
  reasonHash: z.string().nullable(),
  txHash: hash,
  explorerUrl: z.string(),
  budgetTx: hash,
  approveTx: hash.nullable(),
  fundTx: hash.nullable(),
  submitTx: hash.nullable(),
  completeTx: hash.nullable(),
  rejectTx: hash.nullable(),
  refundTx: hash.nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
}).meta({ id: "Job" });

const ok = z.literal(true);
const credentials = ["apiKey", "merchantCookie"] as const;
const tag = "Jobs";
const refused = (description: string) => ({ description, schema: bareErrorBody });
const chainErrors = errors([401, 408, 429, 500, 502]);

export const jobsRoutes: RouteDoc[] = [
  {
    method: "post",
    path: "/api/jobs/create",
    summary: "Create an ERC-8183 job from one of your wallets (the client) with its budget",
    tag,
    auth: [...credentials],
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
  },
  {
    method: "get",
    path: "/api/jobs/:jobId",
    summary: "A job by its on-chain id (any authenticated caller; jobs cross merchants)",
    tag,
    auth: [...credentials],
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
  },
  {
    method: "post",
    path: "/api/jobs/fund",
    summary: "The client approves and escrows the budget (OPEN → FUNDED)",
    tag,
    auth: [...credentials],
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
      ...errors([400]),
      403: refused("clientWalletId is not the job's client, or not a wallet you control"),
      404: refused("`Job not found`"),
      ...chainErrors,
    },
  },
  {
    method: "post",
    path: "/api/jobs/submit",
    summary: "The provider submits the deliverable's hash (FUNDED → SUBMITTED)",
    tag,
    auth: [...credentials],
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
  },
  ...(["complete", "reject"] as const).map((action): RouteDoc => ({
    method: "post",
    path: `/api/jobs/${action}`,
    summary: action === "complete"
      ? "The evaluator approves: the budget goes to the provider (SUBMITTED → COMPLETED)"
      : "The evaluator rejects: the budget goes back to the client (→ REJECTED)",
    tag,
    auth: [...credentials],
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
  })),
  {
    method: "post",
    path: "/api/jobs/refund",
    summary: "After expiry the client takes back a funded or submitted job's budget (→ EXPIRED)",
    tag,
    auth: [...credentials],
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
  },
];
