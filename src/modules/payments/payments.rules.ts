/** Pure rules of payments: references, lifetimes, the spec's record shape. */
import { checksum } from "../../chain/address.ts";
import { formatUsdc, usdcToNumber } from "../../money.ts";
import type { ProfileName } from "../../chain/profiles.ts";

/** The payment states; the one list every schema, filter and view uses. */
export const PAYMENT_STATUSES = ["PENDING", "SUCCESS", "FAILED", "EXPIRED"] as const;
export type PaymentStatus = typeof PAYMENT_STATUSES[number];
export type PaymentKind = "link" | "session";

/** Spec: a payment link lives 24 hours, a checkout session 120 minutes. */
export const LIFETIME_MS: Record<PaymentKind, number> = {
  link: 24 * 3600 * 1000,
  session: 120 * 60 * 1000,
};

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/** `pay_ref_` + 20 base62 characters (119 random bits); 28 bytes, so it fits a bytes32. */
export function newReference(): string {
  let out = "pay_ref_";
  while (out.length < 28) {
    for (const b of crypto.getRandomValues(new Uint8Array(24))) {
      if (b < 248 && out.length < 28) out += BASE62[b % 62];
    }
  }
  return out;
}

export const REFERENCE_PATTERN = /^pay_ref_[0-9A-Za-z]{8,24}$/;

/** The `chain` value of a payment record. */
export function chainCode(profile: ProfileName): string {
  return profile === "testnet" ? "Settle_Testnet" : "Settle";
}

export interface PaymentRow {
  id: string;
  reference: string;
  merchantId: string;
  kind: PaymentKind;
  amount: bigint;
  currency: string;
  description: string | null;
  chainId: number;
  payTo: string;
  status: PaymentStatus;
  direction: string;
  payer: string | null;
  chainTxHash: string | null;
  settledAfterExpiry: boolean;
  submittedTxHash: string | null;
  failureReason: string | null;
  webhookUrl: string | null;
  metadata: unknown;
  expiresAt: Date;
  createdAt: Date;
  updatedAt: Date;
  settledAt: Date | null;
  /** Joined: the merchant's business name. */
  merchantName?: string;
}

/** The status as of `now`: a PENDING payment past its deadline is EXPIRED, swept or not. */
export function effectiveStatus(
  p: Pick<PaymentRow, "status" | "expiresAt">,
  now: Date,
): PaymentStatus {
  return p.status === "PENDING" && p.expiresAt.getTime() <= now.getTime() ? "EXPIRED" : p.status;
}

/** The spec's payment record (payment log). */
export function paymentRecord(p: PaymentRow, profile: ProfileName, now: Date) {
  return {
    id: p.id,
    reference: p.reference,
    amount: usdcToNumber(p.amount),
    currency: p.currency,
    chain: chainCode(profile),
    // The payer's address, EIP-55 checksummed like every address we return (stored lower-case).
    senderEmail: p.payer ? checksum(p.payer) : "pending@checkout",
    direction: p.direction,
    merchant: p.merchantName ?? null,
    status: effectiveStatus(p, now),
    chainTxHash: p.chainTxHash,
    timestamp: p.createdAt.toISOString(),
    webhookUrl: p.webhookUrl,
  };
}

export function amountString(units: bigint): string {
  return formatUsdc(units, { decimals: "fixed" });
}
