/**
 * Payments as the dashboard's views show them: display strings made here from the service's
 * rows (amounts from bigint base units, never floats), plus a fingerprint that lets a polling
 * partial answer 204 when nothing it shows has changed.
 */
import { createHash } from "node:crypto";
import type { Deps } from "../../deps.ts";
import { checksum } from "../../chain/address.ts";
import { formatUsdc, roundUsdcTo } from "../../chain/amount.ts";
import { detailedRecord } from "../payments/payments.service.ts";
import type { PaymentRow } from "../payments/payments.rules.ts";
import type { PaymentItem } from "../../../views/dashboard/payment-parts.tsx";

/** "1234.5" → "1,234.50": at least two decimals, more only when the value has them. */
export function groupDecimal(decimal: string): string {
  const [whole, frac = ""] = decimal.split(".");
  const grouped = whole.replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  return `${grouped}.${frac.padEnd(2, "0")}`;
}

/** Money as people read it: `42500000n` → "42.50", `1234567n` → "1.234567". */
export function money(units: bigint): string {
  return groupDecimal(formatUsdc(units));
}

/** Rounded like the profile's stats (`totalVolume` to 4 places), then shown as money. */
export function moneyRounded(units: bigint, places: number): string {
  return groupDecimal(roundUsdcTo(units, places));
}

export function paymentItem(deps: Deps, p: PaymentRow): PaymentItem {
  const r = detailedRecord(deps, p);
  return {
    reference: p.reference,
    kind: p.kind,
    amount: money(p.amount),
    currency: p.currency,
    status: r.status,
    chain: r.chain,
    chainId: p.chainId,
    description: p.description,
    createdAt: r.timestamp,
    expiresAt: r.expiresAt,
    settledAt: r.settledAt,
    settledAfterExpiry: p.settledAfterExpiry,
    updatedAt: p.updatedAt.toISOString(),
    payer: p.payer ? checksum(p.payer) : null,
    chainTxHash: p.chainTxHash,
    submittedTxHash: p.submittedTxHash,
    failureReason: p.failureReason,
    explorerUrl: r.explorerUrl,
    checkoutUrl: r.checkoutUrl,
    webhookUrl: p.webhookUrl,
  };
}

/** A short stable hash of what a partial shows (bigints as strings). */
export function fingerprint(data: unknown): string {
  const json = JSON.stringify(data, (_k, v) => typeof v === "bigint" ? v.toString() : v);
  return createHash("sha256").update(json).digest("base64url").slice(0, 16);
}
