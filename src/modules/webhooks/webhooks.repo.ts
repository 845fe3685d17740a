/** SQL for webhook deliveries and their attempts (the signing secret is the merchants module's). */
import type { Db } from "../../db/client.ts";
import { statusIn } from "../../db/by-id.ts";

export type DeliveryStatus = "pending" | "delivered" | "undelivered";

export interface DeliveryRow {
  id: string;
  merchantId: string;
  event: string;
  reference: string | null;
  url: string;
  payload: string;
  status: DeliveryStatus;
  attempts: number;
  roundFailures: number;
  lastStatusCode: number | null;
  lastError: string | null;
  nextAttemptAt: Date | null;
  claimedUntil: Date | null;
  claimedBy: string | null;
  createdAt: Date;
  updatedAt: Date;
  deliveredAt: Date | null;
}

export interface AttemptRow {
  deliveryId: string;
  attempt: number;
  startedAt: Date;
  durationMs: number;
  statusCode: number | null;
  error: string | null;
  outcome: "delivered" | "failed" | "refused";
}

export async function insertDelivery(
  sql: Db,
  d: {
    id: string;
    merchantId: string;
    event: string;
    reference: string | null;
    url: string;
    payload: string;
    now: Date;
  },
): Promise<void> {
  await sql`
    insert into webhook_deliveries (id, merchant_id, event, reference, url, payload, status,
                                    next_attempt_at, created_at, updated_at)
    values (${d.id}, ${d.merchantId}, ${d.event}, ${d.reference}, ${d.url}, ${d.payload}, 'pending',
            ${d.now}, ${d.now}, ${d.now})`;
}

/**
 * Claims the next attempt of a due delivery for `leaseMs`: one worker per attempt, whatever
 * number of processes run the job. `owner` may take over its own claim (a pg-boss job run again
 * after its worker died). Returns null when it is not due, done, or claimed by another; otherwise
 * the delivery, and `interrupted`: an attempt was claimed before and never finished.
 */
export async function claimAttempt(
  sql: Db,
  id: string,
  now: Date,
  leaseMs: number,
  owner: string,
): Promise<(DeliveryRow & { interrupted: boolean; priorUpdatedAt: Date }) | null> {
  const [row] = await sql<(DeliveryRow & { interrupted: boolean; priorUpdatedAt: Date })[]>`
    update webhook_deliveries d
    set claimed_until = ${new Date(now.getTime() + leaseMs)}, claimed_by = ${owner},
        attempts = d.attempts + 1, updated_at = ${now}
    from (select id, claimed_until, updated_at from webhook_deliveries where id = ${id} for update)
      prior
    where d.id = prior.id and ${statusIn(sql, "d.status", ["pending"])}
      and d.next_attempt_at <= ${now}
      and (d.claimed_until is null or d.claimed_until <= ${now} or d.claimed_by = ${owner})
    returning d.*, prior.claimed_until is not null as interrupted,
              prior.updated_at as prior_updated_at`;
  return row ?? null;
}

export async function recordAttempt(sql: Db, a: AttemptRow): Promise<void> {
  await sql`
    insert into webhook_attempts (delivery_id, attempt, started_at, duration_ms, status_code, error, outcome)
    values (${a.deliveryId}, ${a.attempt}, ${a.startedAt}, ${a.durationMs}, ${a.statusCode}, ${a.error}, ${a.outcome})`;
}

/** One more failure in the current round (an attempt that was interrupted). */
export async function countFailure(sql: Db, id: string): Promise<void> {
  await sql`update webhook_deliveries set round_failures = round_failures + 1 where id = ${id}`;
}

export async function finishAttempt(
  sql: Db,
  id: string,
  f: {
    status: DeliveryStatus;
    statusCode: number | null;
    error: string | null;
    nextAttemptAt: Date | null;
    roundFailures: number;
    now: Date;
  },
): Promise<void> {
  await sql`
    update webhook_deliveries
    set status = ${f.status}, last_status_code = ${f.statusCode}, last_error = ${f.error},
        next_attempt_at = ${f.nextAttemptAt}, round_failures = ${f.roundFailures},
        claimed_until = null, claimed_by = null, updated_at = ${f.now},
        delivered_at = case when ${f.status} = 'delivered' then ${f.now}::timestamptz else delivered_at end
    where id = ${id}`;
}

/** A replay: pending again, due now, a fresh round of retries; the id stays. */
/**
 * A replay keeps the claim of an attempt still in flight (its lease not run out): that attempt is
 * the replay's, and a second one beside it would send the receiver the same id twice at once. A
 * lapsed claim (its process died) is cleared.
 */
function keepLiveClaim(sql: Db, now: Date) {
  return sql`
    claimed_until = case when claimed_until > ${now} then claimed_until end,
    claimed_by = case when claimed_until > ${now} then claimed_by end`;
}

export async function reopen(
  sql: Db,
  id: string,
  merchantId: string | null,
  now: Date,
): Promise<DeliveryRow | null> {
  const [row] = merchantId
    ? await sql<DeliveryRow[]>`
        update webhook_deliveries set status = 'pending', next_attempt_at = ${now}, round_failures = 0,
          ${keepLiveClaim(sql, now)}, updated_at = ${now}
        where id = ${id} and merchant_id = ${merchantId} returning *`
    : await sql<DeliveryRow[]>`
        update webhook_deliveries set status = 'pending', next_attempt_at = ${now}, round_failures = 0,
          ${keepLiveClaim(sql, now)}, updated_at = ${now}
        where id = ${id} returning *`;
  return row ?? null;
}

export async function findDelivery(sql: Db, id: string): Promise<DeliveryRow | null> {
  const [row] = await sql<DeliveryRow[]>`select * from webhook_deliveries where id = ${id}`;
  return row ?? null;
}

export async function listDeliveries(
  sql: Db,
  merchantId: string,
  f: { reference?: string; status?: DeliveryStatus; limit: number },
): Promise<DeliveryRow[]> {
  return await sql<DeliveryRow[]>`
    select * from webhook_deliveries
    where merchant_id = ${merchantId}
      ${f.reference ? sql`and reference = ${f.reference}` : sql``}
      ${f.status ? sql`and status = ${f.status}` : sql``}
    order by created_at desc, id desc limit ${f.limit}`;
}

export async function listAttempts(sql: Db, deliveryIds: string[]): Promise<AttemptRow[]> {
  if (deliveryIds.length === 0) return [];
  return await sql<AttemptRow[]>`
    select delivery_id, attempt, started_at, duration_ms, status_code, error, outcome
    from webhook_attempts where delivery_id = any(${deliveryIds}) order by delivery_id, attempt`;
}

/** Deliveries whose attempt is due (or whose claim lapsed), oldest first. */
export async function dueDeliveries(sql: Db, now: Date, limit: number): Promise<string[]> {
  const rows = await sql<{ id: string }[]>`
    select id from webhook_deliveries
    where status = 'pending' and next_attempt_at <= ${now}
      and (claimed_until is null or claimed_until <= ${now})
    order by next_attempt_at limit ${limit}`;
  return rows.map((r) => r.id);
}

export async function undeliveredSince(sql: Db, since: Date): Promise<DeliveryRow[]> {
  return await sql<DeliveryRow[]>`
    select * from webhook_deliveries where status = 'undelivered' and created_at >= ${since}
    order by created_at`;
}

/** Attempts so far by outcome (delivered, failed, refused), for /metrics. */
export async function attemptOutcomes(sql: Db) {
  return await sql<{ outcome: string; n: number }[]>`
    select outcome, count(*)::int as n from webhook_attempts group by outcome`;
}
