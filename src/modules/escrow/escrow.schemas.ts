/**
 * Escrow: request bodies (each field's issues carry its catalog text), the escrow record, the
 * responses and the routes (DESIGN §9: escrow operations; the spec's POST /api/escrow/dispute).
 */
import { z } from "zod";
import { M } from "../../http/messages.ts";
import { isAddress } from "../../chain/address.ts";
import { usdcAmount } from "../../money.ts";
import type { TargetPolicy } from "../webhooks/webhooks.targets.ts";
import { webhookUrlField } from "../webhooks/webhooks.schemas.ts";
import {
  ESCROW_OUTCOMES,
  ESCROW_STATUSES,
  MAX_EXPIRY_SECONDS,
  MIN_EXPIRY_SECONDS,
} from "./escrow.rules.ts";

const ZERO_ADDRESS = /^0x0{40}$/i;
const address = (text: string) =>
  z.string({ error: text }).refine((a) => isAddress(a) && !ZERO_ADDRESS.test(a), text)
    .transform((a) => a.toLowerCase() as `0x${string}`);
const reference = z.string({ error: M.escrowReference }).min(1, M.escrowReference)
  .max(64, M.escrowReference).describe("Escrow reference from escrow creation");

export function createEscrowBody(policy: TargetPolicy) {
  return z.object({
    depositorSCA: address(M.escrowDepositor).optional()
      .describe("Depositor: the address of one of your managed wallets"),
    depositorWalletId: z.string({ error: M.escrowDepositor }).max(64, M.escrowDepositor)
      .optional().describe("Depositor: the id of one of your managed wallets"),
    beneficiarySCA: address(M.escrowBeneficiary).describe("Who receives the amount on release"),
    amount: usdcAmount(M.escrowAmount),
    expiresInSeconds: z.number({ error: M.escrowExpiry }).int(M.escrowExpiry)
      .min(MIN_EXPIRY_SECONDS, M.escrowExpiry).max(MAX_EXPIRY_SECONDS, M.escrowExpiry).optional(),
    expiresAt: z.iso.datetime({ offset: true, error: M.escrowExpiry }).optional()
      .describe("ISO 8601; exactly one of expiresInSeconds and expiresAt"),
    description: z.string({ error: M.escrowDescription }).max(500, M.escrowDescription)
      .nullish().transform((d) => d ?? null),
    webhookUrl: webhookUrlField(policy),
  }).superRefine((b, ctx) => {
    if ((b.depositorSCA === undefined) === (b.depositorWalletId === undefined)) {
      ctx.addIssue({ code: "custom", message: M.escrowDepositor, path: ["depositorSCA"] });
    }
    if ((b.expiresInSeconds === undefined) === (b.expiresAt === undefined)) {
      ctx.addIssue({ code: "custom", message: M.escrowExpiry, path: ["expiresInSeconds"] });
    }
  });
}
export type CreateEscrowInput = z.output<ReturnType<typeof createEscrowBody>>;
export const CREATE_HINTS = { amount: M.escrowAmountHint };

export const partyActionBody = z.object({
  reference,
  callerSCA: address(M.escrowCallerSCA).describe("The acting party: a wallet you control"),
});

export const disputeBody = z.object({
  reference,
  callerSCA: address(M.escrowCallerSCA)
    .describe("Must be depositor or beneficiary; a wallet you control"),
  reason: z.string({ error: M.escrowReason }).max(1000, M.escrowReason).optional()
    .describe("Stored and sent in the webhook; empty or missing becomes `No reason provided`"),
});

export const refundBody = z.object({ reference });

export const resolveBody = z.object({
  reference,
  outcome: z.enum(ESCROW_OUTCOMES, { error: M.escrowOutcome }),
});

export const escrowQuery = z.object({
  reference: z.string().max(64).optional().describe("One escrow; omitted: the list"),
  status: z.enum(ESCROW_STATUSES, { error: M.escrowStatusFilter }).optional(),
  limit: z.coerce.number().int().min(1).max(100).optional(),
});

export const iso = z.string().describe("ISO 8601 timestamp");
export const hash = z.string().describe("Transaction hash");

export const escrowRecord = z.object({
  reference: z.string(),
  status: z.enum(ESCROW_STATUSES),
  amount: z.string().describe("USDC with 6 decimal places"),
  currency: z.literal("USDC"),
  depositor: z.string(),
  beneficiary: z.string(),
  expiresAt: iso,
  description: z.string().nullable(),
  webhookUrl: z.string().nullable(),
  chain: z.string(),
  txHash: hash,
  explorerUrl: z.string(),
  confirmed: z.boolean(),
  confirmedAt: iso.nullable(),
  releaseTxHash: hash.nullable(),
  disputeReason: z.string().nullable(),
  disputedBy: z.string().nullable(),
  disputeTxHash: hash.nullable(),
  disputedAt: iso.nullable(),
  resolution: z.enum(ESCROW_OUTCOMES).nullable(),
  resolveTxHash: hash.nullable(),
  refundTxHash: hash.nullable(),
  createdAt: iso,
}).meta({ id: "Escrow" });
