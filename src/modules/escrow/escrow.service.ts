/**
 * Escrow: USDC held by EscrowVault between a depositor (one of the merchant's managed wallets) and
 * a beneficiary. Every lookup, list and action is by merchant and the credential's environment
 * (its chain): another environment's escrow is not found. Every action is checked before
 * anything is signed (wrong party, a wallet the merchant does not control, wrong state, too
 * early: refused, nothing broadcast), with the escrow claimed, so concurrent actions on one escrow
 * take turns and each sees the state the one before left (escrow.act.ts). Creation:
 * escrow.create.ts.
 */
import type { Deps } from "../../deps.ts";
import { DomainError } from "../../errors.ts";
import { checksum } from "../../chain/address.ts";
import { controlledWallet } from "../wallets/wallets.service.ts";
import * as repo from "./escrow.repo.ts";
import { act, type EscrowScope } from "./escrow.act.ts";
import {
  amountString,
  type EscrowOutcome,
  type EscrowRow,
  type EscrowStatus,
  NO_REASON,
} from "./escrow.rules.ts";

export type { EscrowRow, EscrowStatus } from "./escrow.rules.ts";
export type { EscrowScope } from "./escrow.act.ts";
export { createEscrow, previewEscrow } from "./escrow.create.ts";

/** The escrow record every response shows. */
export function escrowView(deps: Deps, e: EscrowRow) {
  const profile = deps.chain.profileOf(e.chainId);
  return {
    reference: e.reference,
    status: e.status,
    amount: amountString(e.amount),
    currency: "USDC" as const,
    depositor: checksum(e.depositor),
    beneficiary: checksum(e.beneficiary),
    expiresAt: e.expiresAt.toISOString(),
    description: e.description,
    webhookUrl: e.webhookUrl,
    chain: profile,
    txHash: e.txHash,
    explorerUrl: deps.chain.explorerTxUrl(profile, e.txHash),
    confirmed: e.confirmedAt !== null,
    confirmedAt: e.confirmedAt?.toISOString() ?? null,
    releaseTxHash: e.releaseTxHash,
    disputeReason: e.disputeReason,
    disputedBy: e.disputedBy ? checksum(e.disputedBy) : null,
    disputeTxHash: e.disputeTxHash,
    disputedAt: e.disputedAt?.toISOString() ?? null,
    resolution: e.resolution,
    resolveTxHash: e.resolveTxHash,
    refundTxHash: e.refundTxHash,
    createdAt: e.createdAt.toISOString(),
  };
}
export type EscrowView = ReturnType<typeof escrowView>;

/** One of the merchant's escrows in the credential's environment; any other is not found. */
export async function getEscrow(deps: Deps, scope: EscrowScope, reference: string) {
  const e = deps.chain.has(scope.profile)
    ? await repo.findForMerchant(
      deps.sql,
      scope.merchantId,
      deps.chain.chainId(scope.profile),
      reference,
    )
    : null;
  if (!e) throw new DomainError("escrow_not_found");
  return e;
}

/** The merchant's escrows in the credential's environment, newest first. */
export async function listEscrows(
  deps: Deps,
  scope: EscrowScope,
  opts: { status?: EscrowStatus; limit?: number } = {},
) {
  if (!deps.chain.has(scope.profile)) return [];
  return await repo.listForMerchant(deps.sql, scope.merchantId, deps.chain.chainId(scope.profile), {
    status: opts.status,
    limit: opts.limit ?? 50,
  });
}

function wrongState(e: Pick<EscrowRow, "status">, action: string): DomainError {
  return new DomainError("escrow_wrong_state", { escrowState: { status: e.status, action } });
}

async function partyWallet(deps: Deps, merchantId: string, address: string) {
  const w = await controlledWallet(deps, merchantId, { address });
  if (!w) throw new DomainError("escrow_wallet_not_controlled");
  return w;
}

export async function release(
  deps: Deps,
  scope: EscrowScope,
  reference: string,
  caller: string,
) {
  let walletId = "";
  await act(deps, reference, scope, {
    action: "release",
    check: async (e) => {
      if (caller !== e.depositor) throw new DomainError("escrow_not_depositor");
      walletId = (await partyWallet(deps, scope.merchantId, caller)).walletId;
      if (e.status !== "ACTIVE") throw wrongState(e, "release");
    },
    send: (e, profile, intentKey) =>
      deps.chain.escrow.act(profile, {
        action: "release",
        reference: e.reference,
        walletId,
        intentKey,
      }),
  });
  return await answer(deps, reference, "release");
}

export async function confirm(
  deps: Deps,
  scope: EscrowScope,
  reference: string,
  caller: string,
) {
  let walletId = "";
  await act(deps, reference, scope, {
    action: "confirm",
    check: async (e) => {
      if (caller !== e.beneficiary) throw new DomainError("escrow_not_beneficiary");
      walletId = (await partyWallet(deps, scope.merchantId, caller)).walletId;
      if (e.status !== "ACTIVE") throw wrongState(e, "confirm");
      if (e.confirmedAt) throw new DomainError("escrow_already_confirmed");
    },
    send: (e, profile, intentKey) =>
      deps.chain.escrow.act(profile, {
        action: "confirm",
        reference: e.reference,
        walletId,
        intentKey,
      }),
  });
  return await answer(deps, reference, "confirm");
}

