/**
 * Payroll: a batch is recorded PROCESSING with every recipient before anything is sent, then
 * paid in chunks through BatchPayout (one operator transaction per chunk, chunks pipelined,
 * each recipient's outcome from the contract's events), or, for an external payer wallet, turned
 * into signature requests. The end state and `payroll.completed` are written in one transaction,
 * once. Work on a batch is serialised by a lock; every chunk is an intent, so a process killed
 * mid-batch is resumed (by the backstop job) without paying anyone twice.
 */
import { createHash } from "node:crypto";
import type { Deps } from "../../deps.ts";
import type { Db } from "../../db/client.ts";
import { DomainError } from "../../errors.ts";
import { CHUNK_SIZE, type ProfileName } from "../../chain/index.ts";
import { checksum } from "../../chain/address.ts";
import { formatUsdc, usdcToNumber } from "../../money.ts";
import { emit } from "../webhooks/webhooks.service.ts";
import type { MerchantRow } from "../merchants/merchants.types.ts";
import * as repo from "./payroll.repo.ts";
import type { BatchRow, RecipientRow, RunInput } from "./payroll.types.ts";
import {
  assignChunks,
  endState,
  newBatchRef,
  TERMINAL,
  TRANSFER_FAILED_ERROR,
  ZERO_AMOUNT_ERROR,
} from "./payroll.rules.ts";
import { BACKSTOP_SECONDS, runBatchQueue } from "./payroll.queues.ts";

export type { BatchRow } from "./payroll.types.ts";

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");
const profileOf = (b: Pick<BatchRow, "profile">) => b.profile as ProfileName;

/** The payer: always the merchant's own payout wallet, never the request's. */
function payerOf(m: MerchantRow) {
  if (m.walletProvider === "MANAGED" && m.managedWalletId && m.walletAddress) {
    return { kind: "managed", walletId: m.managedWalletId, address: m.walletAddress };
  }
  if (m.walletProvider !== "MANAGED" && m.walletAddress) {
    return { kind: m.walletProvider, walletId: null, address: m.walletAddress };
  }
  throw new DomainError("payout_wallet_missing");
}

/**
 * Records the batch (or finds the one this Idempotency-Key already made), then works on it for
 * up to PAYROLL_WAIT_MS; whatever is left continues in the background.
 */
export async function runBatch(
  deps: Deps,
  merchant: MerchantRow,
  profile: ProfileName,
  input: RunInput,
  requestKey?: string,
  waitMs = deps.config.PAYROLL_WAIT_MS,
): Promise<{ batch: BatchRow; recipients: RecipientRow[] }> {
  if (!deps.chain.has(profile)) throw new DomainError("chain_not_configured");
  const payer = payerOf(merchant);
  const keyHash = requestKey === undefined ? null : sha256(requestKey);
  const requestHash = sha256(
    JSON.stringify([profile, input], (_, v) => typeof v === "bigint" ? v.toString() : v),
  );
  let batch = keyHash ? await repo.findByRequestKey(deps.sql, merchant.id, keyHash) : null;
  if (batch && batch.requestHash !== requestHash) {
    throw new DomainError("payroll_request_key_reused");
  }
  if (!batch) {
    try {
      batch = await create(deps, merchant, profile, payer, input, keyHash, requestHash);
    } catch (e) {
      // The same key, concurrently: the other request's batch is this one.
      if (!keyHash || (e as { code?: string }).code !== "23505") throw e;
      batch = await repo.findByRequestKey(deps.sql, merchant.id, keyHash);
      if (!batch) throw e;
      if (batch.requestHash !== requestHash) throw new DomainError("payroll_request_key_reused");
    }
  }
  await waitBounded(deps, processBatch(deps, batch.id), waitMs);
  return await snapshot(deps, batch.id);
}

async function create(
  deps: Deps,
  merchant: MerchantRow,
  profile: ProfileName,
  payer: ReturnType<typeof payerOf>,
  input: RunInput,
  keyHash: string | null,
  requestHash: string,
): Promise<BatchRow> {
  const chunks = assignChunks(input.recipients, CHUNK_SIZE);
  const now = deps.clock.now();
  const total = input.recipients.reduce((s, r) => s + r.amount, 0n);
  return await deps.sql.begin(async (tx) => {
    const zero = input.recipients.filter((r) => r.amount === 0n).length;
    const row = await repo.insertBatch(
      tx,
      {
        merchantId: merchant.id,
        batchRef: newBatchRef(now),
        profile,
        chainId: deps.chain.chainId(profile),
        payerSca: payer.address.toLowerCase() as `0x${string}`,
        payerWalletKind: payer.kind,
        payerWalletId: payer.walletId,
        totalAmount: total,
        recipientCount: input.recipients.length,
        failedCount: zero,
        webhookUrl: input.webhookUrl,
        description: input.description,
        requestKeyHash: keyHash,
        requestHash,
        createdAt: now,
      },
      input.recipients.map((r, i) => ({
        idx: i,
        recipientSca: r.recipientSCA,
        amount: r.amount,
        label: r.label,
        memo: r.label ?? input.description,
        chunk: chunks[i],
        status: r.amount === 0n ? "FAILED" : "PENDING",
        error: r.amount === 0n ? ZERO_AMOUNT_ERROR : null,
      })),
    );
    await deps.queue.send(runBatchQueue, { batchId: row.id }, {
      tx,
      startAfter: BACKSTOP_SECONDS * 1000,
    });
    return row;
  });
}

