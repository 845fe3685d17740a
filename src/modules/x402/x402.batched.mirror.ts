/**
 * The mirror of payers' vault balances that gateway-balance reservations count on
 * (x402_gateway_accounts): re-read from the chain when a reservation finds no room, and held
 * still while a withdrawal of ours is in flight.
 */
import type { Deps } from "../../deps.ts";
import type { ProfileName } from "../../chain/profiles.ts";
import * as repo from "./x402.batched.repo.ts";
import { MIRROR_TTL_S } from "./x402.batched.rules.ts";

/** How long a withdrawal of ours keeps reservations of its payer refused, at most (a crash). */
const WITHDRAW_HOLD_MS = 180_000;

/**
 * The one-statement reservation, against a mirror no older than MIRROR_TTL_S: when it finds no
 * room (no mirror yet, a stale one, or not enough), the payer's balance is read from the chain
 * once and the reservation tried again.
 */
export async function reserveCharge(
  deps: Deps,
  p: ProfileName,
  c: repo.NewCharge,
): Promise<repo.Reservation> {
  const freshAfter = new Date(c.now.getTime() - MIRROR_TTL_S * 1000);
  const first = await repo.reserve(deps.sql, c, freshAfter);
  if (first !== "no_funds") return first;
  await syncAccount(deps, p, c.payer as `0x${string}`);
  return await repo.reserve(deps.sql, { ...c, now: deps.clock.now() }, freshAfter);
}

/** Re-reads the payer's available vault balance into the mirror. */
export async function syncAccount(deps: Deps, p: ProfileName, payer: `0x${string}`) {
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
 * Runs a withdrawal of `payer`'s vault balance: reservations of the payer are refused while it
 * is in flight (the mark takes the mirror row's lock, so every reservation before it is committed
 * and counted by the withdrawal's check), and the mirror is read again once it is mined.
 */
export async function whileWithdrawing<T>(
  deps: Deps,
  p: ProfileName,
  payer: `0x${string}`,
  fn: () => Promise<T>,
): Promise<T> {
  const chainId = deps.chain.chainId(p);
  await repo.markWithdrawing(
    deps.sql,
    chainId,
    payer,
    new Date(deps.clock.now().getTime() + WITHDRAW_HOLD_MS),
  );
  try {
    return await fn();
  } finally {
    try {
      await syncAccount(deps, p, payer);
    } finally {
      await repo.markWithdrawing(deps.sql, chainId, payer, null);
    }
  }
}

interface ServeWaiter {
  id: string;
  upstreamStatus: number;
  done: PromiseWithResolvers<void>;
}
const serving = new WeakMap<object, ServeWaiter[]>();

/**
 * Marks a charge served (reserved → pending) before its answer goes out. The calls that finish
 * in the same turn of the event loop are written by one statement (a group commit); each caller
 * still waits for its own row to be written.
 */
export function serveCharge(deps: Deps, id: string, upstreamStatus: number): Promise<void> {
  let queue = serving.get(deps.sql);
  const done = Promise.withResolvers<void>();
  if (!queue) {
    serving.set(deps.sql, queue = []);
    const q = queue;
    setTimeout(async () => {
      serving.delete(deps.sql);
      try {
        await repo.serveMany(deps.sql, q, deps.clock.now());
        for (const w of q) w.done.resolve();
      } catch (e) {
        for (const w of q) w.done.reject(e);
      }
    }, 0);
  }
  queue.push({ id, upstreamStatus, done });
  return done.promise;
}
