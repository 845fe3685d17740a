/**
 * The drain: a fully streamed ACTIVE stream gets its receiver's remainder paid (the operator
 * sends the vault's withdraw, which pays only the receiver) and becomes COMPLETED, `stoppedAt`
 * its true end. Creation enqueues it for the end time (pg-boss runs it then, on the database's
 * clock); the per-minute sweep enqueues what the service's clock says is due.
 *
 * Whether the end has come is the chain's to say: the vault's accrual at the chain's present.
 * On a local node (mines only on demand) the present is a block mined for the purpose, so a
 * stream completes within seconds of its end there too; on a real chain it is the head. Not yet
 * there: the drain is sent again for the time left (a second or more, a minute at most).
 */
import type { Deps } from "../../deps.ts";
import { DomainError } from "../../errors.ts";
import { withClaim } from "../../db/claims.ts";
import * as repo from "./streams.repo.ts";
import { drainStreamQueue } from "./streams.queues.ts";
import type { StreamRow } from "./streams.types.ts";
import { catchUp, claimOf, completeEnded, profileOf, reread } from "./streams.records.ts";

export type DrainOutcome = "completed" | "skipped" | "later";

/** How often a drain that came early is sent again; after that the sweep takes over. */
export const DRAIN_RESENDS = 10;

export async function drainStream(
  deps: Deps,
  streamId: string,
  resends = DRAIN_RESENDS,
): Promise<DrainOutcome> {
  const found = await repo.findById(deps.sql, streamId);
  if (!found || found.status !== "ACTIVE") return "skipped";
  try {
    return await withClaim(
      deps.sql,
      claimOf(found.reference),
      () => drainClaimed(deps, found, resends),
      { waitMs: 30_000 },
    );
  } catch (e) {
    // Someone is acting on the stream for that long: the next drain or sweep comes back.
    if (e instanceof DomainError && e.code === "resource_busy") return "skipped";
    throw e;
  }
}

async function drainClaimed(
  deps: Deps,
  found: StreamRow,
  resends: number,
): Promise<DrainOutcome> {
  const s = await reread(deps, found);
  if (s.status !== "ACTIVE") return "skipped";
  const p = profileOf(s);
  // A drain sent before a crash is found again by its intent (never sent twice).
  if (!(await deps.chain.transaction(p, `stream-drain:${s.reference}`))) {
    const state = await deps.chain.streams.state(p, s.reference);
    if (state.status !== "Active") {
      return (await catchUp(deps, s, state.status)).status === "ACTIVE" ? "skipped" : "completed";
    }
    if (state.accrued < state.deposit) {
      const left = (BigInt(Math.ceil(s.endsAt.getTime() / 1000)) - state.at) * 1000n;
      const ms = Math.min(60_000, Math.max(1000, Number(left)));
      if (resends > 0) {
        await deps.queue.send(drainStreamQueue, { streamId: s.id, resends: resends - 1 }, {
          startAfter: ms,
        });
      }
      return "later";
    }
  }
  const after = await completeEnded(deps, s);
  return after.status === "COMPLETED" ? "completed" : "skipped";
}

/**
 * The sweep: every ACTIVE stream whose accrual has ended by the clock gets a drain job, which is
 * not sent again if it comes early (the next sweep is a minute away): one chain of resends per
 * stream at most, however many sweeps ran.
 */
export async function enqueueDue(deps: Deps): Promise<number> {
  const due = await repo.dueForDrain(deps.sql, deps.clock.now());
  for (const { id } of due) await deps.queue.send(drainStreamQueue, { streamId: id, resends: 0 });
  return due.length;
}
