/** Payroll's pure rules: references, chunking, the end state, the texts of failures. */
import type { BatchStatus, RecipientInput } from "./payroll.types.ts";

export const MAX_RECIPIENTS = 5000;

const ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789";

function random(n: number): string {
  const bytes = crypto.getRandomValues(new Uint8Array(n));
  return [...bytes].map((b) => ALPHABET[b % ALPHABET.length]).join("");
}

/** `payroll_<time base36>_<random>`: unique, sortable by creation, unguessable. */
export function newBatchRef(now: Date): string {
  return `payroll_${now.getTime().toString(36)}_${random(10)}`;
}

export const ZERO_AMOUNT_ERROR = "Amount must be greater than 0.";
export const TRANSFER_FAILED_ERROR =
  "The USDC transfer to this recipient failed on chain (refused by the token, or the payer's balance ran out).";

/**
 * Chunks over the recipients that are sent on chain (a zero amount is not): the k-th payable
 * recipient goes in chunk floor(k / size). Null for those not sent.
 */
export function assignChunks(recipients: RecipientInput[], size: number): (number | null)[] {
  let k = 0;
  return recipients.map((r) => (r.amount === 0n ? null : Math.floor(k++ / size)));
}

/** The end state once no recipient is left to process (null: not finished). */
export function endState(
  counts: { success: number; failed: number; pendingSignature: number; pending: number },
): BatchStatus | null {
  if (counts.pending > 0) return null;
  if (counts.pendingSignature > 0) return "AWAITING_SIGNATURES";
  if (counts.failed === 0) return "COMPLETED";
  if (counts.success === 0) return "FAILED";
  return "PARTIAL_FAILURE";
}

export const TERMINAL: BatchStatus[] = ["COMPLETED", "PARTIAL_FAILURE", "FAILED"];

/**
 * Work on a batch is serialised by a resource claim (src/db/claims.ts), which holds no connection
 * while the batch's chunks are sent and awaited. It is taken before the batch's row is written, so
 * a PROCESSING batch without a live claim is one nobody works on (its process died): the sweep
 * and a worker's start resume it. A dead holder's claim lapses after the TTL, so a restart resumes
 * within seconds; two workers on one batch at once would still pay nobody twice (every chunk is
 * an intent), the claim only keeps them from doing the work twice.
 */
export const batchClaim = (batchId: string) => `payroll-batch:${batchId}`;
export const BATCH_CLAIM_TTL_MS = 5_000;
