/**
 * What stop, withdraw, the drain and the create's recovery share: a stream found in the
 * credential's environment, the claim that serialises the work on one stream, and the writes that
 * record what the vault did, each with its webhook event in one short transaction.
 *
 * A stream's work runs under `withClaim(sql, "stream:<reference>")` (src/db/claims.ts): no
 * transaction, row lock or advisory lock is held while the chain is called or a receipt awaited;
 * a waiter gets the claim and then sees the state the holder recorded.
 */
import type { Deps } from "../../deps.ts";
import type { Db } from "../../db/client.ts";
import { DomainError } from "../../errors.ts";
import type { ProfileName, TxRow } from "../../chain/index.ts";
import { checksum } from "../../chain/address.ts";
import { usdcToNumber } from "../../money.ts";
import { emit } from "../webhooks/webhooks.service.ts";
import * as repo from "./streams.repo.ts";
import type { StreamRow } from "./streams.types.ts";

/** The claim every action on one stream takes (create, stop, withdraw, drain, recovery). */
export const claimOf = (reference: string) => `stream:${reference}`;
export const profileOf = (s: Pick<StreamRow, "profile">) => s.profile as ProfileName;
export const fromSeconds = (s: bigint) => new Date(Number(s) * 1000);

/** The chain id of a credential's environment; null when that chain is not configured here. */
export function envChain(deps: Deps, profile: ProfileName): number | null {
  return deps.chain.has(profile) ? deps.chain.chainId(profile) : null;
}

/** The merchant's stream in this environment; another chain's is not found, like another's. */
export async function findOwn(
  deps: Deps,
  merchantId: string,
  profile: ProfileName,
  reference: string,
): Promise<StreamRow> {
  const chainId = envChain(deps, profile);
  const s = chainId === null
    ? null
    : await repo.findByReference(deps.sql, merchantId, chainId, reference);
  if (!s) throw new DomainError("stream_not_found");
  return s;
}

/** The row as it is now (under the claim: what an earlier holder recorded). */
export async function reread(deps: Deps, s: StreamRow): Promise<StreamRow> {
  return (await repo.findById(deps.sql, s.id)) ?? s;
}

export function refuseUnlessActive(s: StreamRow): void {
  if (s.status === "STOPPED") throw new DomainError("stream_not_active");
  if (s.status === "COMPLETED") throw new DomainError("stream_already_completed");
}

/**
 * ACTIVE → COMPLETED with `stream.completed`, once. `stoppedAt` is the stream's true end
 * (`endsAt`: the start plus ceil(deposit / rate)), however late the completing block came.
 */
async function complete(
  deps: Deps,
  db: Db,
  s: StreamRow,
  r: { txHash: string; amount: bigint },
): Promise<StreamRow | null> {
  const row = await repo.markCompleted(db, s.id, { completedAt: s.endsAt, txHash: r.txHash });
  if (row?.webhookUrl) {
    await emit(deps, db, {
      merchantId: s.merchantId,
      url: row.webhookUrl,
      event: "stream.completed",
      payload: {
        reference: s.reference,
        receiverSCA: checksum(s.receiverSca),
        amountWithdrawn: usdcToNumber(r.amount),
        totalStreamed: usdcToNumber(s.deposit),
      },
    });
  }
  return row;
}

/**
 * Records a mined vault withdrawal: the amount it paid is the vault's withdrawn total at its
 * block minus the total one block before (exact under concurrency and on replay). The one that
 * paid the whole deposit completes the stream (`stream.completed`), otherwise `event`.
 */
