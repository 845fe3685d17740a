/**
 * This process's liveness, as the other processes see it: a resource claim `process:<id>`
 * (src/db/claims.ts's table) that the process extends every `BEAT_MS` and gives back when it
 * stops, and that lapses `PROCESS_TTL_MS` after a kill -9. Work a process holds in the database
 * while it waits on the outside (an x402 attempt or reservation during its upstream call) carries
 * the id as its owner, so a sweep tells a dead owner's work from a live one's within seconds
 * (`ownerGone`), instead of waiting out the longest call any process could still be making.
 *
 * Fencing: a process that could not extend its claim for most of its life (the database
 * unreachable, the process paused) may have been taken for dead and its work swept. Work checks
 * `heldSince(t)`, with `t` when it took its row, before the step that would move money: false
 * when the claim may have lapsed since then.
 */
import type { Db, Sql } from "./client.ts";
import type { Logger } from "../log.ts";
import * as repo from "./claims.repo.ts";

/** A process that stopped extending its claim is taken for dead this long after. */
export const PROCESS_TTL_MS = 20_000;
/** How often a process extends its claim. */
export const BEAT_MS = 5_000;
/** A claim not extended for this long may be seen lapsed by then (one beat's margin). */
const SAFE_MS = PROCESS_TTL_MS - BEAT_MS;

export interface Liveness {
  /** The owner id work of this process carries. */
  readonly id: string;
  /** True when this process was seen alive all along since `since` (a `performance.now()`). */
  heldSince(since: number): boolean;
  /** Extends the claim now: what the timer does every `BEAT_MS`. */
  beat(): Promise<void>;
  /**
   * Stops extending the claim and gives it back (`release`, default true: called when this
   * process's work has finished); not given back, it lapses after `PROCESS_TTL_MS`.
   */
  stop(opts?: { release?: boolean }): Promise<void>;
}

const resource = (id: string) => `process:${id}`;

export async function startLiveness(
  sql: Sql,
  log: Logger,
  /** `now`: the clock `heldSince` reads (a test's); `timer: false`: beats are the caller's. */
  opts: { now?: () => number; timer?: boolean } = {},
): Promise<Liveness> {
  const now = opts.now ?? (() => performance.now());
  // The claim's resource and its owner are both the id: no other process could hold it.
  const id = crypto.randomUUID();
  let lastOk = now();
  // When the claim may have been seen lapsed: work taken before it is not this process's now.
  let lastBreak = -Infinity;
  if (!await repo.tryClaim(sql, resource(id), id, PROCESS_TTL_MS)) {
    throw new Error("liveness: a fresh process id was already claimed");
  }
  let beating: Promise<void> | undefined;
  const beat = async () => {
    const started = now();
    try {
      const extended = await repo.extend(sql, resource(id), id, PROCESS_TTL_MS) ||
        await repo.tryClaim(sql, resource(id), id, PROCESS_TTL_MS);
      if (!extended) return;
      // Not extended for too long: others may have taken this process for dead meanwhile.
      if (started - lastOk >= SAFE_MS) {
        lastBreak = started;
        log.warn("liveness: the process claim was not extended in time", {
          gapMs: Math.round(started - lastOk),
        });
      }
      lastOk = started;
    } catch (e) {
      log.warn("liveness: could not extend the process claim", { error: e });
    }
  };
  const step = () => beating ??= beat().finally(() => beating = undefined);
  const timer = opts.timer === false ? undefined : setInterval(step, BEAT_MS);
  if (timer !== undefined) Deno.unrefTimer(timer);
  return {
    id,
    beat: step,
    heldSince(since) {
      const t = now();
      return since > lastBreak && t - lastOk < SAFE_MS;
    },
    async stop({ release = true } = {}) {
      clearInterval(timer);
      await beating;
      if (!release) return;
      await repo.release(sql, resource(id), id).catch((e) =>
        log.warn("liveness: could not give the process claim back", { error: e })
      );
    },
  };
}

/**
 * SQL: the row's `column` (a process id, or null for rows written before owners were recorded)
 * names a process whose claim has lapsed or was given back. `column` is qualified by its table's
 * alias (`c.owner`): `resource_claims` has an `owner` of its own, which a bare name would mean.
 */
export function ownerGone(sql: Db, column: `${string}.${string}`) {
  return sql`(${sql.unsafe(column)} is not null and not exists (
    select 1 from resource_claims rc
    where rc.resource = 'process:' || ${sql.unsafe(column)}::text
      and rc.expires_at > clock_timestamp()))`;
}
