/**
 * The merchant profile's payment figures (spec: stats over the 50 most recent payments, 20
 * newest as recentPayments). Pure: the payments module supplies the rows.
 */
import { roundUsdcTo, usdcToNumber } from "../../money.ts";

export interface PaymentSummaryRow {
  reference: string;
  amount: bigint;
  currency: string;
  status: string;
  createdAt: Date;
}

export function computeStats(recent50: PaymentSummaryRow[]) {
  const ok = recent50.filter((p) => p.status === "SUCCESS");
  const volume = ok.reduce((sum, p) => sum + p.amount, 0n);
  const rate = recent50.length === 0 ? 0 : Math.round((ok.length / recent50.length) * 1000) / 10;
  return {
    totalPayments: recent50.length,
    successfulPayments: ok.length,
    totalVolume: Number(roundUsdcTo(volume, 4)),
    successRate: rate,
  };
}

export function recentPayment(p: PaymentSummaryRow, baseUrl: string) {
  return {
    reference: p.reference,
    amount: usdcToNumber(p.amount),
    currency: p.currency,
    status: p.status,
    timestamp: p.createdAt.toISOString(),
    checkoutUrl: `${baseUrl}/checkout/${p.reference}`,
  };
}
