/**
 * Payroll: the run request (parsed by hand so a malformed recipient is named by its 0-based
 * index), the batch resource and result entries, the signature requests of external wallets,
 * and the routes.
 */
import { z } from "zod";
import { isAddress } from "../../chain/address.ts";
import { M, MF } from "../../http/messages.ts";
import { AmountError, parseUsdcLoose, USDC_MAX_UNITS } from "../../money.ts";
import type { TargetPolicy } from "../webhooks/webhooks.targets.ts";
import { webhookUrlField } from "../webhooks/webhooks.schemas.ts";
import { MAX_RECIPIENTS } from "./payroll.rules.ts";
import { BATCH_STATUSES, type RunInput } from "./payroll.types.ts";

export const PAYROLL_EXAMPLE = {
  recipients: [
    {
      recipientSCA: "0xAb8483F64d9C6d1EcF9b849Ae677dD3315835cb2",
      amount: "250.00",
      label: "Alice",
    },
    { recipientSCA: "0x4B20993Bc481177ec7E8f571ceCaE8A9e22C02db", amount: 125.5, label: "Bob" },
  ],
  description: "March payroll",
  webhookUrl: "https://example.com/hooks/payroll",
};

/** Why a run body was refused (answered as a 400; nothing is recorded or sent). */
export class RunBodyError extends Error {
  constructor(
    message: string,
    readonly extra: { index?: number; example?: unknown } = {},
    readonly hint?: string,
  ) {
    super(message);
    this.name = "RunBodyError";
  }
}

/** A refusal naming the recipient's 0-based index. */
function refuse(index: number, text: string): never {
  throw new RunBodyError(text, { index });
}

/**
 * The run body (throws RunBodyError): recipients non-empty (else the spec's text with an `example`), at most 5,000,
 * each an address and an amount (string or number, strict, zero allowed: that recipient ends
 * FAILED), label optional; description and webhookUrl optional.
 */
export function parseRunBody(body: Record<string, unknown>, policy: TargetPolicy): RunInput {
  const list = body.recipients;
  if (!Array.isArray(list) || list.length === 0) {
    throw new RunBodyError(M.payrollRecipientsRequired, { example: PAYROLL_EXAMPLE });
  }
  if (list.length > MAX_RECIPIENTS) throw new RunBodyError(M.payrollTooMany);
  const recipients = list.map((r, i) => {
    if (r === null || typeof r !== "object" || Array.isArray(r)) {
      refuse(i, MF.payrollRecipientObject(i));
    }
    const { recipientSCA, amount, label } = r as Record<string, unknown>;
    if (!isAddress(recipientSCA)) {
      refuse(i, MF.payrollRecipientAddress(i));
    }
    let units: bigint;
    try {
      units = parseUsdcLoose(amount, { allowZero: true });
    } catch (e) {
      if (!(e instanceof AmountError)) throw e;
      refuse(i, MF.payrollRecipientAmount(i));
    }
    if (
      label !== undefined && label !== null && (typeof label !== "string" || label.length > 200)
    ) {
      refuse(i, MF.payrollRecipientLabel(i));
    }
    return {
      recipientSCA: recipientSCA.toLowerCase() as `0x${string}`,
      amount: units,
      label: typeof label === "string" && label !== "" ? label : null,
    };
  });
  // The total is reported as a JSON number (`totalAmount`) and kept as a bigint: at most what
  // both hold exactly (a sum of 5,000 maximal amounts overflowed the column: a 500).
  const total = recipients.reduce((sum, r) => sum + r.amount, 0n);
  if (total > USDC_MAX_UNITS) throw new RunBodyError(M.payrollTotalTooLarge);
  const { description } = body;
  if (
    description !== undefined && description !== null &&
    (typeof description !== "string" || description.length > 500)
  ) {
    throw new RunBodyError(M.payrollDescription);
  }
  const hook = webhookUrlField(policy).safeParse(body.webhookUrl);
  if (!hook.success) {
    const issue = hook.error.issues[0] as { message: string; params?: { hint?: string } };
    throw new RunBodyError(issue.message, {}, issue.params?.hint);
  }
  return {
    recipients,
    webhookUrl: hook.data,
    description: typeof description === "string" && description !== "" ? description : null,
  };
}

