/**
 * Payments: payment links (merchant session) and checkout sessions (API key), their history,
 * expiry, and settlement when the router's PaymentSettled log passes the confirmation depth.
 */
import type { Deps } from "../../deps.ts";
import type { Db } from "../../db/client.ts";
import { DomainError } from "../../errors.ts";
import { usdcToNumber } from "../../money.ts";
import type { ProfileName } from "../../chain/profiles.ts";
import type { MerchantRow } from "../merchants/merchants.types.ts";
import { emit } from "../webhooks/webhooks.service.ts";
import * as repo from "./payments.repo.ts";
import type { CreatePaymentInput } from "./payments.schemas.ts";
import {
  amountString,
  effectiveStatus,
  LIFETIME_MS,
  newReference,
  type PaymentKind,
  paymentRecord,
  type PaymentRow,
  type PaymentStatus,
  REFERENCE_PATTERN,
} from "./payments.rules.ts";

/**
 * A PENDING payment paying the merchant's current payout wallet. Its expiry needs no job of its
 * own: past `expires_at` it reads as EXPIRED everywhere at once, and the per-minute sweep job
 * writes the new status down.
 */
export async function createPayment(
  deps: Deps,
  merchant: MerchantRow,
  kind: PaymentKind,
  profile: ProfileName,
  input: CreatePaymentInput,
): Promise<PaymentRow> {
  if (!merchant.walletAddress) throw new DomainError("payout_wallet_missing");
  const now = deps.clock.now();
  const expiresAt = new Date(now.getTime() + LIFETIME_MS[kind]);
  // One statement, so no transaction around it: BEGIN and COMMIT would triple the round trips
  // of the hottest write and guard nothing a single INSERT does not already.
  const row = await repo.insertPayment(deps.sql, {
    reference: newReference(),
    merchantId: merchant.id,
    kind,
    amount: input.amount,
    currency: input.currency,
    description: input.description,
    chainId: deps.chain.chainId(profile),
    payTo: merchant.walletAddress!,
    webhookUrl: input.webhookUrl,
    metadata: input.metadata,
    expiresAt,
    now,
  });
  return { ...row, merchantName: merchant.businessName };
}

export function checkoutUrl(deps: Deps, reference: string): string {
  return `${deps.config.BASE_URL}/checkout/${reference}`;
}

/** The spec's record plus the fields an API client wants next to it. */
export function detailedRecord(deps: Deps, p: PaymentRow) {
  const profile = deps.chain.profileOf(p.chainId);
  return {
    ...paymentRecord(p, profile, deps.clock.now()),
    description: p.description,
    checkoutUrl: checkoutUrl(deps, p.reference),
    expiresAt: p.expiresAt.toISOString(),
    settledAt: p.settledAt?.toISOString() ?? null,
    settledAfterExpiry: p.settledAfterExpiry,
    explorerUrl: p.chainTxHash ? deps.chain.explorerTxUrl(profile, p.chainTxHash) : null,
    metadata: p.metadata ?? null,
  };
}

export async function verifyPayment(
  deps: Deps,
  merchantId: string,
  profile: ProfileName,
  reference: string,
) {
  const p = await repo.findForMerchant(deps.sql, merchantId, reference, [
    deps.chain.chainId(profile),
  ]);
  if (!p) throw new DomainError("payment_not_found");
  return detailedRecord(deps, p);
}

export interface HistoryQuery {
  status?: PaymentStatus;
  kind?: PaymentKind;
  reference?: string;
  limit?: number;
  cursor?: string;
}

/** A page of payments, newest first, with an opaque cursor for the next page. */
export async function history(
  deps: Deps,
  merchantId: string,
  profiles: ProfileName[],
  q: HistoryQuery,
) {
  const limit = q.limit ?? 20;
  const now = deps.clock.now();
  const rows = await repo.listForMerchant(deps.sql, {
    now,
    merchantId,
    chainIds: profiles.map((p) => deps.chain.chainId(p)),
    status: q.status,
    kind: q.kind,
    reference: q.reference,
    before: q.cursor ? decodeCursor(q.cursor) : undefined,
    limit: limit + 1,
  });
  const page = rows.slice(0, limit).map((p) => ({ ...p, status: effectiveStatus(p, now) }));
  const last = page.at(-1);
  return {
    rows: page,
    nextCursor: rows.length > limit && last ? encodeCursor(last) : null,
  };
}

function encodeCursor(p: PaymentRow): string {
  return btoa(`${p.createdAt.toISOString()}|${p.id}`).replace(/=+$/, "");
}

const CURSOR_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const CURSOR_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function decodeCursor(cursor: string): { createdAt: Date; id: string } {
  try {
    const [at, id, ...rest] = atob(cursor).split("|");
    const createdAt = new Date(at);
    // Only what encodeCursor writes: a four-digit-year ISO time (PostgreSQL reads no other; a
    // crafted +099999 is a valid Date) and a UUID.
    if (
      rest.length || !CURSOR_TIME.test(at) || isNaN(createdAt.getTime()) ||
      createdAt.toISOString() !== at || !CURSOR_ID.test(id)
    ) {
      throw new Error();
    }
    return { createdAt, id };
  } catch {
    throw new DomainError("payment_cursor_invalid");
  }
}

/** The merchant's payments on every chain, newest first (profile stats, dashboard). */
export async function recentForMerchant(
  deps: Deps,
  merchantId: string,
  limit: number,
  profiles?: ProfileName[],
) {
  return (await history(deps, merchantId, profiles ?? deps.chain.profiles(), { limit })).rows;
}

/**
 * One of the merchant's payments on `profiles`' chains (the dashboard's mode: one chain), status as
 * of now (dashboard detail).
 */
