/**
 * Jobs catch up with the chain. The contract is public (a party may act on it directly) and a
 * process may stop anywhere between recording an action and recording its result, so:
 * - `reconcile` (reads, refused actions, before an action): the chain's status wins, with the
 *   hashes the contract holds and those of our own confirmed intents; a row never moves back.
 * - `settlePending` (under the job's claim): an action recorded on the row before its first
 *   transaction (`pending_*`, migration 0021) whose process died is followed to its end: its
 *   transactions mined are recorded from their receipts first; any still in flight → wait (the
 *   chain's recovery finishes them); all settled → the row takes the chain's status with the
 *   action's hashes and text, and the record is cleared.
 * - `catchUpPending` runs that at a worker's start and every minute for every pending record; a
 *   live owner holds the job's claim, so only a dead owner's record is taken.
 */
import type { Deps } from "../../deps.ts";
import type { ProfileName } from "../../chain/profiles.ts";
import { DomainError } from "../../errors.ts";
import { withClaim } from "../../db/claims.ts";
import * as repo from "./commerce.repo.ts";
import {
  actionIntents,
  actionsBetween,
  chainIsAhead,
  intentColumn,
  type JobRow,
} from "./commerce.rules.ts";

const ZERO = `0x${"0".repeat(64)}`;

/** The claim that serialises every action on one job (src/db/claims.ts). */
export const jobClaim = (row: Pick<JobRow, "chainId" | "contractAddress" | "jobId">) =>
  `job:${row.chainId}:${row.contractAddress}:${row.jobId}`;

/**
 * The chain's state wins over the row's: a job that moved on chain without its row changing is
 * brought up to date, with the hashes the contract holds and the transactions we recorded for
 * the steps in between, if we sent them. A row at an end is not read again.
 */
export async function reconcile(deps: Deps, row: JobRow): Promise<JobRow> {
  if (!chainIsAhead(row.status, "COMPLETED")) return row; // an end: nothing moves it
  const profile = deps.chain.profileOf(row.chainId);
  const chain = await deps.chain.jobs.read(profile, BigInt(row.jobId));
  if (!chainIsAhead(row.status, chain.status)) return row;
  const change: repo.JobChange = { status: chain.status };
  if (chain.deliverable !== ZERO && row.deliverableHash === null) {
    change.deliverableHash = chain.deliverable;
  }
  if (chain.reason !== ZERO && row.reasonHash === null) change.reasonHash = chain.reason;
  const family = `${jobClaim(row)}:`;
  await recordMined(deps, profile, family);
  for (const step of actionsBetween(row.status, chain.status)) {
    if (row[step.column] !== null) continue;
    const tx = await deps.chain.confirmedIntent(profile, `${family}${step.action}:`, step.suffix);
    if (tx) change[step.column] = tx.txHash;
  }
  await repo.catchUp(deps.sql, row.id, row.status, change, deps.clock.now());
  deps.log.warn("job row caught up with the chain", {
    jobId: row.jobId,
    from: row.status,
    to: chain.status,
  });
  return (await repo.find(deps.sql, row))!;
}

/**
 * Our transactions of the job still recorded in flight whose receipts the node has: recorded now
 * (a process killed after its action was mined left them so until chain recovery's sweep, a
 * minute on), so the job's hashes are read with its status, not a minute after it.
 */
async function recordMined(deps: Deps, profile: ProfileName, family: string): Promise<void> {
  await deps.chain.openIntents(profile, family); // records the mined ones
}

/**
 * A pending action's end, under the job's claim. `inFlight` when one of its transactions is
 * still signed or broadcast (not decided yet); otherwise the row as the chain left it, with the
 * action's hashes (and its text, when its transaction was mined) and no pending record.
 */
export async function settlePending(
  deps: Deps,
  row: JobRow,
): Promise<{ row: JobRow; inFlight: boolean }> {
  if (!row.pendingAction || !row.pendingIntent) return { row, inFlight: false };
  const profile = deps.chain.profileOf(row.chainId);
  const keys = actionIntents(row.pendingAction, row.pendingIntent);
  await deps.chain.recordMinedIntents(profile, keys);
  const txs = await Promise.all(keys.map((k) => deps.chain.intent(profile, k)));
  if (txs.some((t) => t && (t.status === "signed" || t.status === "broadcast"))) {
    return { row, inFlight: true };
  }
  const current = await reconcile(deps, row);
  const change: repo.JobChange = { status: current.status };
  // The action's own transaction was mined: its hashes and its text (the chain holds only the
  // hashes) are ours. Otherwise nothing of it is recorded (an approval alone locks nothing).
  if (txs.at(-1)?.status === "confirmed") {
    for (const [i, tx] of txs.entries()) {
      if (tx?.status === "confirmed") change[intentColumn(row.pendingAction, keys[i])] = tx.txHash;
    }
    Object.assign(change, textOf(row.pendingChange));
  }
  const settled = await repo.applyAction(
    deps.sql,
    row.id,
    [],
    change,
    row.pendingIntent,
    deps.clock.now(),
  );
  deps.log.warn("job pending action settled", {
    jobId: row.jobId,
    action: row.pendingAction,
    status: settled.status,
  });
  return { row: settled, inFlight: false };
}

/** The text fields a pending action carries (deliverable, reason and their hashes). */
function textOf(change: Record<string, string> | null): Partial<repo.JobChange> {
  if (!change) return {};
  const out: Partial<repo.JobChange> = {};
  for (const k of ["deliverableData", "deliverableHash", "reason", "reasonHash"] as const) {
    if (typeof change[k] === "string") out[k] = change[k];
  }
  return out;
}

/**
 * Every pending action a dead process left: settled where its transactions are decided, left
 * for the next run where they are still in flight or a live process holds the job. Returns how
 * many were settled.
 */
export async function catchUpPending(
  deps: Deps,
  opts: { olderThanMs?: number; limit?: number } = {},
): Promise<number> {
  const rows = await repo.pendingSince(deps.sql, opts.olderThanMs ?? 0, opts.limit ?? 100);
  let settled = 0;
  for (const row of rows) {
    try {
      const done = await withClaim(deps.sql, jobClaim(row), async () => {
        // Settled meanwhile by another sweep (read before it took the claim): not counted.
        const fresh = await repo.find(deps.sql, row);
        return fresh?.pendingAction ? !(await settlePending(deps, fresh)).inFlight : false;
      }, { waitMs: 1000 });
      if (done) settled++;
    } catch (e) {
      if (!(e instanceof DomainError && e.code === "resource_busy")) {
        deps.log.warn("job pending action not settled yet", { jobId: row.jobId, error: e });
      }
    }
  }
  return settled;
}