/** The documented shape of the run body (the parser above is what enforces it). */
export const runBodyDoc = z.object({
  recipients: z.array(z.object({
    recipientSCA: z.string().describe("Recipient wallet address"),
    amount: z.union([z.string(), z.number()]).describe(
      "USDC, a string or number with at most 6 decimal places; 0 makes that recipient FAILED",
    ),
    label: z.string().max(200).optional().describe("Passed through; the memo"),
  })).min(1).max(MAX_RECIPIENTS),
  webhookUrl: z.string().optional().describe("HTTPS URL for payroll.completed"),
  description: z.string().max(500).optional().describe("Memo for recipients without a label"),
});

export const batchQuery = z.object({
  batchRef: z.string({ error: M.payrollBatchRefRequired }).min(1, M.payrollBatchRefRequired)
    .max(200, M.payrollBatchRefRequired),
});

export const signRequestParams = z.object({ id: z.string() });
export const signRequestBody = z.object({
  txHash: z.string({ error: M.signTxHash }).regex(/^0x[0-9a-fA-F]{64}$/, M.signTxHash)
    .transform((h) => h.toLowerCase() as `0x${string}`),
});

const iso = z.string().describe("ISO 8601 timestamp");

export const resultEntry = z.object({
  recipientSCA: z.string(),
  amount: z.string().describe("USDC with 6 decimal places"),
  label: z.string().nullable().describe("The recipient's label as sent"),
  status: z.enum(["SUCCESS", "PENDING_SIGNATURE", "FAILED"]),
  txHash: z.string().optional().describe("SUCCESS: the transaction that paid it"),
  explorerUrl: z.string().optional().describe("SUCCESS"),
  requestId: z.string().optional().describe("PENDING_SIGNATURE: the sign request"),
  error: z.string().optional().describe("FAILED: why"),
});

const counts = {
  recipientCount: z.number().int(),
  successCount: z.number().int(),
  failedCount: z.number().int(),
  pendingSignatureCount: z.number().int(),
};

export const runResponse = z.object({
  success: z.literal(true),
  batchRef: z.string(),
  status: z.enum(BATCH_STATUSES),
  totalAmount: z.number().describe("Sum of the amounts (USDC)"),
  ...counts,
  results: z.array(resultEntry).describe("Processed recipients so far, in request order"),
  message: z.string(),
});

export const batchResource = z.object({
  id: z.string(),
  batchRef: z.string(),
  payerSCA: z.string(),
  payerWalletId: z.string().describe("The wallet provider kind (`managed`, or the external kind)"),
  totalAmount: z.number(),
  currency: z.literal("USDC"),
  ...counts,
  status: z.enum(BATCH_STATUSES),
  results: z.array(resultEntry),
  webhookUrl: z.string().nullable(),
  createdAt: iso,
  completedAt: iso.nullable(),
});

export const runError = z.object({
  success: z.literal(false),
  error: z.string(),
  hint: z.string().optional(),
  example: z.record(z.string(), z.unknown()).optional().describe("A valid request"),
  index: z.number().int().optional().describe("0-based index of the malformed recipient"),
});

export const signRequestView = z.object({
  id: z.string(),
  batchRef: z.string(),
  index: z.number().int(),
  recipientSCA: z.string(),
  amount: z.string().describe("USDC with 6 decimal places"),
  amountUnits: z.string().describe("Base units (6 decimals) for the transfer call"),
  label: z.string().nullable(),
  memo: z.string().nullable().describe("The label, else the batch description"),
  status: z.literal("PENDING_SIGNATURE"),
  payerSCA: z.string().describe("Your linked wallet: the transfer must come from it"),
  token: z.string().describe("The USDC contract to call transfer(recipient, amountUnits) on"),
  chainId: z.number().int(),
  createdAt: iso,
});

export const listSignResponse = z.object({
  success: z.literal(true),
  signRequests: z.array(signRequestView),
});

export const submitSignResponse = z.object({
  success: z.literal(true),
  signRequest: z.object({
    id: z.string(),
    status: z.literal("SUCCESS"),
    txHash: z.string(),
    explorerUrl: z.string(),
  }),
  batch: z.object({
    batchRef: z.string(),
    status: z.enum(BATCH_STATUSES),
    pendingSignatureCount: z.number().int(),
  }),
});
