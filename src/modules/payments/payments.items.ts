/**
 * Payments as the dashboard's views show them: display strings made here from the service's
 * rows (amounts from bigint base units, never floats), plus a fingerprint that lets a polling
 * partial answer 204 when nothing it shows has changed.
 */
import { bigintJson } from "../../codec.ts";
import { createHash } from "node:crypto";
import type { Deps } from "../../deps.ts";
import { checksum } from "../../chain/address.ts";
import { displayUsdc } from "../../money.ts";
import { detailedRecord } from "./payments.service.ts";
import type { PaymentRow } from "./payments.rules.ts";
import type { PaymentItem } from "../../../views/dashboard/payment-parts.tsx";

export function paymentItem(deps: Deps, p: PaymentRow): PaymentItem {
  const r = detailedRecord(deps, p);
  return {
    reference: p.reference,
    kind: p.kind,
    amount: displayUsdc(p.amount),
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
  const json = bigintJson(data);
  return createHash("sha256").update(json).digest("base64url").slice(0, 16);
}
