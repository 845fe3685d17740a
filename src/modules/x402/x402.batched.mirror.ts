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
  return await repo.reserve(deps.sql, { ...c, now }, freshSince(now));
}

const freshSince = (now: Date) => new Date(now.getTime() - MIRROR_TTL_S * 1000);

/** At most this many reservations per statement. */
const GROUP_MAX = 256;

interface ReserveWaiter {
  charge: repo.NewCharge;
  done: PromiseWithResolvers<repo.Reservation>;
}
interface ReserveQueue {
  waiting: ReserveWaiter[];
  writing: boolean;
}
const reserving = new WeakMap<object, ReserveQueue>();

/**
 * The reservation as a group commit, as `serveCharge` marks: with no reservation statement in
 * flight this one is written at once; those that arrive while one is in flight are written
 * together by the next (repo.reserveMany: one statement, one transaction, whatever the number).
 * Each caller waits for its own answer. A group whose statement fails is tried again one charge
 * at a time, so one bad charge fails alone.
 */
function reserveGrouped(deps: Deps, charge: repo.NewCharge): Promise<repo.Reservation> {
  let q = reserving.get(deps.sql);
  if (!q) reserving.set(deps.sql, q = { waiting: [], writing: false });
  const done = Promise.withResolvers<repo.Reservation>();
  q.waiting.push({ charge, done });
  if (!q.writing) void writeReservations(deps, q);
  return done.promise;
}

async function writeReservations(deps: Deps, q: ReserveQueue) {
  q.writing = true;
  try {
    while (q.waiting.length) {
      const group = takeGroup(q);
      const now = deps.clock.now();
      try {
        const out = await repo.reserveMany(
          deps.sql,
          group.map((w) => w.charge),
          freshSince(now),
          now,
        );
        for (const w of group) w.done.resolve(out.get(w.charge.id) ?? "no_funds");
      } catch (error) {
        deps.log.warn("x402 reservations: a group failed, tried one by one", {
          size: group.length,
          error,
        });
        await Promise.all(group.map(async (w) => {
          try {
            w.done.resolve(await repo.reserve(deps.sql, w.charge, freshSince(deps.clock.now())));
          } catch (e) {
            w.done.reject(e);
          }
        }));
      }
    }
  } finally {
    q.writing = false;
  }
}

/**
 * The next statement's charges, oldest first: at most GROUP_MAX, and never two with one
 * (chain, payer, nonce) (a replay waits for the next statement, which finds the nonce used).
 */
function takeGroup(q: ReserveQueue): ReserveWaiter[] {
  const group: ReserveWaiter[] = [];
  const rest: ReserveWaiter[] = [];
  const keys = new Set<string>();
  for (const w of q.waiting) {
    const k = `${w.charge.chainId}:${w.charge.payer}:${w.charge.nonce}`;
    if (group.length >= GROUP_MAX || keys.has(k)) rest.push(w);
    else {
      keys.add(k);
      group.push(w);
    }
  }
  q.waiting = rest;
  return group;
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
interface ServeQueue {
  waiting: ServeWaiter[];
  writing: boolean;
}
const serving = new WeakMap<object, ServeQueue>();

/**
 * Marks a charge served (reserved → pending) before its answer goes out, as a group commit: with
 * no write in flight the mark is written at once; the marks that arrive while one is in flight
 * are written together by the next statement. Each caller waits for its own row to be written.
 */
export function serveCharge(deps: Deps, id: string, upstreamStatus: number): Promise<void> {
  let q = serving.get(deps.sql);
  if (!q) serving.set(deps.sql, q = { waiting: [], writing: false });
  const done = Promise.withResolvers<void>();
  q.waiting.push({ id, upstreamStatus, done });
  if (!q.writing) void writeServed(deps, q);
  return done.promise;
}

async function writeServed(deps: Deps, q: ServeQueue) {
  q.writing = true;
  try {
    while (q.waiting.length) {
      const batch = q.waiting;
      q.waiting = [];
      try {
        await repo.serveMany(deps.sql, batch, deps.clock.now());
        for (const w of batch) w.done.resolve();
      } catch (e) {
        for (const w of batch) w.done.reject(e);
      }
    }
  } finally {
    q.writing = false;
  }
}
