/**
 * Streams: create (lock the deposit in StreamVault from a wallet the merchant controls), list
 * with derived values, stop (sender only, on chain), receiver withdrawals, and the drain that
 * completes fully streamed streams. Every state change and its webhook event are written in one
 * transaction after the chain confirmed; the chain is the source of the amounts.
 */
import { createHash } from "node:crypto";
import type { Deps } from "../../deps.ts";
import { DomainError } from "../../errors.ts";
import type { ProfileName } from "../../chain/profiles.ts";
import { checksum } from "../../chain/address.ts";
import { formatUsdc, usdcToNumber } from "../../money.ts";
import { emit } from "../webhooks/webhooks.service.ts";
import { controlledWallet } from "../wallets/wallets.service.ts";
import type { MerchantRow } from "../merchants/merchants.types.ts";
import * as repo from "./streams.repo.ts";
import type { StreamRow } from "./streams.types.ts";
import type { CreateStreamInput } from "./streams.schemas.ts";
import { derive, durationSeconds, newReference, percentNumber } from "./streams.rules.ts";
import { drainStreamQueue } from "./streams.queues.ts";

export type { StreamRow } from "./streams.types.ts";

const profileOf = (s: Pick<StreamRow, "profile">) => s.profile as ProfileName;

/** EIP-55 checksums repeat across a merchant's list (one sender, one vault): keep them. */
const checksums = new Map<string, `0x${string}`>();
function display(address: string): `0x${string}` {
  let c = checksums.get(address);
  if (!c) {
    if (checksums.size >= 50_000) checksums.clear();
    c = checksum(address);
    checksums.set(address, c);
  }
  return c;
}
const fromSeconds = (s: bigint) => new Date(Number(s) * 1000);

export async function createStream(
  deps: Deps,
  merchant: MerchantRow,
  profile: ProfileName,
  input: CreateStreamInput,
  requestKey?: string,
) {
  const wallet = await controlledWallet(deps, merchant.id, { address: input.senderSCA });
  if (!wallet) throw new DomainError("stream_sender_not_controlled");
  let reference = newReference(deps.clock.now());
  let sent = false;
  if (requestKey !== undefined) {
    // A retry after a 408 (its key was released) must lock the same stream, not a second one.
    const requestHash = sha256(
      JSON.stringify([profile, input], (_, v) => typeof v === "bigint" ? v.toString() : v),
    );
    const claimed = await repo.claimCreateRequest(deps.sql, {
      merchantId: merchant.id,
      keyHash: sha256(requestKey),
      requestHash,
      reference,
    });
    if (claimed.requestHash !== requestHash) throw new DomainError("stream_request_key_reused");
    reference = claimed.reference;
    const done = await repo.findByReference(deps.sql, merchant.id, reference);
    if (done) return createdView(deps, done);
    sent = !!(await deps.chain.intent(profile, `stream-create:${reference}`));
  }
  // The first attempt's deposit may already have left the wallet: no balance to check then.
  const balance = sent
    ? input.totalDeposited
    : await deps.chain.usdcBalance(profile, wallet.address);
  if (balance < input.totalDeposited) {
    throw new DomainError("stream_insufficient_balance", {
      balance: formatUsdc(balance, { decimals: "fixed" }),
    });
  }
  const mined = await deps.chain.streams.create({
    profile,
    walletId: wallet.walletId,
    sender: wallet.address,
    reference,
    receiver: input.receiverSCA,
    rate: input.ratePerSecond,
    deposit: input.totalDeposited,
  });
  const startedAt = fromSeconds(mined.blockTime);
  const duration = durationSeconds(input.ratePerSecond, input.totalDeposited);
  const row = await deps.sql.begin(async (tx) => {
    const row = await repo.insert(tx, {
      merchantId: merchant.id,
      reference,
      profile,
      chainId: deps.chain.chainId(profile),
      senderWalletId: wallet.walletId,
      senderSca: wallet.address,
      receiverSca: input.receiverSCA,
      rate: input.ratePerSecond,
      deposit: input.totalDeposited,
      contractAddress: deps.chain.streams.vaultAddress(profile).toLowerCase(),
      txHash: mined.tx.txHash,
      startedAt,
      endsAt: new Date(startedAt.getTime() + Number(duration) * 1000),
      webhookUrl: input.webhookUrl,
      now: deps.clock.now(),
    });
    if (row.webhookUrl) {
      await emit(deps, tx, {
        merchantId: merchant.id,
        url: row.webhookUrl,
        event: "stream.created",
        payload: {
          reference,
          senderSCA: checksum(row.senderSca),
          receiverSCA: checksum(row.receiverSca),
          ratePerSecond: usdcToNumber(row.rate),
          totalDeposited: usdcToNumber(row.deposit),
          estimatedDurationSeconds: Number(input.totalDeposited / input.ratePerSecond),
        },
      });
    }
    // Wakes the drain when accrual ends; the sweep catches any stream this misses.
    await deps.queue.send(drainStreamQueue, { streamId: row.id }, {
      tx,
      startAfter: row.endsAt,
    });
    return row;
  });
  return createdView(deps, row);
}

