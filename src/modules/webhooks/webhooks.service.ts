/**
 * The webhook engine every module uses: `emit` inside the transaction of the state change,
 * delivery attempts through pg-boss (each attempt claimed by one worker), the 1 / 5 / 30 minute
 * retry schedule, replay with the same webhook-id, and merchants' signing secrets.
 */
import type { Deps } from "../../deps.ts";
import type { Db } from "../../db/client.ts";
import { DomainError } from "../../errors.ts";
import * as repo from "./webhooks.repo.ts";
import * as merchantSecrets from "../merchants/merchants.secrets.ts";
import { newWebhookSecret, signedHeaders } from "./webhooks.sign.ts";
import { postWebhook } from "./webhooks.http.ts";
import { checkWebhookUrl } from "./webhooks.targets.ts";
import { deliverWebhookQueue } from "./webhooks.queues.ts";

/**
 * Seconds after a failed attempt that the next one is due; then the delivery is undelivered.
 * The default; `WEBHOOK_RETRY_SECONDS` sets another (tests of several workers use seconds).
 */
export const RETRY_SCHEDULE_SECONDS = [60, 300, 1800] as const;

export interface EmitInput {
  merchantId: string;
  url: string;
  event: string;
  /** The flat fields after `event`: the entity reference first, then the event's fields. */
  payload: Record<string, unknown>;
}

/** Records a delivery and enqueues its first attempt, in the caller's transaction. */
export async function emit(deps: Deps, tx: Db, input: EmitInput): Promise<string> {
  const id = `msg_${crypto.randomUUID().replaceAll("-", "")}`;
  const body = JSON.stringify({ event: input.event, ...input.payload });
  const ref = input.payload.reference ?? input.payload.batchRef;
  await repo.insertDelivery(tx, {
    id,
    merchantId: input.merchantId,
    event: input.event,
    reference: typeof ref === "string" ? ref : null,
    url: input.url,
    payload: body,
    now: deps.clock.now(),
  });
  await deps.queue.send(deliverWebhookQueue, { deliveryId: id }, { tx, group: input.merchantId });
  return id;
}

/**
 * Validates a webhook URL given on a request: 400 for a malformed URL, or (production) a
 * non-https or non-public one. Returns the URL to store.
 */
export function validateWebhookUrl(deps: Pick<Deps, "config">, raw: unknown): string | null {
  if (raw === undefined || raw === null || raw === "") return null;
  if (typeof raw !== "string") throw new DomainError("webhook_url_invalid");
  const check = checkWebhookUrl(raw.trim(), deps.config.WEBHOOK_TARGETS);
  if (!check.ok) {
    throw new DomainError("webhook_url_invalid", { hint: `webhookUrl: ${check.reason}` });
  }
  return check.url.toString();
}

export type AttemptOutcome = "delivered" | "retry" | "undelivered";

/** What an attempt cut short by its worker's death is recorded as. */
export const INTERRUPTED_ERROR = "interrupted: the worker stopped before the receiver answered";

/**
 * One attempt, if the delivery is due and no other worker holds it. `owner` names who attempts
 * (`job:<id>` for the delivery job: the same job run again after its worker died takes its own
 * claim over at once); by default a one-off owner (the sweep, a replay).
 */
export async function attemptDelivery(
  deps: Deps,
  id: string,
  owner = `once:${crypto.randomUUID()}`,
): Promise<AttemptOutcome | null> {
  const timeoutMs = deps.config.WEBHOOK_TIMEOUT_MS;
  const startedAt = deps.clock.now();
  const d = await repo.claimAttempt(deps.sql, id, startedAt, timeoutMs + 15_000, owner);
  if (!d) return null;
  if (d.interrupted) await recordInterrupted(deps, d);
  const secret = await merchantSecrets.webhookSecret(deps, d.merchantId);
  const check = checkWebhookUrl(d.url, deps.config.WEBHOOK_TARGETS);
  const result = check.ok && secret
    ? await postWebhook(
      check.url,
      d.payload,
      signedHeaders(secret, d.id, deps.clock.now(), d.payload),
      {
        timeoutMs,
        policy: deps.config.WEBHOOK_TARGETS,
      },
    )
    : {
      refused: true,
      error: `refused: ${check.ok ? "merchant has no secret" : check.reason}`,
      durationMs: 0,
    };

  const ok = result.status !== undefined && result.status >= 200 && result.status < 300;
  const failures = ok ? d.roundFailures : d.roundFailures + 1;
  const schedule: readonly number[] = deps.config.WEBHOOK_RETRY_SECONDS ?? RETRY_SCHEDULE_SECONDS;
  const exhausted = failures > schedule.length;
  const outcome: AttemptOutcome = ok
    ? "delivered"
    : result.refused || exhausted
    ? "undelivered"
    : "retry";
  const now = deps.clock.now();
  const delayMs = outcome === "retry" ? schedule[failures - 1] * 1000 : 0;
  const error = ok ? null : result.error ?? `HTTP ${result.status}`;
  await deps.sql.begin(async (tx) => {
    await repo.recordAttempt(tx, {
      deliveryId: d.id,
      attempt: d.attempts,
      startedAt,
      durationMs: result.durationMs,
      statusCode: result.status ?? null,
      error,
      outcome: ok ? "delivered" : result.refused ? "refused" : "failed",
    });
    await repo.finishAttempt(tx, d.id, {
      status: outcome === "retry" ? "pending" : outcome,
      statusCode: result.status ?? null,
      error,
      nextAttemptAt: outcome === "retry" ? new Date(now.getTime() + delayMs) : null,
      roundFailures: failures,
      now,
    });
    if (outcome === "retry") {
      await deps.queue.send(deliverWebhookQueue, { deliveryId: d.id }, {
        tx,
        startAfter: delayMs,
        group: d.merchantId,
      });
    }
  });
  deps.log.info("webhook attempt", {
    deliveryId: d.id,
    event: d.event,
    attempt: d.attempts,
    outcome,
    statusCode: result.status ?? null,
    ms: result.durationMs,
  });
  return outcome;
}

