/**
 * Catching up with the chain: an action's transaction mined without its row's commit (a process
 * killed between the receipt and the commit) left the chain ahead of the row and its event
 * unsent. Open escrows (ACTIVE, DISPUTED) are compared with the confirmed transactions of their
 * action intents (`escrow:<action>:<reference>`, the keys every action sends with), and each one
 * found is applied exactly as the action applies it (escrow.apply.ts): same change, same event,
 * once. Run by the per-minute sweep, at a worker's start, and when an action is refused for the
 * escrow's state. Safe with several processes: each escrow is applied with its row locked and
 * re-read, so an action or another catch-up that got there first leaves nothing to do.
 */
import type { Deps } from "../../deps.ts";
import * as repo from "./escrow.repo.ts";
import { APPLY } from "./escrow.apply.ts";
import {
  actionIntent,
  ESCROW_ACTIONS,
  type EscrowActionName,
  type EscrowRow,
  pendingActions,
} from "./escrow.rules.ts";

type Mined = Map<string, { confirmedAt: Date | null }>;

/** Whether one of the actions that could move this row has a mined transaction. */
function behind(e: Pick<EscrowRow, "reference" | "status" | "confirmedAt">, mined: Mined) {
  return pendingActions(e).some((a) => mined.has(actionIntent(a, e.reference)));
}

/**
 * Applies, in order, every action of one escrow whose transaction was mined without its row
 * changing (a dispute then its resolution: both). Returns the actions applied (none when the
 * row is up to date).
 */
export async function catchUpEscrow(deps: Deps, reference: string): Promise<EscrowActionName[]> {
  const found = await repo.findByReference(deps.sql, reference);
  if (!found || !pendingActions(found).length) return [];
  const profile = deps.chain.profileOf(found.chainId);
  // Every action's intent: a dispute caught up may be followed by its resolution. Receipts the
  // node has for those still recorded in flight are recorded first (after a restart, before the
  // recovery sweep's grace period is over).
  const intents = ESCROW_ACTIONS.map((a) => actionIntent(a, reference));
  await deps.chain.recordMinedIntents(profile, intents);
  const mined = await deps.chain.confirmedIntents(profile, intents);
  if (!behind(found, mined)) return [];
  const applied = await deps.sql.begin(async (db) => {
    const done: EscrowActionName[] = [];
    for (let e = await repo.lockByReference(db, reference); e;) {
      const next = pendingActions(e).find((a) => mined.has(actionIntent(a, reference)));
      if (!next) break;
      const tx = mined.get(actionIntent(next, reference))!;
      // When the transaction was recorded mined: when the action took effect.
      await APPLY[next](deps, db, e, tx, tx.confirmedAt ?? deps.clock.now());
      done.push(next);
      e = await repo.findByReference(db, reference);
    }
    return done;
  });
  if (applied.length) {
    deps.log.warn("escrow caught up with the chain", { reference, applied });
  }
  return applied;
}

/**
 * Catches up every open escrow whose action transaction was mined without its row changing:
 * open escrows are read a page at a time, and each page's intents are looked up in one query
 * per chain. Returns how many escrows were caught up. Escrows on a chain not configured here
 * are left alone; one escrow's failure is logged and does not stop the others.
 */
export async function catchUpOpen(deps: Deps, opts: { pageSize?: number } = {}): Promise<number> {
  const pageSize = opts.pageSize ?? 500;
  const chainIds = new Set(deps.chain.profiles().map((p) => deps.chain.chainId(p)));
  let caught = 0;
  for (let after = 0n;;) {
    const page = await repo.openPage(deps.sql, after, pageSize);
    if (!page.length) break;
    after = page.at(-1)!.seq;
    for (const chainId of new Set(page.map((e) => e.chainId))) {
      if (!chainIds.has(chainId)) continue;
      const rows = page.filter((e) => e.chainId === chainId);
      const profile = deps.chain.profileOf(chainId);
      const intents = rows.flatMap((e) =>
        pendingActions(e).map((a) => actionIntent(a, e.reference))
      );
      await deps.chain.recordMinedIntents(profile, intents);
      const mined = await deps.chain.confirmedIntents(profile, intents);
      for (const e of rows.filter((e) => behind(e, mined))) {
        try {
          if ((await catchUpEscrow(deps, e.reference)).length) caught++;
        } catch (err) {
          deps.log.warn("escrow catch-up failed", { reference: e.reference, error: err });
        }
      }
    }
    if (page.length < pageSize) break;
  }
  return caught;
}