function createdView(deps: Deps, row: StreamRow) {
  // The spec: floor(totalDeposited / ratePerSecond).
  const seconds = Number(row.deposit / row.rate);
  return {
    row,
    explorerUrl: deps.chain.explorerTxUrl(row.profile as ProfileName, row.txHash),
    estimatedDurationSeconds: seconds,
    estimatedEndTime: new Date(row.startedAt.getTime() + seconds * 1000),
  };
}

function sha256(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

/** The Stream resource with its derived values at `now`. */
export function streamView(deps: Deps, s: StreamRow, now: Date) {
  const d = derive(s, now);
  return {
    reference: s.reference,
    status: s.status,
    senderSCA: display(s.senderSca),
    receiverSCA: display(s.receiverSca),
    ratePerSecond: usdcToNumber(s.rate),
    totalDeposited: usdcToNumber(s.deposit),
    totalStreamed: usdcToNumber(s.withdrawn),
    currency: "USDC" as const,
    contractAddress: display(s.contractAddress),
    startedAt: s.startedAt.toISOString(),
    stoppedAt: s.stoppedAt?.toISOString() ?? null,
    txHash: s.txHash,
    explorerUrl: deps.chain.has(profileOf(s))
      ? deps.chain.explorerTxUrl(profileOf(s), s.txHash)
      : null,
    webhookUrl: s.webhookUrl,
    currentStreamed: usdcToNumber(d.currentStreamed),
    remainingBalance: usdcToNumber(d.remainingBalance),
    secondsRemaining: Number(d.secondsRemaining),
    percentComplete: percentNumber(d.percentHundredths),
  };
}
export type StreamView = ReturnType<typeof streamView>;

export async function listStreams(deps: Deps, merchantId: string, filter: repo.ListFilter) {
  const rows = await repo.list(deps.sql, merchantId, filter);
  const now = deps.clock.now();
  let active = 0, stopped = 0, completed = 0, locked = 0n, rate = 0n;
  const streams = rows.map((s) => {
    if (s.status === "ACTIVE") {
      active++;
      locked += derive(s, now).remainingBalance;
      rate += s.rate;
    } else if (s.status === "STOPPED") stopped++;
    else completed++;
    return streamView(deps, s, now);
  });
  return {
    metrics: {
      total: rows.length,
      active,
      stopped,
      completed,
      totalLockedUSDC: usdcToNumber(locked),
      totalRatePerSecond: usdcToNumber(rate),
    },
    streams,
  };
}

async function findOwn(deps: Deps, merchantId: string, reference: string): Promise<StreamRow> {
  const s = await repo.findByReference(deps.sql, merchantId, reference);
  if (!s) throw new DomainError("stream_not_found");
  return s;
}

function refuseUnlessActive(s: StreamRow): void {
  if (s.status === "STOPPED") throw new DomainError("stream_not_active");
  if (s.status === "COMPLETED") throw new DomainError("stream_already_completed");
}

/**
 * Stops the stream from `callerSCA` (a wallet the merchant controls). The vault itself refuses a
 * caller other than the sender (502). The intent is keyed by stream and caller, so concurrent
 * stops by the sender share one transaction.
 */
export async function stopStream(
  deps: Deps,
  merchant: MerchantRow,
  input: { reference: string; callerSCA: `0x${string}` },
) {
  const s = await findOwn(deps, merchant.id, input.reference);
  refuseUnlessActive(s);
  const caller = await controlledWallet(deps, merchant.id, { address: input.callerSCA });
  if (!caller) throw new DomainError("stream_caller_not_controlled");
  const p = profileOf(s);
  let mined;
  try {
    mined = await deps.chain.streams.stop(
      p,
      s.reference,
      { walletId: caller.walletId },
      `stream-stop:${s.reference}:${caller.walletId}`,
    );
  } catch (e) {
    throw clearRevert(e, s);
  }
  const after = await deps.chain.streams.get(p, s.reference, mined.tx.blockNumber!);
  const stoppedAt = fromSeconds(after.stopTime);
  const refunded = s.deposit - after.withdrawn;
  const updated = await deps.sql.begin(async (tx) => {
    const row = await repo.markStopped(tx, s.id, {
      withdrawn: after.withdrawn,
      stoppedAt,
      txHash: mined.tx.txHash,
    });
    if (!row) return null;
    if (row.webhookUrl) {
      await emit(deps, tx, {
        merchantId: merchant.id,
        url: row.webhookUrl,
        event: "stream.stopped",
        payload: {
          reference: row.reference,
          totalStreamed: usdcToNumber(after.withdrawn),
          refundedToSender: usdcToNumber(refunded),
          txHash: mined.tx.txHash,
          stoppedAt: stoppedAt.toISOString(),
          explorerUrl: deps.chain.explorerTxUrl(p, mined.tx.txHash),
        },
      });
    }
    return row;
  });
  // A concurrent stop (the same transaction) recorded it first.
  if (!updated) throw new DomainError("stream_not_active");
  return {
    row: updated,
    txHash: mined.tx.txHash,
    explorerUrl: deps.chain.explorerTxUrl(p, mined.tx.txHash),
    totalStreamed: after.withdrawn,
    refundedToSender: refunded,
    // What the stop itself sent the receiver (earlier withdrawals already paid the rest).
    paidAtStop: after.withdrawn > s.withdrawn ? after.withdrawn - s.withdrawn : 0n,
  };
}

/** A vault revert, said plainly (NotSender: only the stream's sender can stop it). */
function clearRevert(e: unknown, s: StreamRow): unknown {
  if (!(e instanceof DomainError) || e.code !== "chain_reverted") return e;
  const reason = e.details.hint ?? "";
  if (/NotSender/.test(reason)) {
    return new DomainError("chain_reverted", {
      ...e.details,
      hint: `StreamVault reverted NotSender: only the stream's sender (${
        checksum(s.senderSca)
      }) can stop it.`,
    });
  }
  if (/NothingToWithdraw/.test(reason)) return new DomainError("stream_nothing_to_withdraw");
  if (/NotActive/.test(reason)) return new DomainError("stream_not_active");
  return e;
}

/** The receiver (a wallet the merchant controls) takes what accrued; may complete the stream. */
export async function withdrawStream(
  deps: Deps,
  merchant: MerchantRow,
  input: { reference: string; receiverSCA: `0x${string}` },
  requestKey?: string,
) {
  const s = await findOwn(deps, merchant.id, input.reference);
  refuseUnlessActive(s);
  const receiver = await controlledWallet(deps, merchant.id, { address: input.receiverSCA });
  if (!receiver || receiver.address !== s.receiverSca) {
    throw new DomainError("stream_receiver_not_controlled");
  }
  const p = profileOf(s);
  const intentKey = requestKey === undefined
    ? `stream-withdraw:${s.reference}:${crypto.randomUUID()}`
    : `stream-withdraw:${s.reference}:${requestKey}`;
  let mined;
  try {
    mined = await deps.chain.streams.withdraw(
      p,
      s.reference,
      { walletId: receiver.walletId },
      intentKey,
    );
  } catch (e) {
    throw clearRevert(e, s);
  }
  const r = await recordWithdrawal(deps, s, mined.tx, mined.blockTime, "stream.withdrawn");
  return {
    reference: s.reference,
    amountWithdrawn: r.amount,
    totalStreamed: r.total,
    txHash: mined.tx.txHash,
    explorerUrl: deps.chain.explorerTxUrl(p, mined.tx.txHash),
  };
}

/**
 * Records a mined vault withdrawal: the amount it paid is the vault's withdrawn total at its
 * block minus the total one block before (exact under concurrency and on replay). The one that
 * paid the whole deposit completes the stream (`stream.completed`), otherwise `event`.
 */
async function recordWithdrawal(
  deps: Deps,
  s: StreamRow,
  tx: { txHash: string; blockNumber: bigint | null },
  blockTime: bigint,
  event: "stream.withdrawn" | "stream.completed",
): Promise<{ amount: bigint; total: bigint; completed: boolean }> {
  const p = profileOf(s);
  const after = await deps.chain.streams.get(p, s.reference, tx.blockNumber!);
  const before = await deps.chain.streams.get(p, s.reference, tx.blockNumber! - 1n);
  const amount = after.withdrawn - before.withdrawn;
  const completed = after.status === "Completed";
  await deps.sql.begin(async (db) => {
    let emitted: string | null = null;
    if (completed) {
      const row = await repo.markCompleted(db, s.id, {
        completedAt: fromSeconds(blockTime),
        txHash: tx.txHash,
      });
      if (row) emitted = "stream.completed";
    } else {
      await repo.recordWithdrawn(db, s.id, after.withdrawn);
      emitted = event === "stream.withdrawn" ? "stream.withdrawn" : null;
    }
    if (emitted && s.webhookUrl) {
      await emit(deps, db, {
        merchantId: s.merchantId,
        url: s.webhookUrl,
        event: emitted,
        payload: {
          reference: s.reference,
          receiverSCA: checksum(s.receiverSca),
          amountWithdrawn: usdcToNumber(amount),
          totalStreamed: usdcToNumber(after.withdrawn),
        },
      });
    }
  });
  return { amount, total: after.withdrawn, completed };
}

/**
 * The drain: a fully streamed ACTIVE stream gets its receiver's remainder paid (the operator
 * sends the vault's withdraw, which pays only the receiver) and becomes COMPLETED. The intent
 * key is the stream's, so a crash after sending finds the same transaction on the retry; the
 * state change is conditional on ACTIVE, so it is recorded (and announced) once.
 */
export async function drainStream(deps: Deps, streamId: string): Promise<"completed" | "skipped"> {
  const s = await repo.findById(deps.sql, streamId);
  if (!s || s.status !== "ACTIVE") return "skipped";
  if (s.endsAt.getTime() > deps.clock.now().getTime()) return "skipped";
  const p = profileOf(s);
  const intentKey = `stream-drain:${s.reference}`;
  // A drain sent before a crash is found again by its intent (never sent twice).
  if (!(await deps.chain.intent(p, intentKey))) {
    const view = await deps.chain.streams.get(p, s.reference);
    if (view.status !== "Active") return await reconcile(deps, s, view.status);
    const { accrued } = await deps.chain.streams.accrued(p, s.reference);
    if (accrued < view.deposit) return "skipped"; // chain time has not reached the end yet
  }
  let mined;
  try {
    mined = await deps.chain.streams.withdraw(p, s.reference, "operator", intentKey);
  } catch (e) {
    if (!(e instanceof DomainError) || e.code !== "chain_reverted") throw e;
    return await reconcile(deps, s, (await deps.chain.streams.get(p, s.reference)).status);
  }
  const tx = mined.tx;
  const blockTime = mined.blockTime;
  await recordWithdrawal(deps, s, tx, blockTime, "stream.completed");
  return "completed";
}

/** The vault finished the stream some other way (a receiver withdrawal completed it). */
async function reconcile(
  deps: Deps,
  s: StreamRow,
  status: string,
): Promise<"completed" | "skipped"> {
  if (status !== "Completed") return "skipped";
  await deps.sql.begin(async (db) => {
    await repo.markCompleted(db, s.id, { completedAt: deps.clock.now(), txHash: s.txHash });
  });
  return "completed";
}

/** The sweep: every ACTIVE stream whose accrual has ended gets a drain job. */
export async function enqueueDue(deps: Deps): Promise<number> {
  const due = await repo.dueForDrain(deps.sql, deps.clock.now());
  for (const { id } of due) await deps.queue.send(drainStreamQueue, { streamId: id });
  return due.length;
}

/** One of the merchant's streams, or stream_not_found. */
export async function getStream(deps: Deps, merchantId: string, reference: string) {
  return await findOwn(deps, merchantId, reference);
}

/** Base units as the USDC decimal people read (no trailing zeros). */
export const usdc = (units: bigint) => formatUsdc(units);
