/**
 * What is accepted and not yet on chain, for sellers, payers, the dashboard and /metrics: the
 * gateway-balance charges (x402.batched.*) and the batch-settlement scheme's channel charges
 * (x402.channels.*), pending until a settlement batch or a channel claim carries them.
 */
import type { Db } from "../../db/client.ts";
import type { Deps } from "../../deps.ts";
import { formatUsdcFixed as usdc } from "../../money.ts";
import * as repo from "./x402.batched.repo.ts";

/** An address's pending amounts in base units: owed to it (incoming), promised by it (outgoing). */
export async function pendingUnits(sql: Db, chainId: number, address: string) {
  return await repo.openUnits(sql, chainId, address.toLowerCase());
}

/** An address's pending amounts, as USDC decimals. */
export async function pendingOf(sql: Db, chainId: number, address: string) {
  const p = await pendingUnits(sql, chainId, address);
  return { incoming: usdc(p.incoming), outgoing: usdc(p.outgoing) };
}

export interface SettlementView {
  pending: { kind: "gateway" | "channel"; count: number; amount: string }[];
  charges: {
    createdAt: string;
    listingSlug: string | null;
    payer: string;
    amount: string;
    status: string;
    txHash: string | null;
  }[];
  batches: {
    kind: "gateway batch" | "channel claim";
    createdAt: string;
    status: string;
    payments: number;
    txHash: string | null;
  }[];
}

/** The merchant's pending charges (both kinds), its latest charges, and the batches that carry them. */
export async function merchantSettlement(sql: Db, merchantId: string): Promise<SettlementView> {
  const { pending, charges, batches } = await repo.merchantOpen(sql, merchantId);
  return {
    pending: pending.map((p) => ({ kind: p.kind, count: p.count, amount: usdc(BigInt(p.amount)) })),
    charges: charges.map((c) => ({
      createdAt: c.createdAt.toISOString(),
      listingSlug: c.listingSlug,
      payer: c.payer,
      amount: usdc(c.amount),
      status: c.status,
      txHash: c.txHash,
    })),
    batches: batches.map((b) => ({ ...b, createdAt: b.createdAt.toISOString() })),
  };
}

/** For /metrics: charges waiting per kind, the oldest one's age, the latest batches' size. */
export async function settlementStats(deps: Pick<Deps, "sql">) {
  return await repo.settlementStats(deps.sql);
}
