/** Escrow rules with no I/O: statuses, references, which party may do what, the record shape. */
import { formatUsdc } from "../../money.ts";
import { bigintJson, sha256 } from "../../codec.ts";

/** The spec's ACTIVE, RELEASED, DISPUTED, plus REFUNDED (docs/decisions.md, Escrow). */
export const ESCROW_STATUSES = ["ACTIVE", "DISPUTED", "RELEASED", "REFUNDED"] as const;
export type EscrowStatus = typeof ESCROW_STATUSES[number];
export const ESCROW_OUTCOMES = ["released", "refunded"] as const;
export type EscrowOutcome = typeof ESCROW_OUTCOMES[number];

/** Longest escrow: a year. Shortest: a minute. */
export const MAX_EXPIRY_SECONDS = 365 * 24 * 3600;
export const MIN_EXPIRY_SECONDS = 60;

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

function random62(n: number): string {
  let out = "";
  while (out.length < n) {
    for (const b of crypto.getRandomValues(new Uint8Array(n * 2))) {
      if (b < 248 && out.length < n) out += BASE62[b % 62];
    }
  }
  return out;
}

/** `escrow_<random>_<random>` (spec), 29 characters: fits the contract's bytes32 id as text. */
export function newEscrowReference(): string {
  return `escrow_${random62(10)}_${random62(10)}`;
}

export const NO_REASON = "No reason provided";

export interface EscrowRow {
  id: string;
  reference: string;
  merchantId: string;
  chainId: number;
  status: EscrowStatus;
  amount: bigint;
  currency: string;
  depositor: string;
  depositorWalletId: string;
  beneficiary: string;
  description: string | null;
  webhookUrl: string | null;
  expiresAt: Date;
  txHash: string;
  confirmedAt: Date | null;
  confirmTxHash: string | null;
  releaseTxHash: string | null;
  releasedAt: Date | null;
  disputeReason: string | null;
  disputedBy: string | null;
  disputeTxHash: string | null;
  disputedAt: Date | null;
  resolution: EscrowOutcome | null;
  resolveTxHash: string | null;
  resolvedAt: Date | null;
  refundTxHash: string | null;
  refundedAt: Date | null;
  createdAt: Date;
}

export function amountString(units: bigint): string {
  return formatUsdc(units, { decimals: "fixed" });
}

/** "in 2 h 13 min" / "in 45 s" / "expired". */
export function countdown(at: Date, now: Date): string {
  const s = Math.floor((at.getTime() - now.getTime()) / 1000);
  if (s <= 0) return "expired";
  const d = Math.floor(s / 86400),
    h = Math.floor((s % 86400) / 3600),
    m = Math.floor((s % 3600) / 60);
  if (d > 0) return `in ${d} d ${h} h`;
  if (h > 0) return `in ${h} h ${m} min`;
  if (m > 0) return `in ${m} min ${s % 60} s`;
  return `in ${s} s`;
}

/** The escrow actions that send a transaction after creation. */
export const ESCROW_ACTIONS = ["confirm", "dispute", "release", "refund", "resolve"] as const;
export type EscrowActionName = typeof ESCROW_ACTIONS[number];

/** The deterministic intent of an action's transaction: one per action and escrow, ever. */
export function actionIntent(action: EscrowActionName, reference: string): string {
  return `escrow:${action}:${reference}`;
}

/**
 * The actions whose mined transaction would move this row from where it stands, in the order to
 * apply them (a confirmation not yet recorded first: it can only have been mined while ACTIVE):
 * what to look for among our recorded transactions when the chain may have moved without the
 * row. Ended escrows: none (the catch-up reads open escrows only).
 */
export function pendingActions(
  e: Pick<EscrowRow, "status" | "confirmedAt">,
): EscrowActionName[] {
  const confirm = e.confirmedAt ? [] : ["confirm" as const];
  if (e.status === "ACTIVE") return [...confirm, "dispute", "release", "refund"];
  if (e.status === "DISPUTED") return [...confirm, "resolve"];
  return [];
}

/** The intent of an escrow's create transaction. */
export function createIntent(reference: string): string {
  return `escrow:create:${reference}`;
}

/**
 * Serialisation without a held connection (src/db/claims.ts): actions on one escrow take turns
 * on `escrow:<reference>`; creations from one depositor wallet take turns on
 * `escrow-depositor:<walletId>` (each sees the balance the one before left, and any creation a
 * dead process left pending is settled first). A dead holder's claim lapses after `ttlMs`; a
 * request waits at most `waitMs` for its turn (then 409 resource_busy).
 */
export const escrowClaim = (reference: string) => `escrow:${reference}`;
export const depositorClaim = (walletId: string) => `escrow-depositor:${walletId}`;
export const ESCROW_CLAIM = { ttlMs: 15_000, waitMs: 30_000 };

/**
 * The request key of an API creation: its Idempotency-Key with the request it came with (chain
 * and body), so a retry of the same request under another of the merchant's credentials (a
 * rotated key, a second key) finds the first escrow, and another request under a reused key is
 * another escrow, never the first one's answer.
 */
export function apiCreateKey(idempotencyKey: string, profile: string, input: unknown): string {
  return `api:${idempotencyKey}\n${sha256(bigintJson([profile, input]))}`;
}
