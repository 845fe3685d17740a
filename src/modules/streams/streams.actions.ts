/**
 * Stop and withdraw. Each runs under the stream's claim (streams.records.ts): the row is read
 * again there, the vault's state at the chain's present decides what may be sent (a stream that
 * has ended completes instead of stopping; nothing accrued beyond what was paid is refused before
 * anything is broadcast), then the transaction is sent with no transaction open, and the result
 * and its event are recorded in one short transaction.
 */
import type { Deps } from "../../deps.ts";
import { DomainError } from "../../errors.ts";
import type { ProfileName } from "../../chain/index.ts";
import { checksum } from "../../chain/address.ts";
import { withClaim } from "../../db/claims.ts";
import { controlledWallet } from "../wallets/wallets.service.ts";
import type { MerchantRow } from "../merchants/merchants.types.ts";
import type { StreamRow } from "./streams.types.ts";
import {
  catchUp,
  claimOf,
  completeEnded,
  findOwn,
  profileOf,
  recordStop,
  recordWithdrawal,
  refuseUnlessActive,
  reread,
} from "./streams.records.ts";

/**
 * Stops the stream from `callerSCA` (a wallet the merchant controls). The vault itself refuses a
 * caller other than the sender (502). A stream whose deposit has fully accrued is completed
 * instead (the receiver paid, `stream.completed`) and the stop answers `Stream is already
 * COMPLETED.`: it ended on its own.
 */
export async function stopStream(
  deps: Deps,
  merchant: MerchantRow,
  profile: ProfileName,
  input: { reference: string; callerSCA: `0x${string}` },
) {
  const found = await findOwn(deps, merchant.id, profile, input.reference);
  refuseUnlessActive(found);
  const caller = await controlledWallet(deps, merchant.id, { address: input.callerSCA });
  if (!caller) throw new DomainError("stream_caller_not_controlled");
  return await withClaim(deps.sql, claimOf(found.reference), async () => {
    const s = await reread(deps, found);
    refuseUnlessActive(s);
    const p = profileOf(s);
    const intentKey = `stream-stop:${s.reference}:${caller.walletId}`;
    // A stop this caller already sent (a retry after a timeout) is found again, not decided anew.
    if (!(await deps.chain.transaction(p, intentKey))) {
      const state = await deps.chain.streams.state(p, s.reference);
      if (state.status !== "Active") throw refusal(await catchUp(deps, s, state.status));
      if (state.accrued >= state.deposit) {
        await completeEnded(deps, s);
        throw new DomainError("stream_already_completed");
      }
    }
    let mined;
    try {
      mined = await deps.chain.streams.stop(
        p,
        s.reference,
        { walletId: caller.walletId },
        intentKey,
      );
    } catch (e) {
      throw clearRevert(e, s);
    }
    const r = await recordStop(deps, s, mined.tx);
    if (r.completed) throw new DomainError("stream_already_completed");
    // Recorded before (only a replay of this caller's own stop gets here).
    if (!r.row) throw new DomainError("stream_not_active");
    return {
      row: r.row,
      txHash: mined.tx.txHash,
      explorerUrl: deps.chain.explorerTxUrl(p, mined.tx.txHash),
      totalStreamed: r.totalStreamed,
      refundedToSender: r.refunded,
      // What the stop itself sent the receiver (earlier withdrawals already paid the rest).
      paidAtStop: r.paid,
    };
  });
}

/** The refusal for a row the vault had already moved on (after it was caught up). */
function refusal(s: StreamRow): DomainError {
  refuseUnlessActive(s);
  // The vault is not active and nothing of ours explains it: refused as not active.
  return new DomainError("stream_not_active");
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

/**
 * The receiver (a wallet the merchant controls, the stream's receiver) takes what accrued; the
 * withdrawal that pays the whole deposit completes the stream. Nothing accrued beyond what was
 * paid is refused (400) before anything is sent.
 */
export async function withdrawStream(
  deps: Deps,
  merchant: MerchantRow,
  profile: ProfileName,
  input: { reference: string; receiverSCA: `0x${string}` },
  requestKey?: string,
) {
  const found = await findOwn(deps, merchant.id, profile, input.reference);
  refuseUnlessActive(found);
  const receiver = await controlledWallet(deps, merchant.id, { address: input.receiverSCA });
  if (!receiver) throw new DomainError("stream_receiver_not_controlled");
  if (receiver.address !== found.receiverSca) throw new DomainError("stream_not_receiver");
  return await withClaim(deps.sql, claimOf(found.reference), async () => {
    const s = await reread(deps, found);
    refuseUnlessActive(s);
    const p = profileOf(s);
    const intentKey = `stream-withdraw:${s.reference}:${requestKey ?? crypto.randomUUID()}`;
    if (!(await deps.chain.transaction(p, intentKey))) {
      const state = await deps.chain.streams.state(p, s.reference);
      if (state.status !== "Active") throw refusal(await catchUp(deps, s, state.status));
      if (state.accrued <= state.withdrawn) throw new DomainError("stream_nothing_to_withdraw");
    }
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
    const r = await recordWithdrawal(deps, s, mined.tx, "stream.withdrawn");
    return {
      reference: s.reference,
      amountWithdrawn: r.amount,
      totalStreamed: r.total,
      txHash: mined.tx.txHash,
      explorerUrl: deps.chain.explorerTxUrl(p, mined.tx.txHash),
    };
  });
}
