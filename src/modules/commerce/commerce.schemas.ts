/**
 * Jobs (ERC-8183): request bodies, the job record, the responses and the routes. The spec fixes
 * fund, submit and complete; create, the detail, reject and refund are ours (DESIGN §9).
 */
import { z } from "zod";
import { M } from "../../http/messages.ts";
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

export const hash = z.string().describe("Transaction hash");
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