export async function merchantPayment(
  deps: Deps,
  merchantId: string,
  reference: string,
  profiles: ProfileName[],
): Promise<PaymentRow | null> {
  if (!REFERENCE_PATTERN.test(reference)) return null;
  const chainIds = profiles.filter((p) => deps.chain.has(p)).map((p) => deps.chain.chainId(p));
  if (chainIds.length === 0) return null;
  const p = await repo.findForMerchant(deps.sql, merchantId, reference, chainIds);
  return p ? { ...p, status: effectiveStatus(p, deps.clock.now()) } : null;
}

const DAY_MS = 24 * 3600 * 1000;

/**
 * Settled volume per UTC day (every chain, like the profile's stats) for the `days` days up to
 * today on `deps.clock`, oldest first; a day without settlements is 0.
 */
export async function dailyVolume(
  deps: Deps,
  merchantId: string,
  days = 30,
  profiles: ProfileName[] = deps.chain.profiles(),
): Promise<{ day: string; volume: bigint; count: number }[]> {
  const today = Math.floor(deps.clock.now().getTime() / DAY_MS) * DAY_MS;
  const since = new Date(today - (days - 1) * DAY_MS);
  const chainIds = profiles.filter((p) => deps.chain.has(p)).map((p) => deps.chain.chainId(p));
  const rows = await repo.dailyVolume(deps.sql, merchantId, since, chainIds);
  const byDay = new Map(rows.map((r) => [r.day.toISOString().slice(0, 10), r]));
  return Array.from({ length: days }, (_, i) => {
    const day = new Date(since.getTime() + i * DAY_MS).toISOString().slice(0, 10);
    const r = byDay.get(day);
    return { day, volume: r?.volume ?? 0n, count: r?.count ?? 0 };
  });
}

/** The sweep: PENDING payments past their deadline become EXPIRED. */
export async function expireDue(deps: Deps): Promise<number> {
  return await repo.expireDue(deps.sql, deps.clock.now());
}

/**
 * A PaymentSettled log past the confirmation depth, in the watcher's transaction. A log that
 * matches no payment, or not its chain, payee or amount, is recorded as unmatched.
 */
export async function settleFromLog(
  deps: Deps,
  tx: Db,
  log: {
    chainId: number;
    reference: string;
    payer: string;
    payTo: string;
    amount: bigint;
    txHash: string;
    logIndex: number;
    blockNumber: bigint;
  },
  opts: { autoSettled?: boolean; received?: bigint } = {},
): Promise<"settled" | "unmatched"> {
  const p = await repo.lockByReference(tx, log.reference);
  const reason = !p
    ? "unknown reference"
    : p.chainId !== log.chainId
    ? "reference belongs to another chain"
    : p.payTo.toLowerCase() !== log.payTo.toLowerCase()
    ? "paid to another address"
    : p.amount !== log.amount
    ? "amount differs from the payment"
    : p.status === "SUCCESS"
    ? "payment already settled"
    : null;
  if (reason || !p) {
    await repo.insertUnmatched(tx, { ...log, reason: reason ?? "unknown reference" });
    deps.log.warn("unmatched settlement", { reference: log.reference, txHash: log.txHash, reason });
    return "unmatched";
  }
  const now = deps.clock.now();
  const late = p.status !== "PENDING";
  await repo.markSettled(tx, p.id, {
    payer: log.payer.toLowerCase(),
    txHash: log.txHash,
    now,
    late,
  });
  if (late) {
    deps.log.warn("payment settled after it was marked " + p.status, { reference: p.reference });
  }
  if (p.webhookUrl) {
    const profile = deps.chain.profileOf(p.chainId);
    if (opts.autoSettled) {
      // A cross-chain payment: the bridge minted it here and routed it by its hook data.
      await emit(deps, tx, {
        merchantId: p.merchantId,
        url: p.webhookUrl,
        event: "payment.auto_settled",
        payload: {
          reference: p.reference,
          chainTxHash: log.txHash,
          // What the mint delivered (at least the payment's amount).
          amount: usdcToNumber(opts.received ?? p.amount),
          settlementType: "CCTP_V2_AUTO_ROUTED",
          explorerUrl: deps.chain.explorerTxUrl(profile, log.txHash),
        },
      });
    }
    await emit(deps, tx, {
      merchantId: p.merchantId,
      url: p.webhookUrl,
      event: "payment.settled",
      payload: {
        reference: p.reference,
        amount: usdcToNumber(p.amount),
        currency: p.currency,
        status: "SUCCESS",
        chainTxHash: log.txHash,
        explorerUrl: deps.chain.explorerTxUrl(profile, log.txHash),
      },
    });
  }
  return "settled";
}

/**
 * A cross-chain payment: the bridge's mint on the settlement chain paid `payTo` for the payment
 * its burn's hook data named. Settles like a PaymentSettled log, plus `payment.auto_settled`
 * whose `amount` is what arrived. The shopper's burn covers the bridge fee, so what arrives is
 * at least the payment's amount (a fee below the quoted maximum leaves the merchant a little
 * more); less than the amount is recorded as an unmatched settlement, the payment stays open.
 */
export async function settleBridged(
  deps: Deps,
  tx: Db,
  mint: {
    chainId: number;
    reference: string;
    payer: string;
    payTo: string;
    amount: bigint;
    txHash: string;
    blockNumber: bigint;
  },
): Promise<"settled" | "unmatched"> {
  const p = await repo.lockByReference(tx, mint.reference);
  const covered = !!p && mint.amount >= p.amount;
  return await settleFromLog(
    deps,
    tx,
    { ...mint, amount: covered ? p.amount : mint.amount, logIndex: 0 },
    { autoSettled: true, received: mint.amount },
  );
}

export { amountString };
