/**
 * Per-resource serialisation that holds no connection while it waits or works (DESIGN §11).
 *
 *   await withClaim(deps.sql, `escrow:${reference}`, async () => {
 *     const e = await repo.find(...);        // read and check: short statements
 *     const tx = await deps.chain.escrow...  // send and wait for the receipt: no transaction open
 *     await deps.sql.begin(...)              // record the result and its event: one short transaction
 *   });
 *
 * A claim is one row in `resource_claims`, taken and given back by single statements, so a
 * request waiting for it holds no pool connection, and the holder's own statements always find a
 * free one. Within a process, waiters for the same resource queue on a promise (no polling);
 * across processes they poll with backoff. A waiter that gets the claim runs its action on the
 * state the holder left (a second release of an escrow is refused for its state, not sent).
 *
 * A claim lapses after `ttlMs` (the holder died: kill -9); the next waiter takes it over. Chain
 * work the dead holder left is found by its intent key (src/chain/sender.ts), never sent twice,
 * so a lapsed claim can never double-spend; `ttlMs` only bounds how long others wait for a dead
 * owner. The default exceeds the sender's receipt bound, and a live holder extends its claim
 * while it works.
 */
import type { Db } from "./client.ts";
import * as repo from "./claims.repo.ts";
import { DomainError } from "../errors.ts";

export interface ClaimOptions {
  /** How long a claim lives without being extended (default 60 s). */
  ttlMs?: number;
  /** How long to wait for a held claim before refusing with `resource_busy` (default 60 s). */
  waitMs?: number;
}

const OWNER_PREFIX = crypto.randomUUID();
let ownerSeq = 0;
/** Same-process waiters, per resource: the promise of the current holder's turn. */
const local = new Map<string, Promise<unknown>>();

export async function withClaim<T>(
  sql: Db,
  resource: string,
  fn: () => Promise<T>,
  opts: ClaimOptions = {},
): Promise<T> {
  const ttlMs = opts.ttlMs ?? 60_000;
  const deadline = Date.now() + (opts.waitMs ?? 60_000);
  // In-process: queue behind the holder's turn, then take the claim in the database.
  while (local.has(resource)) {
    const ahead = local.get(resource)!;
    const left = deadline - Date.now();
    if (left <= 0) throw new DomainError("resource_busy");
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      ahead.catch(() => {}),
      new Promise<void>((r) => timer = setTimeout(r, left)),
    ]);
    clearTimeout(timer);
  }
  const turn = Promise.withResolvers<void>();
  local.set(resource, turn.promise);
  try {
    const owner = `${OWNER_PREFIX}:${++ownerSeq}`;
    let pause = 10;
    while (!await repo.tryClaim(sql, resource, owner, ttlMs)) {
      if (Date.now() >= deadline) throw new DomainError("resource_busy");
      await delay(Math.min(pause, Math.max(1, deadline - Date.now())));
      pause = Math.min(pause * 2, 250);
    }
    // Keep the claim alive while the action works (a slow receipt), so it lapses only when the
    // process is gone.
    const keepAlive = setInterval(() => {
      repo.extend(sql, resource, owner, ttlMs).catch(() => {});
    }, Math.max(1000, Math.floor(ttlMs / 3)));
    try {
      return await fn();
    } finally {
      clearInterval(keepAlive);
      await repo.release(sql, resource, owner).catch(() => {});
    }
  } finally {
    local.delete(resource);
    turn.resolve();
  }
}

/** Drops lapsed claims, never a live one (the `claims.cleanup` job, every 10 minutes). */
export async function sweepLapsedClaims(sql: Db): Promise<number> {
  return await repo.deleteLapsed(sql);
}

function delay(ms: number) {
  return new Promise<void>((r) => setTimeout(r, ms));
}
