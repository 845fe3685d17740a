/**
 * What each escrow action changes once its transaction is mined: the row and its webhook event,
 * written in the caller's transaction with the row locked. One definition per action, shared by
 * the action itself (escrow.service.ts) and the catch-up that applies an action whose
 * transaction was mined without its commit (escrow.catchup.ts), so both write the same change
 * and the same event. Whatever the row does not hold is taken from the transaction: who disputed
 * is its sender, the dispute's reason hash and the resolution's outcome are in its call data.
 */
import type { Deps } from "../../deps.ts";
import type { Db } from "../../db/client.ts";
import { checksum } from "../../chain/address.ts";
import type { TxRow } from "../../chain/index.ts";
import { usdcToNumber } from "../../money.ts";
import { emit } from "../webhooks/webhooks.service.ts";
import * as repo from "./escrow.repo.ts";
import { type EscrowActionName, type EscrowRow, NO_REASON } from "./escrow.rules.ts";

export async function event(
  deps: Deps,
  db: Db,
  e: Pick<EscrowRow, "merchantId" | "webhookUrl">,
  name: string,
  payload: Record<string, unknown>,
) {
  if (!e.webhookUrl) return;
  await emit(deps, db, { merchantId: e.merchantId, url: e.webhookUrl, event: name, payload });
}

/** An action's change: the locked row, the action's mined transaction, and when it applies. */
type Apply = (deps: Deps, db: Db, e: EscrowRow, tx: TxRow, at: Date) => Promise<void>;

export const applyRelease: Apply = async (deps, db, e, tx, at) => {
  await repo.markReleased(db, e.id, tx.txHash, at);
  await event(deps, db, e, "escrow.released", {
    reference: e.reference,
    amount: usdcToNumber(e.amount),
    currency: e.currency,
    releaseTxHash: tx.txHash,
  });
};

/** A confirmation has no event (the spec lists none); the escrow stays ACTIVE. */
export const applyConfirm: Apply = async (_deps, db, e, tx, at) => {
  await repo.markConfirmed(db, e.id, tx.txHash, at);
};

/**
 * Who disputed is the transaction's sender (the party's managed wallet, as the vault records
 * it); the reason is the text recorded before sending whose hash the call data carries. A
 * reason never recorded (a dispute sent by an older version) is left null, not guessed, unless
 * its hash is the default reason's.
 */
export const applyDispute: Apply = async (deps, db, e, tx, at) => {
  const call = deps.chain.escrow.decode(tx.data as `0x${string}`);
  if (call?.fn !== "dispute") throw new Error(`transaction ${tx.txHash} is not a dispute`);
  const reason = await repo.disputeReason(db, e.reference, call.reasonHash) ??
    (call.reasonHash === deps.chain.escrow.reasonHash(NO_REASON) ? NO_REASON : null);
  if (reason === null) {
    deps.log.warn("escrow dispute reason not recorded", { reference: e.reference });
  }
  const by = tx.fromAddress.toLowerCase();
  await repo.markDisputed(db, e.id, { reason, by, txHash: tx.txHash, now: at });
  await event(deps, db, e, "escrow.disputed", {
    reference: e.reference,
    amount: usdcToNumber(e.amount),
    currency: e.currency,
    disputedBy: checksum(by),
    reason,
    txHash: tx.txHash,
    disputedAt: at.toISOString(),
    explorerUrl: deps.chain.explorerTxUrl(deps.chain.profileOf(e.chainId), tx.txHash),
  });
};

export const applyRefund: Apply = async (deps, db, e, tx, at) => {
  await repo.markRefunded(db, e.id, tx.txHash, at);
  await event(deps, db, e, "refund.completed", {
    reference: e.reference,
    amount: usdcToNumber(e.amount),
    txHash: tx.txHash,
  });
};

/** The outcome is the one the arbiter's transaction carries. */
export const applyResolve: Apply = async (deps, db, e, tx, at) => {
  const call = deps.chain.escrow.decode(tx.data as `0x${string}`);
  if (call?.fn !== "resolve") throw new Error(`transaction ${tx.txHash} is not a resolution`);
  const outcome = call.released ? "released" : "refunded";
  await repo.markResolved(db, e.id, { outcome, txHash: tx.txHash, now: at });
  await event(deps, db, e, "dispute.resolved", {
    reference: e.reference,
    outcome,
    resolveTxHash: tx.txHash,
  });
};

export const APPLY: Record<EscrowActionName, Apply> = {
  release: applyRelease,
  confirm: applyConfirm,
  dispute: applyDispute,
  refund: applyRefund,
  resolve: applyResolve,
};