export async function recordWithdrawal(
  deps: Deps,
  s: StreamRow,
  tx: Pick<TxRow, "txHash" | "blockNumber">,
  event: "stream.withdrawn" | "stream.completed",
): Promise<{ amount: bigint; total: bigint; completed: boolean }> {
  const p = profileOf(s);
  const effects = await deps.chain.streams.effects(p, s.reference, tx.txHash);
  if (!effects.withdrawn) {
    throw new Error(`${tx.txHash} withdrew nothing from stream ${s.reference}`);
  }
  const { amount, total } = effects.withdrawn;
  const after = { withdrawn: total };
  const completed = effects.completed;
  await deps.sql.begin(async (db) => {
    if (completed) return await complete(deps, db, s, { txHash: tx.txHash, amount });
    await repo.recordWithdrawn(db, s.id, after.withdrawn);
    if (event === "stream.withdrawn" && s.webhookUrl) {
      await emit(deps, db, {
        merchantId: s.merchantId,
        url: s.webhookUrl,
        event,
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

export interface StopRecord {
  /** The stop landed at or after the end: the stream completed (nothing refunded). */
  completed: boolean;
  row: StreamRow | null;
  totalStreamed: bigint;
  refunded: bigint;
  stoppedAt: Date;
  /** What the stop itself paid the receiver. */
  paid: bigint;
}

/**
 * Records a mined stop. A stop mined at or after the stream's end refunds nothing: the deposit
 * was fully streamed, so it is recorded as the completion (`stream.completed`, stoppedAt the
 * end), not as a stop.
 */
export async function recordStop(
  deps: Deps,
  s: StreamRow,
  tx: Pick<TxRow, "txHash" | "blockNumber">,
): Promise<StopRecord> {
  const p = profileOf(s);
  const effects = await deps.chain.streams.effects(p, s.reference, tx.txHash);
  if (!effects.stopped) throw new Error(`${tx.txHash} did not stop stream ${s.reference}`);
  const { paid, refunded, stopTime } = effects.stopped;
  const after = { withdrawn: effects.stopped.total };
  const completed = refunded === 0n;
  const stoppedAt = completed ? s.endsAt : fromSeconds(stopTime);
  const row = await deps.sql.begin(async (db) => {
    if (completed) return await complete(deps, db, s, { txHash: tx.txHash, amount: paid });
    const row = await repo.markStopped(db, s.id, {
      withdrawn: after.withdrawn,
      stoppedAt,
      txHash: tx.txHash,
    });
    if (row?.webhookUrl) {
      await emit(deps, db, {
        merchantId: s.merchantId,
        url: row.webhookUrl,
        event: "stream.stopped",
        payload: {
          reference: row.reference,
          totalStreamed: usdcToNumber(after.withdrawn),
          refundedToSender: usdcToNumber(refunded),
          txHash: tx.txHash,
          stoppedAt: stoppedAt.toISOString(),
          explorerUrl: deps.chain.explorerTxUrl(p, tx.txHash),
        },
      });
    }
    return row;
  });
  return { completed, row, totalStreamed: after.withdrawn, refunded, stoppedAt, paid };
}

/**
 * The vault finished an ACTIVE row's stream without its record (a process killed between the
 * receipt and the commit): the transaction that did it is found by its intent family and
 * recorded exactly as its action records it. Returns the row as it is afterwards.
 */
export async function catchUp(
  deps: Deps,
  s: StreamRow,
  status: "None" | "Active" | "Stopped" | "Completed",
): Promise<StreamRow> {
  const p = profileOf(s);
  if (status === "Stopped") {
    const tx = await deps.chain.confirmedIntent(p, `stream-stop:${s.reference}:`);
    if (tx) await recordStop(deps, s, tx);
  } else if (status === "Completed") {
    const tx = await deps.chain.transaction(p, `stream-drain:${s.reference}`) ??
      await deps.chain.confirmedIntent(p, `stream-withdraw:${s.reference}:`);
    if (tx?.status === "confirmed") await recordWithdrawal(deps, s, tx, "stream.completed");
    // Still ACTIVE: completed by a withdrawal we did not send (the vault's withdraw is public).
    const now = await reread(deps, s);
    if (now.status === "ACTIVE") {
      await deps.sql.begin((db) =>
        complete(deps, db, now, { txHash: now.txHash, amount: now.deposit - now.withdrawn })
      );
    }
  }
  return await reread(deps, s);
}

/**
 * Completes a stream whose deposit has fully accrued: the vault's withdraw from the operator
 * pays the receiver's remainder (intent `stream-drain:<reference>`, so a crash after sending
 * finds the same transaction) and the completion is recorded with `stream.completed`.
 */
export async function completeEnded(deps: Deps, s: StreamRow): Promise<StreamRow> {
  const p = profileOf(s);
  let mined;
  try {
    mined = await deps.chain.streams.withdraw(
      p,
      s.reference,
      "operator",
      `stream-drain:${s.reference}`,
    );
  } catch (e) {
    if (!(e instanceof DomainError) || e.code !== "chain_reverted") throw e;
    return await catchUp(deps, s, (await deps.chain.streams.get(p, s.reference)).status);
  }
  await recordWithdrawal(deps, s, mined.tx, "stream.completed");
  return await reread(deps, s);
}
