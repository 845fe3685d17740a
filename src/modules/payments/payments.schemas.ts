/**
 * Payments: the create request (payment links, checkout sessions, the dashboard's link form),
 * the history filter (API and dashboard), the response bodies and the routes.
 */
import { z } from "zod";
import { M } from "../../http/messages.ts";
import { usdcAmount } from "../../money.ts";
import type { TargetPolicy } from "../webhooks/webhooks.targets.ts";
import { webhookUrlField } from "../webhooks/webhooks.schemas.ts";
import { PAYMENT_STATUSES } from "./payments.rules.ts";

export { PAYMENT_STATUSES };

const METADATA_MAX = 4000;

/**
 * A payment to create. Fields are checked in this order; the API answers the first failing
 * one's text, a form shows each. The webhook target policy comes from configuration.
 */
export function createPaymentBody(policy: TargetPolicy) {
  return z.object({
    // Strict: a decimal string, up to 6 places, never rounded (DESIGN §4).
    amount: usdcAmount(M.paymentAmount),
    currency: z.literal("USDC", { error: M.paymentCurrency }).nullish()
      .transform(() => "USDC" as const).describe("Only USDC; default USDC"),
    description: z.string({ error: M.paymentDescription }).max(500, M.paymentDescription)
      .nullish().transform((d) => d ?? null),
    webhookUrl: webhookUrlField(policy),
    metadata: z.record(z.string(), z.unknown(), { error: M.paymentMetadata }).nullish()
      .refine((m) => !m || JSON.stringify(m).length <= METADATA_MAX, M.paymentMetadata)
      .transform((m) => m ?? null),
  });
}
export type CreatePaymentInput = z.output<ReturnType<typeof createPaymentBody>>;
/** Besides the text: how to write an amount. */
export const CREATE_HINTS = { amount: M.paymentAmountHint };

/** The API's history filter; the dashboard's adds chain and reference search. */
export const historyQuery = z.object({
  status: z.enum(PAYMENT_STATUSES).optional(),
  limit: z.coerce.number().int().min(1).max(100).optional(),
  cursor: z.string().max(200).optional(),
});

/** A uint256 as JSON: a decimal string (wallets' typed data) or a safe integer. */
const uint = z.union([
  z.string(M.relayBody).regex(/^\d{1,78}$/, M.relayBody),
  z.number(M.relayBody).int(M.relayBody).nonnegative(M.relayBody),
]).transform((v) => BigInt(v));
const hexAddress = z.string(M.relayBody).regex(/^0x[0-9a-fA-F]{40}$/, M.relayBody)
  .transform((a) => a.toLowerCase() as `0x${string}`);

/**
 * The hosted page's gasless payment (`POST /checkout/{reference}/relay`): the payer's EIP-3009
 * ReceiveWithAuthorization as signed, and its signature. The service checks every field against
 * the payment before relaying.
 */
export const relayBody = z.object({
  authorization: z.object({
    from: hexAddress,
    to: hexAddress,
    value: uint,
    validAfter: uint,
    validBefore: uint,
    nonce: z.string(M.relayBody).regex(/^0x[0-9a-fA-F]{64}$/, M.relayBody)
      .transform((n) => n.toLowerCase() as `0x${string}`),
  }, M.relayBody),
  signature: z.string(M.relayBody).regex(/^0x[0-9a-fA-F]{130}$/, M.relayBody)
    .transform((sig) => sig as `0x${string}`),
}, M.relayBody);
export type RelayInput = z.output<typeof relayBody>;

export const iso = z.string().describe("ISO 8601 timestamp");
export const status = z.enum(PAYMENT_STATUSES);

/** The spec's payment record. */
export const paymentRecord = z.object({
  id: z.string(),
  reference: z.string(),
  amount: z.number(),
  currency: z.string(),
  chain: z.string(),
  senderEmail: z.string(),
  direction: z.string(),
  merchant: z.string().nullable(),
  status,
  chainTxHash: z.string().nullable(),
  timestamp: iso,
  webhookUrl: z.string().nullable(),
}).meta({ id: "PaymentRecord" });

export const paymentDetail = paymentRecord.extend({
  description: z.string().nullable(),
  checkoutUrl: z.string(),
  expiresAt: iso,
  settledAt: iso.nullable(),
  settledAfterExpiry: z.boolean(),
  explorerUrl: z.string().nullable(),
  metadata: z.record(z.string(), z.unknown()).nullable(),
}).meta({ id: "PaymentDetail" });

export const reference = "pay_ref_k3j4h5g6f7d8s9a0";
export const createExample = {
  amount: "25.50",
  currency: "USDC",
  description: "Order #1042",
  webhookUrl: "https://shop.example.com/hooks/settlement",
};
export const recordExample = {
  id: "0b6f8c1e-0000-4000-8000-000000000002",
  reference,
  amount: 25.5,
  currency: "USDC",
  chain: "Settle_Testnet",
  senderEmail: "pending@checkout",
  direction: "request",
  merchant: "Test Shop",
  status: "PENDING",
  chainTxHash: null,
  timestamp: "2025-01-01T00:00:00.000Z",
  webhookUrl: null,
};