/**
 * The reason is recorded (committed on its own) before the transaction is sent: the vault keeps
 * only its hash, and a dispute mined without its row's commit is caught up with this text.
 * One dispute per escrow can ever succeed on chain, so its intent is the escrow's: a dispute
 * sent again after a stop answers with the first one (its party and reason). A reason that is
 * missing or blank is recorded as `No reason provided` (docs/decisions.md).
 */
export async function dispute(
  deps: Deps,
  scope: EscrowScope,
  input: { reference: string; callerSCA: string; reason?: string },
) {
  const reason = (input.reason ?? "").trim() === "" ? NO_REASON : input.reason!;
  let walletId = "";
  const tx = await act(deps, input.reference, scope, {
    action: "dispute",
    check: async (e) => {
      if (input.callerSCA !== e.depositor && input.callerSCA !== e.beneficiary) {
        throw new DomainError("escrow_not_party");
      }
      walletId = (await partyWallet(deps, scope.merchantId, input.callerSCA)).walletId;
      if (e.status !== "ACTIVE") throw wrongState(e, "dispute");
    },
    send: async (e, profile, intentKey) => {
      await repo.recordDisputeReason(deps.sql, {
        reference: e.reference,
        reasonHash: deps.chain.escrow.reasonHash(reason),
        reason,
        now: deps.clock.now(),
      });
      return await deps.chain.escrow.act(profile, {
        action: "dispute",
        reference: e.reference,
        walletId,
        reason,
        intentKey,
      });
    },
  });
  const txHash = tx.txHash;
  const e = (await repo.findByReference(deps.sql, input.reference))!;
  return {
    escrow: {
      reference: e.reference,
      status: "DISPUTED" as const,
      disputeReason: e.disputeReason!,
      disputedBy: checksum(e.disputedBy!),
      disputeTxHash: e.disputeTxHash!,
    },
    txHash,
    explorerUrl: deps.chain.explorerTxUrl(deps.chain.profileOf(e.chainId), txHash),
  };
}

/**
 * Refund of an expired ACTIVE escrow to the depositor, sent by the operator (anyone may call the
 * vault's refund). `scope` null: the expiry job, for any merchant's escrow.
 */
export async function refund(deps: Deps, scope: EscrowScope | null, reference: string) {
  await act(deps, reference, scope, {
    action: "refund",
    check: (e) => {
      if (e.status !== "ACTIVE") throw wrongState(e, "refund");
      if (e.expiresAt.getTime() > deps.clock.now().getTime()) {
        throw new DomainError("escrow_not_expired", {
          hint: `expiresAt ${e.expiresAt.toISOString()}`,
        });
      }
    },
    send: (e, profile, intentKey) =>
      deps.chain.escrow.act(profile, { action: "refund", reference: e.reference, intentKey }),
  });
  return await answer(deps, reference, "refund");
}

/**
 * The arbiter's decision on a DISPUTED escrow (operator credential; any merchant's escrow). The
 * outcome recorded is the one the transaction carries: a resolution sent again after a stop with
 * the other outcome answers with the first.
 */
export async function resolve(deps: Deps, reference: string, outcome: EscrowOutcome) {
  await act(deps, reference, null, {
    action: "resolve",
    check: (e) => {
      if (e.status !== "DISPUTED") throw wrongState(e, "resolve");
    },
    send: (e, profile, intentKey) =>
      deps.chain.escrow.resolve(profile, {
        reference: e.reference,
        released: outcome === "released",
        intentKey,
      }),
  });
  const e = (await repo.findByReference(deps.sql, reference))!;
  return await answer(
    deps,
    reference,
    e.resolution === "released" ? "resolveReleased" : "resolveRefunded",
  );
}

type Done = "release" | "confirm" | "refund" | "resolveReleased" | "resolveRefunded";

async function answer(deps: Deps, reference: string, done: Done) {
  const e = (await repo.findByReference(deps.sql, reference))!;
  const txHash = {
    release: e.releaseTxHash,
    confirm: e.confirmTxHash,
    refund: e.refundTxHash,
    resolveReleased: e.resolveTxHash,
    resolveRefunded: e.resolveTxHash,
  }[done]!;
  return {
    escrow: escrowView(deps, e),
    txHash,
    explorerUrl: deps.chain.explorerTxUrl(deps.chain.profileOf(e.chainId), txHash),
    done,
  };
}

/** The contract's view, for operators and tests comparing it with ours. */
export async function onChain(deps: Deps, e: EscrowRow) {
  return await deps.chain.escrow.read(deps.chain.profileOf(e.chainId), e.reference);
}
