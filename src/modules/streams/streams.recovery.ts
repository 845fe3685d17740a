/**
 * Finishing stream creates a killed process left PENDING (DESIGN §11: whatever locks funds in a
 * contract is recoverable from the chain). Run at a worker's start and by the per-minute sweep.
 * Each intent is taken under the stream's claim: a live request holding it is still at work (its
 * create is then DONE or FAILED when the claim comes free), and a killed one's claim lapses after
 * its time to live. The sweep does not wait for a held claim (the next sweep comes back); a
 * worker's start waits past a lapse, so a process started after a crash finishes what the crash
 * left. Then the chain decides:
 *
 * - the vault holds the stream → its record, `stream.created` (once) and the drain job are
 *   written from the intent, `startedAt` the vault's start (the create block's timestamp);
 * - the create was never sent, or was refused or reverted → FAILED: nothing was locked;
 * - the create was broadcast and is not mined yet → left PENDING (the transaction recovery
 *   re-broadcasts it; a later run finishes it).
 */
import type { Deps } from "../../deps.ts";
import { DomainError } from "../../errors.ts";
import type { ProfileName } from "../../chain/index.ts";
import { withClaim } from "../../db/claims.ts";
import * as repo from "./streams.repo.ts";
import { claimOf, profileOf, recordStop, reread } from "./streams.records.ts";
import { finishCreate } from "./streams.service.ts";

export type CreateRecovery = "done" | "failed" | "waiting" | "none";

export async function recoverCreates(
  deps: Deps,
  opts: { waitMs?: number } = {},
): Promise<{ done: number; failed: number }> {
  const chainIds = deps.chain.profiles().map((p) => deps.chain.chainId(p));
  const pending = await repo.pendingCreates(deps.sql, chainIds);
  let done = 0, failed = 0;
  for (const c of pending) {
    try {
      const r = await withClaim(
        deps.sql,
        claimOf(c.reference),
        () => recoverCreate(deps, c.reference),
        { waitMs: opts.waitMs ?? 0 },
      );
      if (r === "done") done++;
      if (r === "failed") failed++;
    } catch (e) {
      if (e instanceof DomainError && e.code === "resource_busy") continue;
      deps.log.warn("stream create recovery failed", { reference: c.reference, error: e });
    }
  }
  if (done || failed) deps.log.warn("stream creates recovered", { done, failed });
  return { done, failed };
}

/** One PENDING create, decided from the chain (call it holding the stream's claim). */
export async function recoverCreate(deps: Deps, reference: string): Promise<CreateRecovery> {
  const c = await repo.findCreate(deps.sql, reference);
  if (!c || c.status !== "PENDING") return "none";
  const p = c.profile as ProfileName;
  const tx = await deps.chain.intent(p, `stream-create:${reference}`);
  const vault = await deps.chain.streams.get(p, reference);
  if (vault.status !== "None") {
    const ours = vault.sender.toLowerCase() === c.senderSca &&
      vault.receiver.toLowerCase() === c.receiverSca && vault.rate === c.rate &&
      vault.deposit === c.deposit;
    if (!tx || !ours) {
      // Not a create of ours: nothing to rebuild from; an operator has to look.
      deps.log.error("a stream on chain does not match its create intent", { reference });
      return "waiting";
    }
    await finishCreate(deps, c, tx.txHash, vault.startTime);
    return "done";
  }
  if (tx && (tx.status === "signed" || tx.status === "broadcast")) return "waiting";
  await repo.settleCreate(
    deps.sql,
    reference,
    "FAILED",
    tx ? `create transaction ${tx.status}, nothing locked` : "never sent, nothing locked",
  );
  return "failed";
}

/**
 * Records the stops a killed process saw mined and did not record (killed between the receipt
 * and the commit): an ACTIVE stream whose stop intent is confirmed on chain is recorded as its
 * stop request would have (STOPPED or, at the end, COMPLETED, with its webhook), from the stop's
 * events. Run at a worker's start, under each stream's claim (waited past a crash's lapse);
 * otherwise the next action on the stream, or its drain at the end, finds the same.
 */
export async function recoverStops(
  deps: Deps,
  opts: { waitMs?: number } = {},
): Promise<number> {
  const chainIds = deps.chain.profiles().map((p) => deps.chain.chainId(p));
  let recorded = 0;
  for (const s of await repo.active(deps.sql, chainIds)) {
    try {
      const tx = await deps.chain.confirmedIntent(profileOf(s), `stream-stop:${s.reference}:`);
      if (!tx) continue;
      await withClaim(deps.sql, claimOf(s.reference), async () => {
        const now = await reread(deps, s);
        if (now.status !== "ACTIVE") return;
        await recordStop(deps, now, tx);
        recorded++;
      }, { waitMs: opts.waitMs ?? 0 });
    } catch (e) {
      if (e instanceof DomainError && e.code === "resource_busy") continue;
      deps.log.warn("stream stop recovery failed", { reference: s.reference, error: e });
    }
  }
  if (recorded) deps.log.warn("stream stops recovered", { recorded });
  return recorded;
}
