/** What payroll answers: the batch resource, its results in request order, the run's sentence. */
import type { Deps } from "../../deps.ts";
import type { ProfileName } from "../../chain/index.ts";
import { checksum } from "../../chain/address.ts";
import { formatUsdc, usdcToNumber } from "../../money.ts";
import type { BatchRow, RecipientRow } from "./payroll.types.ts";
import { TRANSFER_FAILED_ERROR } from "./payroll.rules.ts";

const profileOf = (b: Pick<BatchRow, "profile">) => b.profile as ProfileName;

/** Result entries in request order; recipients not processed yet are left out. */
export function results(deps: Deps, b: BatchRow, rows: RecipientRow[]) {
  const p = profileOf(b);
  const explorer = (hash: string) =>
    deps.chain.has(p) ? deps.chain.explorerTxUrl(p, hash) : undefined;
  return rows.filter((r) => r.status !== "PENDING").map((r) => {
    const base = {
      recipientSCA: checksum(r.recipientSca),
      amount: formatUsdc(r.amount, { decimals: "fixed" }),
      label: r.label,
    };
    if (r.status === "SUCCESS") {
      return {
        ...base,
        status: "SUCCESS" as const,
        txHash: r.txHash!,
        explorerUrl: explorer(r.txHash!),
      };
    }
    if (r.status === "PENDING_SIGNATURE") {
      return { ...base, status: "PENDING_SIGNATURE" as const, requestId: r.requestId! };
    }
    return { ...base, status: "FAILED" as const, error: r.error ?? TRANSFER_FAILED_ERROR };
  });
}

/** The Payroll batch resource. */
export function batchView(deps: Deps, b: BatchRow, rows: RecipientRow[]) {
  return {
    id: b.id,
    batchRef: b.batchRef,
    payerSCA: checksum(b.payerSca),
    payerWalletId: b.payerWalletKind,
    totalAmount: usdcToNumber(b.totalAmount),
    currency: "USDC" as const,
    recipientCount: b.recipientCount,
    successCount: b.successCount,
    failedCount: b.failedCount,
    pendingSignatureCount: b.pendingSignatureCount,
    status: b.status,
    results: results(deps, b, rows),
    webhookUrl: b.webhookUrl,
    createdAt: b.createdAt.toISOString(),
    completedAt: b.completedAt?.toISOString() ?? null,
  };
}

/** What the run answers: the batch now, and a sentence saying where it stands. */
export function runMessage(b: BatchRow): string {
  const done = b.successCount + b.failedCount + b.pendingSignatureCount;
  const n = b.recipientCount;
  const recipients = (k: number) => (k === 1 ? "recipient" : "recipients");
  switch (b.status) {
    case "COMPLETED":
      return n === 1 ? "Paid the recipient." : `Paid all ${n} recipients.`;
    case "PARTIAL_FAILURE":
      return `Paid ${b.successCount} of ${n} recipients; ${b.failedCount} failed.`;
    case "FAILED":
      return n === 1 ? "The recipient was not paid." : `No recipient was paid; all ${n} failed.`;
    case "AWAITING_SIGNATURES":
      return `${b.pendingSignatureCount} ${
        b.pendingSignatureCount === 1 ? "payment awaits" : "payments await"
      } your wallet's signature: see GET /api/merchant/wallet/sign-requests.`;
    default:
      return `Processing: ${done} of ${n} ${
        recipients(n)
      } done. Poll GET /api/payroll/run?batchRef=${b.batchRef}.`;
  }
}

/** One of the merchant's batches with its recipients (the first `limit`, when given). */
