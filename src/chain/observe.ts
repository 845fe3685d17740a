/**
 * What /metrics reads about each chain at scrape time: the head, the log watcher's cursor (its
 * lag is head − cursor), the operator's native balance, and the transactions still in flight
 * with the age of the oldest. Everything comes from the node and the database, so any process
 * (a web replica that runs no watcher) reports the same values.
 */
import type { Sql } from "../db/client.ts";
import type { ChainRuntime } from "./runtime.ts";
import * as txRepo from "./transactions.repo.ts";
import * as watcherRepo from "./watcher.repo.ts";
import { CURSOR } from "./watcher.ts";

export interface ChainObservation {
  profile: string;
  chainId: number;
  /** null when the node did not answer within the bound. */
  head: bigint | null;
  cursor: bigint | null;
  operatorBalanceWei: bigint | null;
  inFlight: number;
  oldestInFlightSeconds: number;
}

const RPC_BOUND_MS = 2000;

function bounded<T>(p: Promise<T>): Promise<T | null> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<null>((r) => (timer = setTimeout(() => r(null), RPC_BOUND_MS)));
  return Promise.race([p.catch(() => null), timeout]).finally(() => clearTimeout(timer));
}

export async function observeChains(
  sql: Sql,
  runtimes: ChainRuntime[],
): Promise<ChainObservation[]> {
  const inFlight = new Map((await txRepo.inFlightByChain(sql)).map((r) => [r.chainId, r]));
  return await Promise.all(runtimes.map(async (rt) => {
    const [head, cursor, balance] = await Promise.all([
      bounded(rt.client.getBlockNumber()),
      watcherRepo.readCursor(sql, rt.chainId, CURSOR),
      rt.operator ? bounded(rt.client.getBalance({ address: rt.operator.address })) : null,
    ]);
    const open = inFlight.get(rt.chainId);
    return {
      profile: rt.profile.name,
      chainId: rt.chainId,
      head,
      cursor,
      operatorBalanceWei: balance,
      inFlight: open?.n ?? 0,
      oldestInFlightSeconds: open?.oldestSeconds ?? 0,
    };
  }));
}
