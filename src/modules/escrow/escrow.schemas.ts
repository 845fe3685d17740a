/**
 * Escrow: request bodies (each field's issues carry its catalog text), the escrow record, the
 * responses and the routes (DESIGN §9: escrow operations; the spec's POST /api/escrow/dispute).
 */
import { z } from "zod";
import { M } from "../../http/messages.ts";
import { errors, type RouteDoc } from "../../http/contract.ts";
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

const iso = z.string().describe("ISO 8601 timestamp");
const hash = z.string().describe("Transaction hash");

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

const ok = z.literal(true);
const actionResponse = z.object({
  success: ok,
  escrow: escrowRecord,
  txHash: hash,
  explorerUrl: z.string(),
  message: z.string(),
});

const refusal = (text: string) => ({ description: text, schema: errorWithBalance });
const errorWithBalance = z.object({
  success: z.literal(false),
  error: z.string(),
  hint: z.string().optional(),
  balance: z.string().optional(),
  txHash: z.string().optional(),
});

const merchantKey = ["bearer", "apiKey"] as const;
const tag = "Escrow";
const chainErrors = errors([401, 404, 408, 409, 429, 500, 502], errorWithBalance);

export const escrowRoutes: RouteDoc[] = [
  {
    method: "post",
    path: "/api/escrow/create",
    summary: "Hold USDC from one of your wallets for a beneficiary until release or expiry",
    tag,
    auth: [...merchantKey],
    idempotent: true,
    body: createEscrowBody("any"),
    bodyExample: {
      depositorWalletId: "3f1c…",
      beneficiarySCA: "0x5B38Da6a701c568545dCfcB03FcB875f56beddC4",
      amount: "25.00",
      expiresInSeconds: 86400,
      description: "Logo design",
    },
    responses: {
      201: {
        description: "Funded on chain",
        schema: z.object({
          success: ok,
          reference: z.string(),
          status: z.literal("ACTIVE"),
          amount: z.string(),
          currency: z.literal("USDC"),
          depositor: z.string(),
          beneficiary: z.string(),
          expiresAt: iso,
          txHash: hash,
          explorerUrl: z.string(),
          escrow: escrowRecord,
        }),
      },
      400: refusal("Malformed input, or the depositor's balance is too low (then `balance`)"),
      403: refusal("The depositor is not a wallet you control, or the key may not do this"),
      ...chainErrors,
    },
  },
  ...(["release", "confirm"] as const).map((op): RouteDoc => ({
    method: "post",
    path: `/api/escrow/${op}`,
    summary: op === "release"
      ? "The depositor releases the amount to the beneficiary"
      : "The beneficiary marks the delivery done (the escrow stays ACTIVE)",
    tag,
    auth: [...merchantKey],
    idempotent: true,
    body: partyActionBody,
    bodyExample: { reference: "escrow_…", callerSCA: "0x…" },
    responses: {
      200: { description: "Mined", schema: actionResponse },
      400: refusal("Malformed input, or the escrow's state does not allow it"),
      403: refusal(
        `callerSCA is not the ${op === "release" ? "depositor" : "beneficiary"}, or not yours`,
      ),
      ...chainErrors,
    },
  })),
  {
    method: "post",
    path: "/api/escrow/dispute",
    summary: "Depositor or beneficiary disputes an ACTIVE escrow",
    tag,
    auth: [...merchantKey],
    idempotent: true,
    body: disputeBody,
    bodyExample: { reference: "escrow_…", callerSCA: "0x…", reason: "Never delivered" },
    responses: {
      200: {
        description: "Disputed on chain",
        schema: z.object({
          success: ok,
          escrow: z.object({
            reference: z.string(),
            status: z.literal("DISPUTED"),
            disputeReason: z.string(),
            disputedBy: z.string(),
            disputeTxHash: hash,
          }),
          txHash: hash,
          explorerUrl: z.string(),
          message: z.string(),
        }),
      },
      400: refusal("Malformed input, or not ACTIVE: `Escrow is RELEASED — cannot dispute.`"),
      403: refusal("callerSCA is not a party, or not a wallet you control"),
      ...chainErrors,
    },
  },
  {
    method: "post",
    path: "/api/escrow/refund",
    summary: "Refund an expired ACTIVE escrow to the depositor (also automatic at expiry)",
    tag,
    auth: [...merchantKey],
    idempotent: true,
    body: refundBody,
    bodyExample: { reference: "escrow_…" },
    responses: {
      200: { description: "Mined", schema: actionResponse },
      400: refusal("Malformed input, not expired yet, or not ACTIVE"),
      403: refusal("The key may not do this"),
      ...chainErrors,
    },
  },
  {
    method: "post",
    path: "/api/escrow/resolve",
    summary: "The operator resolves a DISPUTED escrow (operator key only)",
    tag,
    auth: [...merchantKey],
    idempotent: true,
    body: resolveBody,
    bodyExample: { reference: "escrow_…", outcome: "refunded" },
    responses: {
      200: { description: "Mined", schema: actionResponse },
      400: refusal("Malformed input, or the escrow is not DISPUTED"),
      403: refusal("Not an operator key (merchant keys are refused)"),
      ...chainErrors,
    },
  },
  {
    method: "get",
    path: "/api/escrow",
    summary: "One escrow (`reference`) or yours, newest first",
    tag,
    auth: [...merchantKey],
    query: escrowQuery,
    responses: {
      200: {
        description: "`escrow` with `reference`, else `escrows`",
        schema: z.union([
          z.object({ success: ok, escrow: escrowRecord }),
          z.object({ success: ok, escrows: z.array(escrowRecord) }),
        ]),
      },
      ...errors([400, 401, 403, 404, 429]),
    },
  },
];
