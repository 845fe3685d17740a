/**
 * The mirror of payers' vault balances that gateway-balance reservations count on
 * (x402_gateway_accounts): re-read from the chain when a reservation finds no room, and held
 * still while a withdrawal of ours is in flight.
 */
import type { Deps } from "../../deps.ts";
import type { ProfileName } from "../../chain/profiles.ts";
import * as repo from "./x402.batched.repo.ts";
import { MIRROR_TTL_S } from "./x402.batched.rules.ts";
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
  return await repo.reserve(deps.sql, { ...c, now }, freshSince(now));
}

const freshSince = (now: Date) => new Date(now.getTime() - MIRROR_TTL_S * 1000);

/**
 * The reservation as a group commit (src/db/group-commit.ts): the reservations that arrive while
 * one statement is in flight are written together by the next (repo.reserveMany: one statement,
 * one transaction; at most 256; never two with one (chain, payer, nonce), so a replay waits for
 * the next statement, which finds the nonce used). A group whose statement fails is tried again
 * one charge at a time, so one bad charge fails alone.
 */
const reserveGroup = groupCommit<{ deps: Deps; charge: repo.NewCharge }, repo.Reservation>(
  async (group) => {
    const { deps } = group[0].item;
    const now = deps.clock.now();
    const charges = group.map((w) => w.item.charge);
    const out = await repo.reserveMany(deps.sql, charges, freshSince(now), now);
    for (const w of group) w.resolve(out.get(w.item.charge.id) ?? "no_funds");
  },
  {
    max: 256,
    apart: ({ charge: c }) => `${c.chainId}:${c.payer}:${c.nonce}`,
    alone: {
      write: ({ deps, charge }) => repo.reserve(deps.sql, charge, freshSince(deps.clock.now())),
      failed: (error, items) =>
        items[0].deps.log.warn("x402 reservations: a group failed, tried one by one", {
          size: items.length,
          error,
        }),
    },
  },
);

const reserveGrouped = (deps: Deps, charge: repo.NewCharge) =>
  reserveGroup(deps.sql, { deps, charge });

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

const serveGroup = groupCommit<{ deps: Deps; id: string; upstreamStatus: number }, void>(
  async (group) => {
    const { deps } = group[0].item;
    await repo.serveMany(deps.sql, group.map((w) => w.item), deps.clock.now());
    for (const w of group) w.resolve();
  },
);

/**
 * Marks a charge served (reserved → pending) before its answer goes out, as a group commit
 * (src/db/group-commit.ts): the marks that arrive while one is in flight are written together by
 * the next statement. Each caller waits for its own row to be written.
 */
export function serveCharge(deps: Deps, id: string, upstreamStatus: number): Promise<void> {
  return serveGroup(deps.sql, { deps, id, upstreamStatus });
}
