/**
 * Streams: the create, stop and withdraw requests, the list filter, the response bodies and the
 * routes (`POST/GET /api/payments/stream`, `…/stop`, `…/withdraw`; `x-api-key`, the stream
 * rate-limit group, `Idempotency-Key` on the writes).
 */
import { z } from "zod";
import { M } from "../../http/messages.ts";
import { usdcAmount } from "../../money.ts";
import { isZeroAddress } from "../../chain/address.ts";
import type { TargetPolicy } from "../webhooks/webhooks.targets.ts";
import { webhookUrlField } from "../webhooks/webhooks.schemas.ts";

export const STREAM_STATUSES = ["ACTIVE", "STOPPED", "COMPLETED"] as const;
export type StreamStatus = typeof STREAM_STATUSES[number];

const address = (text: string) =>
  z.string({ error: text }).regex(/^0x[0-9a-fA-F]{40}$/, text)
    .transform((a) => a.toLowerCase() as `0x${string}`);

/** Fields the create request must have; missing any answers the spec's one text with an example. */
export const STREAM_REQUIRED = ["senderSCA", "receiverSCA", "ratePerSecond", "totalDeposited"];
export const STREAM_EXAMPLE = {
  senderSCA: "0x5B38Da6a701c568545dCfcB03FcB875f56beddC4",
  receiverSCA: "0xAb8483F64d9C6d1EcF9b849Ae677dD3315835cb2",
  ratePerSecond: "0.001",
  totalDeposited: "10.00",
};

/**
 * The create request. Refused with 400 before anything is signed (each would be sent and revert,
 * or lock a stream that cannot stream): the zero address as receiver (the vault's `ZeroAddress`),
 * the sender as its own receiver, and a deposit below one second's rate (it would end in the
 * block that starts it). The object's checks run only once every field parsed.
 */
export function createStreamBody(policy: TargetPolicy) {
  return z.object({
    senderSCA: address(M.streamAddress),
    receiverSCA: address(M.streamAddress).refine((a) => !isZeroAddress(a), M.streamReceiverZero),
    // At least one base unit per second (0.000001), at most 6 places, never rounded.
    ratePerSecond: usdcAmount(M.streamRate),
    totalDeposited: usdcAmount(M.streamDeposit),
    webhookUrl: webhookUrlField(policy),
  }).superRefine((b, ctx) => {
    if (b.senderSCA === b.receiverSCA) {
      ctx.addIssue({ code: "custom", path: ["receiverSCA"], message: M.streamSameParties });
    } else if (b.totalDeposited < b.ratePerSecond) {
      ctx.addIssue({ code: "custom", path: ["totalDeposited"], message: M.streamTooShort });
    }
  });
}
export type CreateStreamInput = z.output<ReturnType<typeof createStreamBody>>;

export const stopStreamBody = z.object({
  reference: z.string({ error: M.streamReference }).min(1, M.streamReference).max(
    200,
    M.streamReference,
  ),
  callerSCA: address(M.streamCaller),
});

export const withdrawStreamBody = z.object({
  reference: z.string({ error: M.streamReference }).min(1, M.streamReference).max(
    200,
    M.streamReference,
  ),
  receiverSCA: address(M.streamReceiver),
});

export const listStreamsQuery = z.object({
  sender: z.string().max(42).optional().describe("senderSCA, exact address match"),
  receiver: z.string().max(42).optional().describe("receiverSCA, exact address match"),
  status: z.enum(STREAM_STATUSES, { error: M.streamStatusFilter }).optional(),
  reference: z.string().max(200).optional(),
});

const iso = z.string().describe("ISO 8601 timestamp");
const num = z.number().describe("USDC as a JSON number (6 places at most)");

export const streamResource = z.object({
  reference: z.string(),
  status: z.enum(STREAM_STATUSES),
  senderSCA: z.string(),
  receiverSCA: z.string(),
  ratePerSecond: num,
  totalDeposited: num,
  totalStreamed: num.describe("USDC paid to the receiver"),
  currency: z.literal("USDC"),
  contractAddress: z.string(),
  startedAt: iso,
  stoppedAt: iso.nullable(),
  txHash: z.string(),
  explorerUrl: z.string().nullable(),
  webhookUrl: z.string().nullable(),
  currentStreamed: num.describe("rate × elapsed seconds, capped at the deposit"),
  remainingBalance: num.describe("totalDeposited − currentStreamed"),
  secondsRemaining: z.number().int().describe("0 unless ACTIVE"),
  percentComplete: z.number().describe("2 places"),
});

export const createResponse = z.object({
  success: z.literal(true),
  reference: z.string(),
  stream: z.object({
    reference: z.string(),
    status: z.literal("ACTIVE"),
    senderSCA: z.string(),
    receiverSCA: z.string(),
    ratePerSecond: num,
    totalDeposited: num,
    totalStreamed: z.literal(0),
    currency: z.literal("USDC"),
    contractAddress: z.string(),
  }),
  txHash: z.string(),
  explorerUrl: z.string(),
  estimatedDurationSeconds: z.number().int(),
  estimatedEndTime: iso,
  message: z.string(),
  nextSteps: z.object({ stop: z.string(), withdraw: z.string(), status: z.string() }),
});

export const listResponse = z.object({
  success: z.literal(true),
  metrics: z.object({
    total: z.number().int(),
    active: z.number().int(),
    stopped: z.number().int(),
    completed: z.number().int(),
    totalLockedUSDC: num,
    totalRatePerSecond: num,
  }),
  streams: z.array(streamResource),
});

export const stopResponse = z.object({
  success: z.literal(true),
  stream: z.object({
    reference: z.string(),
    status: z.literal("STOPPED"),
    totalStreamed: num,
    stoppedAt: iso,
  }),
  txHash: z.string(),
  explorerUrl: z.string(),
  totalStreamed: num,
  refundedToSender: num,
  message: z.string(),
});

export const withdrawResponse = z.object({
  success: z.literal(true),
  reference: z.string(),
  amountWithdrawn: num,
  totalStreamed: num,
  txHash: z.string(),
  explorerUrl: z.string(),
});

/** The create request's 400: `hint` is an object with `example` when a field is missing. */
export const createError = z.object({
  success: z.literal(false),
  error: z.string(),
  hint: z.union([z.string(), z.object({ example: z.record(z.string(), z.string()) })]).optional(),
  balance: z.string().describe("The sender's USDC (6 places) when it is too little").optional(),
});