/** Waits for `work` up to `ms`; it goes on in the background (its failure is logged). */
async function waitBounded(deps: Deps, work: Promise<unknown>, ms: number): Promise<void> {
  const logged = work.catch((e) => deps.log.warn("payroll batch paused", { error: e }));
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([
    logged,
    new Promise<void>((resolve) => (timer = setTimeout(resolve, ms))),
  ]);
  clearTimeout(timer);
}

/**
 * Works on a batch until it reaches its end state (or an error pauses it). "busy": another
 * worker holds it. Safe to call any number of times, from any process.
 */
export async function processBatch(
  deps: Deps,
  batchId: string,
): Promise<"busy" | BatchRow["status"] | "missing"> {
  const r = await repo.withBatchLock(deps.sql, batchId, () => processLocked(deps, batchId));
  return r.locked ? r.value : "busy";
}

async function processLocked(deps: Deps, batchId: string) {
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

async function snapshot(deps: Deps, batchId: string) {
  const batch = (await repo.findById(deps.sql, batchId))!;
  return { batch, recipients: await repo.recipients(deps.sql, batchId) };
}

/** Result entries in request order; recipients not processed yet are left out. */
export function results(deps: Deps, b: BatchRow, rows: RecipientRow[]) {
  const p = profileOf(b);
  const explorer = (hash: string) =>
    deps.chain.has(p) ? deps.chain.explorerTxUrl(p, hash) : undefined;
  return rows.filter((r) => r.status !== "PENDING").map((r) => {
    const base = {
      recipientSCA: checksum(r.recipientSca),
      amount: formatUsdc(r.amount, { decimals: "fixed" }),
      label: r.label,
    };
    if (r.status === "SUCCESS") {
      return {
        ...base,
        status: "SUCCESS" as const,
        txHash: r.txHash!,
        explorerUrl: explorer(r.txHash!),
      };
    }
    if (r.status === "PENDING_SIGNATURE") {
      return { ...base, status: "PENDING_SIGNATURE" as const, requestId: r.requestId! };
    }
    return { ...base, status: "FAILED" as const, error: r.error ?? TRANSFER_FAILED_ERROR };
  });
}

/** The Payroll batch resource. */
export function batchView(deps: Deps, b: BatchRow, rows: RecipientRow[]) {
  return {
    id: b.id,
    batchRef: b.batchRef,
    payerSCA: checksum(b.payerSca),
    payerWalletId: b.payerWalletKind,
    totalAmount: usdcToNumber(b.totalAmount),
    currency: "USDC" as const,
    recipientCount: b.recipientCount,
    successCount: b.successCount,
    failedCount: b.failedCount,
    pendingSignatureCount: b.pendingSignatureCount,
    status: b.status,
    results: results(deps, b, rows),
    webhookUrl: b.webhookUrl,
    createdAt: b.createdAt.toISOString(),
    completedAt: b.completedAt?.toISOString() ?? null,
  };
}

/** What the run answers: the batch now, and a sentence saying where it stands. */
export function runMessage(b: BatchRow): string {
  const done = b.successCount + b.failedCount + b.pendingSignatureCount;
  const n = b.recipientCount;
  const recipients = (k: number) => (k === 1 ? "recipient" : "recipients");
  switch (b.status) {
    case "COMPLETED":
      return n === 1 ? "Paid the recipient." : `Paid all ${n} recipients.`;
    case "PARTIAL_FAILURE":
      return `Paid ${b.successCount} of ${n} recipients; ${b.failedCount} failed.`;
    case "FAILED":
      return n === 1 ? "The recipient was not paid." : `No recipient was paid; all ${n} failed.`;
    case "AWAITING_SIGNATURES":
      return `${b.pendingSignatureCount} ${
        b.pendingSignatureCount === 1 ? "payment awaits" : "payments await"
      } your wallet's signature: see GET /api/merchant/wallet/sign-requests.`;
    default:
      return `Processing: ${done} of ${n} ${
        recipients(n)
      } done. Poll GET /api/payroll/run?batchRef=${b.batchRef}.`;
  }
}

/** One of the merchant's batches with its recipients (the first `limit`, when given). */
export async function getBatch(deps: Deps, merchantId: string, batchRef: string, limit?: number) {
  const b = await repo.findByRef(deps.sql, merchantId, batchRef);
  if (!b) throw new DomainError("payroll_not_found");
  return { batch: b, recipients: await repo.recipients(deps.sql, b.id, limit) };
}

export async function listBatches(deps: Deps, merchantId: string, limit = 20) {
  return await repo.listBatches(deps.sql, merchantId, limit);
}

/** The backstop: PROCESSING batches older than the backstop delay get a run job. */
export async function enqueueStalled(deps: Deps): Promise<number> {
  const before = new Date(deps.clock.now().getTime() - BACKSTOP_SECONDS * 1000);
  const rows = await repo.stalled(deps.sql, before);
  for (const { id } of rows) {
    await deps.queue.send(runBatchQueue, { batchId: id }, { singletonKey: id });
  }
  return rows.length;
}
