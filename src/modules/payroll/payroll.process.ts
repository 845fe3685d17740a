/**
 * Working on a batch: paying its pending chunks (or turning them into sign requests), then its
 * end state and `payroll.completed`, once. Work is serialised by the batch's resource claim
 * (`payroll-batch:<id>`), which holds no connection while chunks are sent and awaited; the
 * database is touched only in short statements and transactions. Safe to run any number of
 * times from any process: every chunk is an intent, outcomes are written only for recipients
 * still PENDING, the end state is a conditional update. A worker's start resumes every
 * PROCESSING batch at once, and the per-minute sweep gives each a run job.
 */
import type { Deps } from "../../deps.ts";
import type { Db } from "../../db/client.ts";
import { DomainError } from "../../errors.ts";
import { withClaim } from "../../db/claims.ts";
import { CHUNK_SIZE, type ProfileName } from "../../chain/index.ts";
import { usdcToNumber } from "../../money.ts";
import { emit } from "../webhooks/webhooks.service.ts";
import * as repo from "./payroll.repo.ts";
import type { BatchRow, RecipientRow } from "./payroll.types.ts";
import {
  BATCH_CLAIM_TTL_MS,
  batchClaim,
  endState,
  TERMINAL,
  TRANSFER_FAILED_ERROR,
} from "./payroll.rules.ts";
import { runBatchQueue } from "./payroll.queues.ts";
import { results } from "./payroll.views.ts";

const profileOf = (b: Pick<BatchRow, "profile">) => b.profile as ProfileName;

/**
 * Works on a batch until it reaches its end state (or an error pauses it). "busy": another
 * worker holds its claim (after waiting up to `waitMs` for it: a dead holder's lapses after
 * BATCH_CLAIM_TTL_MS). Safe to call any number of times, from any process.
 */
export async function processBatch(
  deps: Deps,
  batchId: string,
  opts: { waitMs?: number } = {},
): Promise<"busy" | BatchRow["status"] | "missing"> {
  try {
    return await withClaim(deps.sql, batchClaim(batchId), () => processLocked(deps, batchId), {
      ttlMs: BATCH_CLAIM_TTL_MS,
      waitMs: opts.waitMs ?? 0,
    });
  } catch (e) {
    if (e instanceof DomainError && e.code === "resource_busy") return "busy";
    throw e;
  }
}

export async function processLocked(deps: Deps, batchId: string) {
  const batch = await repo.findById(deps.sql, batchId);
  if (!batch) return "missing" as const;
  if (batch.status !== "PROCESSING") return batch.status;
  const pending = await repo.pending(deps.sql, batchId);
  if (pending.length && batch.payerWalletKind !== "managed") {
    await deps.sql.begin((tx) => repo.requestSignatures(tx, batchId, deps.clock.now()));
  } else if (pending.length) {
    await payChunks(deps, batch, pending);
  }
  return await finalize(deps, batchId);
}

/** Sends every chunk still pending (pipelined), then records each as it is mined, in order. */
async function payChunks(deps: Deps, batch: BatchRow, pending: RecipientRow[]) {
  const p = profileOf(batch);
  const chunks = new Map<number, RecipientRow[]>();
  for (const r of pending) {
    if (r.chunk === null) continue;
    if (!chunks.has(r.chunk)) chunks.set(r.chunk, []);
    chunks.get(r.chunk)!.push(r);
  }
  const needed = pending.reduce((s, r) => s + r.amount, 0n);
  await deps.chain.payroll.ensureAllowance(p, {
    walletId: batch.payerWalletId!,
    address: batch.payerSca,
  }, needed);
  const sent = [];
  for (const [chunk, rows] of [...chunks].sort((a, b) => a[0] - b[0])) {
    const tx = await deps.chain.payroll.submitChunk(p, {
      batchRef: batch.batchRef,
      chunk,
      payer: batch.payerSca,
      recipients: rows.map((r) => r.recipientSca),
      amounts: rows.map((r) => r.amount),
      // Event indexes count the recipients sent on chain (zero amounts are not).
      firstIndex: chunk * CHUNK_SIZE,
    });
    sent.push({ chunk, rows, tx });
  }
  for (const { chunk, rows, tx } of sent) {
    let outcome;
    try {
      outcome = await deps.chain.payroll.chunkResults(
        p,
        tx,
        batch.batchRef,
        chunk,
        { since: batch.createdAt },
      );
    } catch (e) {
      // A chunk that reverted as a whole moved nothing: its recipients failed.
      if (!(e instanceof DomainError) || e.code !== "chain_reverted") throw e;
      await deps.sql.begin((db) =>
        repo.recordChunk(
          db,
          batch.id,
          tx.txHash,
          rows.map((r) => ({ idx: r.idx, ok: false })),
          "The batch transaction reverted; nothing was paid.",
          deps.clock.now(),
        )
      );
      continue;
    }
    // The chunk's events are its recipients in the order sent: position i is rows[i].
    const byIndex = new Map(outcome.results.map((x) => [x.index, x]));
    const outcomes = rows.map((r, i) => {
      const e = byIndex.get(chunk * CHUNK_SIZE + i);
      return { idx: r.idx, ok: !!e && e.ok && e.recipient === r.recipientSca.toLowerCase() };
    });
    await deps.sql.begin((db) =>
      repo.recordChunk(
        db,
        batch.id,
        outcome.txHash,
        outcomes,
        TRANSFER_FAILED_ERROR,
        deps.clock.now(),
      )
    );
  }
}

