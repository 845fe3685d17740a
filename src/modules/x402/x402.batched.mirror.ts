/**
 * The mirror of payers' vault balances that gateway-balance reservations count on
 * (x402_gateway_accounts): re-read from the chain when a reservation finds no room, and held
 * still while a withdrawal of ours is in flight.
 */
import type { Deps } from "../../deps.ts";
import type { ProfileName } from "../../chain/profiles.ts";
import * as repo from "./x402.batched.repo.ts";
import { MIRROR_TTL_S, withdrawalSettled } from "./x402.batched.rules.ts";
import { DomainError } from "../../errors.ts";
import { groupCommit } from "../../db/group-commit.ts";

/** How long a withdrawal of ours keeps reservations of its payer refused, at most (a crash). */
const WITHDRAW_HOLD_MS = 180_000;

/**
 * The one-statement reservation, against a mirror no older than MIRROR_TTL_S: when it finds no
 * room (no mirror yet, a stale one, or not enough), the payer's balance is read from the chain
 * once and the reservation tried again. The first try is a group commit (`reserveGrouped`).
 */
export async function reserveCharge(
  deps: Deps,
  p: ProfileName,
  c: repo.NewCharge,
): Promise<repo.Reservation> {
  const first = await reserveGrouped(deps, c);
  if (first !== "no_funds") return first;
  await syncAccount(deps, p, c.payer as `0x${string}`);
  const now = deps.clock.now();
  return await repo.reserve(paidSql(deps), { ...c, now }, freshSince(now));
}

const freshSince = (now: Date) => new Date(now.getTime() - MIRROR_TTL_S * 1000);

/**
 * The paid path's writes as one group commit (src/db/group-commit.ts): the reservations of calls
 * arriving and the served marks of calls answered while one statement is in flight are written
 * together by the next (repo.reserveAndServe: one statement, one transaction; at most 256 items;
 * never two reservations with one (chain, payer, nonce), so a replay waits for the next
 * statement, which finds the nonce used). A group whose statement fails is tried again one item
 * at a time, so one bad item fails alone. Each statement after another waits one turn of the
 * event loop (`gather`): the checks and upstream answers already received join it, ~15% fewer
 * statements at 32 calls in flight, where PostgreSQL's cost is mostly per statement. Two
 * statements may be in flight (`pipeline`): what arrives while one runs is sent behind it on the
 * connection, which runs it as soon as the first commits, rather than after the first's answer
 * has come back and been read (~7% more paid calls at 32 in flight, the cores idle less). The
 * groups do not depend on each other: a replayed nonce in the second finds the first's claim
 * committed, and a call's served mark is only sent once its reservation has been answered.
 */
type Write =
  | { deps: Deps; charge: repo.NewCharge; mark?: undefined }
  | { deps: Deps; mark: repo.Served; charge?: undefined };

const writeGroup = groupCommit<Write, repo.Reservation | null>(
  async (group) => {
    const { deps } = group[0].item;
    const sql = paidSql(deps);
    const now = deps.clock.now();
    const charges: repo.NewCharge[] = [];
    const marks: repo.Served[] = [];
    for (const w of group) {
      if (w.item.charge) charges.push(w.item.charge);
      else marks.push(w.item.mark);
    }
    if (!charges.length) {
      await repo.serveMany(sql, marks, now);
      for (const w of group) w.resolve(null);
      return;
    }
    const out = await repo.reserveAndServe(sql, charges, marks, freshSince(now), now);
    for (const w of group) {
      w.resolve(w.item.charge ? out.get(w.item.charge.id) ?? "no_funds" : null);
    }
  },
  {
    max: 256,
    gather: true,
    pipeline: 2,
    apart: ({ charge: c, mark }) => c ? `${c.chainId}:${c.payer}:${c.nonce}` : `served:${mark.id}`,
    alone: {
      write: async ({ deps, charge, mark }) => {
        const sql = paidSql(deps);
        if (charge) return await repo.reserve(sql, charge, freshSince(deps.clock.now()));
        await repo.serve(sql, mark.id, mark.upstreamStatus, deps.clock.now());
        return null;
      },
      failed: (error, items) =>
        items[0].deps.log.warn("x402 paid-path writes: a group failed, tried one by one", {
          size: items.length,
          error,
        }),
    },
  },
);

const reserveGrouped = async (deps: Deps, charge: repo.NewCharge) =>
  (await writeGroup(paidSql(deps), { deps, charge }))!;

/** The paid path's own connection (service.ts), else the pool. */
export const paidSql = (deps: Deps) => deps.paidSql ?? deps.sql;

