/**
 * Rules of paid calls accepted on the gateway balance and settled in batches (pure): Circle's
 * batched option as our 402 offers it, how recent the balance mirror must be, and how long an
 * authorization must stay valid so that the settlement that carries it is still in time.
 *
 * The solvency rule (docs/decisions.md, "x402 batched acceptance"): a charge is accepted only
 * when the payer's vault `available` balance, read at most MIRROR_TTL_S ago, less every charge
 * not yet settled, covers it; its authorization must stay valid at least settleWindow() longer;
 * and a vault that holds outside payers' funds must delay withdrawals by more than
 * MIRROR_TTL_S + settleWindow(), so what a payer starts withdrawing after our read is still
 * spendable by every authorization we accepted on that read until it is settled; and only its
 * settlers (our relayers) may submit authorizations, so a payer cannot move that balance with
 * one of its own before our settlement does (batchedRefusal).
 */
import { MAX_AUTHORIZATION_SECONDS } from "./x402.context.ts";
export const BATCHED_NAME = "GatewayWalletBatched";
export const BATCHED_VERSION = "1";
/** What the offer says (Circle's client signs for at least 7 days whatever it says). */
export const BATCHED_MAX_TIMEOUT_SECONDS = 3600;
/** How old a read of the payer's vault balance may be for a reservation to count on it. */
export const MIRROR_TTL_S = 30;
/** Room for a settlement round that is late (a slow receipt, a restart). */
export const SETTLE_MARGIN_S = 120;
/** A reservation older than this lost its process during the upstream call: released. */
export const STALE_RESERVATION_MS = 120_000;

/** The longest a served charge waits for its settlement to be mined, at most. */
export function settleWindow(batchSeconds: number): number {
  return 2 * batchSeconds + SETTLE_MARGIN_S;
}

/** The least withdrawal delay under which the vault's balances are safe to accept on. */
export function minWithdrawalDelay(batchSeconds: number): number {
  return MIRROR_TTL_S + settleWindow(batchSeconds);
}

/**
 * Why a vault is not safe for batched acceptance off a local node, or null when it is: a payer's
 * only way to take back a balance it promised must be a withdrawal that waits past every
 * settlement of what it promised. So no one but our relayers (the vault's settlers) may submit
 * its authorizations (`missing`: the relayers that may not; null: anyone may), and the delay
 * must be at least `needed` (minWithdrawalDelay).
 */
export function batchedRefusal(
  v: { delay: bigint; needed: number; missing: readonly string[] | null },
): string | null {
  if (v.missing === null) return "anyone may submit the vault's authorizations (no settlers)";
  if (v.missing.length) return "some relayers are not settlers of the vault";
  if (v.delay < BigInt(v.needed)) return "the vault's withdrawal delay is too short";
  return null;
}

export type WindowCheck = "ok" | "not_yet_valid" | "too_short";

/** validAfter reached, and validBefore leaving the settlement window. */
export function checkBatchedWindow(
  a: { validAfter: bigint; validBefore: bigint },
  nowS: bigint,
  batchSeconds: number,
): WindowCheck {
  if (a.validAfter > nowS) return "not_yet_valid";
  if (a.validBefore < nowS + BigInt(settleWindow(batchSeconds))) return "too_short";
  // Beyond what is stored (a bigint): as good as never expiring, refused like a short one.
  if (a.validBefore > MAX_AUTHORIZATION_SECONDS) return "too_short";
  return "ok";
}

/** Whether a decoded payment header is Circle's batched option (by what it accepted). */
export function isBatchedPayment(decoded: unknown): boolean {
  if (!decoded || typeof decoded !== "object") return false;
  const accepted = (decoded as { accepted?: unknown }).accepted;
  if (!accepted || typeof accepted !== "object") return false;
  const extra = (accepted as { extra?: { name?: unknown; version?: unknown } }).extra;
  return extra?.name === BATCHED_NAME && extra?.version === BATCHED_VERSION;
}

/**
 * Whether a dead process's withdrawal mark may be cleared, given its intent's transaction status
 * (none: never written, so never sent): only once nothing of it can still be mined. A signed or
 * broadcast one is in flight (chain recovery sends or finishes it); the mark stays until then.
 */
export function withdrawalSettled(status: string | null): boolean {
  return status === null || status === "confirmed" || status === "reverted" ||
    status === "failed";
}