/**
 * Moves the batch to its end state once nothing is left to process; a terminal state announces
 * `payroll.completed` in the same transaction (the conditional update makes it once).
 */
async function finalize(deps: Deps, batchId: string): Promise<BatchRow["status"]> {
  return await deps.sql.begin((tx) => finalizeIn(deps, tx, batchId));
}

/**
 * `finalize` inside the caller's transaction. The batch row is locked first, so two
 * transactions finishing its last recipients at once cannot both count the other's as pending.
 */
export async function finalizeIn(
  deps: Deps,
  tx: Db,
  batchId: string,
): Promise<BatchRow["status"]> {
  await repo.lockBatch(tx, batchId);
  const c = await repo.counts(tx, batchId);
  const state = endState(c);
  const current = await repo.findById(tx, batchId);
  if (!state || !current) return current?.status ?? "PROCESSING";
  const row = await repo.finish(tx, batchId, state, deps.clock.now());
  if (!row) return current.status;
  if (TERMINAL.includes(state) && row.webhookUrl) {
    const rows = await repo.recipients(tx, batchId);
    await emit(deps, tx, {
      merchantId: row.merchantId,
      url: row.webhookUrl,
      event: "payroll.completed",
      payload: {
        batchRef: row.batchRef,
        status: state,
        totalAmount: usdcToNumber(row.totalAmount),
        successCount: c.success,
        failedCount: c.failed,
        results: results(deps, row, rows),
      },
    });
  }
  return state;
}

/** The chains this process can pay on: batches of others are left to processes that can. */
const chainIds = (deps: Deps) => deps.chain.profiles().map((p) => deps.chain.chainId(p));

/**
 * The backstop (the per-minute sweep): every PROCESSING batch gets a run job (one at a time per
 * batch). The job takes the batch's claim once its holder is gone (a dead one's lapses within
 * BATCH_CLAIM_TTL_MS), so a batch whose process died is resumed within seconds of the sweep,
 * whatever its age; one still worked on is looked at again later.
 */
export async function enqueueStalled(deps: Deps): Promise<number> {
  const rows = await repo.processing(deps.sql, chainIds(deps), 100);
  for (const { id } of rows) {
    await deps.queue.send(runBatchQueue, { batchId: id }, { singletonKey: id });
  }
  return rows.length;
}

/**
 * A worker's start: every PROCESSING batch is resumed at once (a few at a time), each as soon as
 * its claim is free: a batch a killed process was paying is taken over when that process's claim
 * lapses, seconds later, not at the next sweep. Returns how many batches reached an end state.
 */
export async function resumeOpen(deps: Deps, concurrency = 4): Promise<number> {
  const queue = (await repo.processing(deps.sql, chainIds(deps))).map((r) => r.id);
  let finished = 0;
  const worker = async () => {
    for (let id = queue.shift(); id; id = queue.shift()) {
      try {
        const state = await processBatch(deps, id, { waitMs: BATCH_CLAIM_TTL_MS + 5_000 });
        if (state !== "busy" && state !== "PROCESSING" && state !== "missing") finished++;
      } catch (e) {
        deps.log.warn("payroll batch not resumed at start", { batchId: id, error: e });
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return finished;
}