/**
 * Re-reads the payer's available vault balance into the mirror; first clears the withdrawal mark
 * of a process that died during a withdrawal (`clearLapsedWithdrawal`).
 */
export async function syncAccount(deps: Deps, p: ProfileName, payer: `0x${string}`) {
  await clearLapsedWithdrawal(deps, p, payer);
  const { available, block } = await deps.chain.gateway.availableAt(p, payer);
  await repo.sync(deps.sql, {
    chainId: deps.chain.chainId(p),
    payer,
    available,
    block,
    now: deps.clock.now(),
  });
}

/**
 * A withdrawal mark whose process died (kill -9: its liveness claim lapsed, src/db/liveness.ts)
 * is cleared as soon as nothing of its withdrawal can still be mined (its intent never sent,
 * finished, or its transaction in a block), instead of refusing the payer's paid calls for the rest of WITHDRAW_HOLD_MS; the
 * mirror is then read again from the chain. A withdrawal still in flight keeps it.
 */
export async function clearLapsedWithdrawal(deps: Deps, p: ProfileName, payer: `0x${string}`) {
  const chainId = deps.chain.chainId(p);
  const lapsed = await repo.lapsedWithdrawal(deps.sql, chainId, payer, deps.clock.now());
  if (!lapsed) return;
  const tx = await deps.chain.intent(p, lapsed.intent);
  // Sent and not yet marked: mined already is as good as finished (its record follows within
  // chain recovery's minute; the mirror is read from the chain next, withdrawal counted).
  const mined = tx && !withdrawalSettled(tx.status) &&
    await deps.chain.runtime(p).client.getTransactionReceipt({ hash: tx.txHash as `0x${string}` })
      .then(() => true, () => false);
  if (!mined && !withdrawalSettled(tx?.status ?? null)) return;
  if (await repo.clearWithdrawal(deps.sql, chainId, payer, lapsed.owner)) {
    deps.log.info("x402 mirror: a dead process's withdrawal mark cleared", {
      payer,
      intent: lapsed.intent,
      tx: tx?.status ?? "never sent",
    });
  }
}

/**
 * Runs a withdrawal of `payer`'s vault balance: reservations of the payer are refused while it
 * is in flight (the mark takes the mirror row's lock, so every reservation before it is committed
 * and counted by the withdrawal's check), and the mirror is read again once it is mined. The mark
 * names this process and the withdrawal's intent, so it is cleared soon after a kill
 * (`clearLapsedWithdrawal`); `fn` calls `fence()` after its checks and before it sends: it throws
 * when this process may have been taken for dead since the mark (its mark may be gone, and paid
 * calls counted on the balance the withdrawal would take).
 */
export async function whileWithdrawing<T>(
  deps: Deps,
  p: ProfileName,
  payer: `0x${string}`,
  intentKey: string,
  fn: (fence: () => void) => Promise<T>,
): Promise<T> {
  const chainId = deps.chain.chainId(p);
  const since = performance.now();
  await repo.markWithdrawing(
    deps.sql,
    chainId,
    payer,
    new Date(deps.clock.now().getTime() + WITHDRAW_HOLD_MS),
    { owner: deps.liveness?.id ?? null, intent: intentKey },
  );
  const fence = () => {
    if (deps.liveness && !deps.liveness.heldSince(since)) {
      throw new DomainError("x402_withdrawal_lapsed");
    }
  };
  try {
    return await fn(fence);
  } finally {
    let stale = false;
    try {
      await syncAccount(deps, p, payer);
    } catch (error) {
      // The node did not answer the re-read: the mirror is left marked never read, so the payer's
      // next reservation reads the chain first (a withdrawal mined meanwhile is never counted on),
      // and what the withdrawal itself answered (its transaction, or its refusal) stands.
      stale = true;
      deps.log.warn("x402 mirror: not read again after a withdrawal; marked unread", {
        payer,
        error,
      });
    } finally {
      await repo.markWithdrawing(deps.sql, chainId, payer, null, { stale });
    }
  }
}

/**
 * Marks a charge served (reserved → pending) before its answer goes out, as a group commit
 * with the reservations (`writeGroup` above): the marks and reservations that arrive while one
 * statement is in flight are written together by the next. Each caller waits for its own row.
 */
export function serveCharge(deps: Deps, id: string, upstreamStatus: number): Promise<void> {
  return writeGroup(paidSql(deps), { deps, mark: { id, upstreamStatus } }).then(() => {});
}