/**
 * The previous attempt was claimed and never finished (its worker died mid-request): it is
 * recorded once, as a failure of the round, under the attempt number it had.
 */
async function recordInterrupted(
  deps: Deps,
  d: repo.DeliveryRow & { priorUpdatedAt: Date },
): Promise<void> {
  const attempt = d.attempts - 1;
  deps.log.warn("webhook attempt interrupted; attempting again", { deliveryId: d.id, attempt });
  await deps.sql.begin(async (tx) => {
    await repo.recordAttempt(tx, {
      deliveryId: d.id,
      attempt,
      // The claim's time: when the interrupted attempt started.
      startedAt: d.priorUpdatedAt,
      durationMs: 0,
      statusCode: null,
      error: INTERRUPTED_ERROR,
      outcome: "failed",
    });
    await repo.countFailure(tx, d.id);
  });
  d.roundFailures += 1;
}

/** Attempts every due delivery (the safety net behind the per-attempt jobs). */
export async function sweepDue(deps: Deps, limit = 500): Promise<number> {
  const ids = await repo.dueDeliveries(deps.sql, deps.clock.now(), limit);
  let n = 0;
  for (const id of ids) if (await attemptDelivery(deps, id)) n++;
  return n;
}

/** Sends a delivery again now, with the same webhook-id, and a fresh round of retries. */
/** Ids of the deliveries that gave up since `since`, oldest first (`deno task webhooks:replay`). */
export async function undeliveredSince(deps: Pick<Deps, "sql">, since: Date): Promise<string[]> {
  return (await repo.undeliveredSince(deps.sql, since)).map((d) => d.id);
}

export async function replay(deps: Deps, merchantId: string | null, id: string) {
  const row = await repo.reopen(deps.sql, id, merchantId, deps.clock.now());
  if (!row) throw new DomainError("delivery_not_found");
  await attemptDelivery(deps, id);
  return (await listView(deps, [(await repo.findDelivery(deps.sql, id))!]))[0];
}

export async function listDeliveries(
  deps: Deps,
  merchantId: string,
  f: { reference?: string; status?: repo.DeliveryStatus; limit?: number },
) {
  const rows = await repo.listDeliveries(deps.sql, merchantId, { ...f, limit: f.limit ?? 100 });
  return await listView(deps, rows);
}

async function listView(deps: Deps, rows: repo.DeliveryRow[]) {
  const attempts = await repo.listAttempts(deps.sql, rows.map((r) => r.id));
  return rows.map((r) => ({
    id: r.id,
    event: r.event,
    reference: r.reference,
    url: r.url,
    status: r.status,
    attempts: r.attempts,
    lastStatusCode: r.lastStatusCode,
    lastError: r.lastError,
    nextAttemptAt: r.status === "pending" ? r.nextAttemptAt?.toISOString() ?? null : null,
    createdAt: r.createdAt.toISOString(),
    deliveredAt: r.deliveredAt?.toISOString() ?? null,
    history: attempts.filter((a) => a.deliveryId === r.id).map((a) => ({
      attempt: a.attempt,
      at: a.startedAt.toISOString(),
      durationMs: a.durationMs,
      statusCode: a.statusCode,
      error: a.error,
      outcome: a.outcome,
    })),
  }));
}

export async function getSecret(deps: Deps, merchantId: string): Promise<string> {
  return (await merchantSecrets.webhookSecret(deps, merchantId))!;
}

/** A new signing secret; deliveries signed from now on use it. */
export async function rollSecret(deps: Deps, merchantId: string): Promise<string> {
  const secret = newWebhookSecret();
  await merchantSecrets.setWebhookSecret(deps, merchantId, secret);
  return secret;
}

/** Webhook attempts so far by outcome (all processes: counted in the database). */
export async function attemptOutcomes(deps: Pick<Deps, "sql">) {
  return await repo.attemptOutcomes(deps.sql);
}
