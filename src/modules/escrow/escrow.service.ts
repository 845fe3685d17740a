/**
 * Escrow: USDC held by EscrowVault between a depositor (one of the merchant's managed wallets) and
 * a beneficiary. Every action is checked here before anything is signed (wrong party, a wallet
 * the merchant does not control, wrong state, too early: refused, nothing broadcast), then sent
 * while the escrow's row is locked, so two concurrent actions on one escrow are serialised: the
 * second sees the first's result. The state change and its webhook event are written in one
 * transaction once the transaction is mined, by the action's apply function (escrow.apply.ts),
 * which the catch-up shares for an action mined without its commit (escrow.catchup.ts).
 */
import type { Deps } from "../../deps.ts";
import { DomainError } from "../../errors.ts";
import { checksum } from "../../chain/address.ts";
import type { ProfileName } from "../../chain/profiles.ts";
import type { TxRow } from "../../chain/index.ts";
import { formatUsdc, usdcToNumber } from "../../money.ts";
import type { MerchantRow } from "../merchants/merchants.types.ts";
import { controlledWallet } from "../wallets/wallets.service.ts";
import * as repo from "./escrow.repo.ts";
import { refundExpiredQueue } from "./escrow.queues.ts";
import { APPLY, event, profileOf } from "./escrow.apply.ts";
import { catchUpEscrow } from "./escrow.catchup.ts";
import type { CreateEscrowInput } from "./escrow.schemas.ts";
import {
  actionIntent,
  amountString,
  type EscrowActionName,
  type EscrowOutcome,
  type EscrowRow,
  type EscrowStatus,
  MAX_EXPIRY_SECONDS,
  MIN_EXPIRY_SECONDS,
  newEscrowReference,
  NO_REASON,
} from "./escrow.rules.ts";

export type { EscrowRow, EscrowStatus } from "./escrow.rules.ts";
export { profileOf };

/** The escrow record every response shows. */
export function escrowView(deps: Deps, e: EscrowRow) {
  const profile = profileOf(deps, e);
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

/** Funds a new escrow from one of the merchant's managed wallets and waits for the receipt. */
export async function createEscrow(
  deps: Deps,
  m: MerchantRow,
  profile: ProfileName,
  input: CreateEscrowInput,
): Promise<EscrowRow> {
  const wallet = await controlledWallet(deps, m.id, {
    walletId: input.depositorWalletId,
    address: input.depositorSCA,
  });
  if (!wallet) throw new DomainError("escrow_depositor_not_controlled");
  if (wallet.address.toLowerCase() === input.beneficiarySCA) {
    throw new DomainError("escrow_parties_invalid");
  }
  if (!deps.chain.has(profile)) throw new DomainError("chain_not_configured");
  const now = deps.clock.now();
  const expiresAt = expiryOf(input, now);
  const balance = await deps.chain.usdcBalance(profile, wallet.address);
  if (balance < input.amount) {
    throw new DomainError("escrow_insufficient_balance", {
      balance: formatUsdc(balance, { decimals: "fixed" }),
    });
  }
  const reference = newEscrowReference();
  const tx = await deps.chain.escrow.create(profile, {
    depositorWalletId: wallet.walletId,
    terms: {
      reference,
      depositor: wallet.address,
      beneficiary: input.beneficiarySCA,
      amount: input.amount,
      expiresAt: BigInt(expiresAt.getTime() / 1000),
    },
    intentKey: `escrow:create:${reference}`,
  });
  return await deps.sql.begin(async (db) => {
    const row = await repo.insert(db, {
      reference,
      merchantId: m.id,
      chainId: deps.chain.chainId(profile),
      amount: input.amount,
      depositor: wallet.address.toLowerCase(),
      depositorWalletId: wallet.walletId,
      beneficiary: input.beneficiarySCA,
      description: input.description,
      webhookUrl: input.webhookUrl,
      expiresAt,
      txHash: tx.txHash,
      now: deps.clock.now(),
    });
    await event(deps, db, row, "escrow.created", {
      reference,
      amount: usdcToNumber(row.amount),
      currency: row.currency,
      txHash: tx.txHash,
    });
    // The automatic refund at expiry, enqueued with the escrow (a rollback drops it too).
    await deps.queue.send(refundExpiredQueue, { reference }, { tx: db, startAfter: expiresAt });
    return row;
  });
}

/** Whole seconds (the contract's clock), between a minute and a year from now. */
function expiryOf(input: CreateEscrowInput, now: Date): Date {
  const ms = input.expiresAt !== undefined
    ? Date.parse(input.expiresAt)
    : now.getTime() + input.expiresInSeconds! * 1000;
  const seconds = Math.floor(ms / 1000);
  const ahead = seconds - now.getTime() / 1000;
  if (!(ahead >= MIN_EXPIRY_SECONDS - 1 && ahead <= MAX_EXPIRY_SECONDS + 1)) {
    throw new DomainError("escrow_expiry_invalid");
  }
  return new Date(seconds * 1000);
}

export async function getEscrow(deps: Deps, m: MerchantRow, reference: string) {
  const e = await repo.findForMerchant(deps.sql, m.id, reference);
  if (!e) throw new DomainError("escrow_not_found");
  return e;
}

export async function listEscrows(
  deps: Deps,
  merchantId: string,
  opts: { status?: EscrowStatus; limit?: number } = {},
) {
  return await repo.listForMerchant(deps.sql, merchantId, {
    status: opts.status,
    limit: opts.limit ?? 50,
  });
}

function wrongState(e: Pick<EscrowRow, "status">, action: string): DomainError {
  return new DomainError("escrow_wrong_state", { escrowState: { status: e.status, action } });
}

/**
 * Runs one action on an escrow with its row locked: `check` refuses before anything is sent,
 * `send` broadcasts (with the action's intent, `escrow:<action>:<reference>`) and waits, then
 * the action's apply function writes the change and its event in the same transaction.
 * A revert that the checks could not foresee (the chain's clock, a state changed outside this
 * service) is mapped to the same refusal the checks give. A refusal for the escrow's state may
 * mean the row fell behind the chain (an action mined without its commit): the escrow is caught
 * up, and when that moved the row the action is tried once more on the row as it now is (a
 * resolution of an escrow whose dispute was caught up goes through; a release of one caught up
 * as disputed is refused with DISPUTED), so the answer and the row agree.
 */
async function act(
  deps: Deps,
  reference: string,
  merchantId: string | null,
  steps: {
    action: EscrowActionName;
    check: (e: EscrowRow) => Promise<void> | void;
    send: (e: EscrowRow, profile: ProfileName, intentKey: string) => Promise<TxRow>;
  },
  caughtUp = false,
): Promise<TxRow> {
  try {
    return (await deps.sql.begin(async (db) => {
      const e = await repo.lockByReference(db, reference);
      if (!e || (merchantId !== null && e.merchantId !== merchantId)) {
        throw new DomainError("escrow_not_found");
      }
      await steps.check(e);
      const profile = profileOf(deps, e);
      let tx;
      try {
        tx = await steps.send(e, profile, actionIntent(steps.action, reference));
      } catch (err) {
        const hint = err instanceof DomainError && err.code === "chain_reverted"
          ? err.details.hint ?? ""
          : "";
        if (/NotExpired/.test(hint)) throw new DomainError("escrow_not_expired");
        if (/NotActive|NotDisputed/.test(hint)) {
          const onChain = await deps.chain.escrow.read(profile, reference);
          throw new DomainError("escrow_wrong_state", {
            escrowState: { status: onChain.status, action: steps.action },
          });
        }
        throw err;
      }
      await APPLY[steps.action](deps, db, e, tx, deps.clock.now());
      return tx;
    })) as TxRow;
  } catch (err) {
    if (caughtUp || !(err instanceof DomainError) || err.code !== "escrow_wrong_state") throw err;
    let caught: EscrowActionName[] = [];
    try {
      caught = await catchUpEscrow(deps, reference);
    } catch (e) {
      deps.log.warn("escrow catch-up failed", { reference, error: e });
    }
    if (!caught.length) throw err;
    return await act(deps, reference, merchantId, steps, true);
  }
}

async function partyWallet(deps: Deps, merchantId: string, address: string) {
  const w = await controlledWallet(deps, merchantId, { address });
  if (!w) throw new DomainError("escrow_wallet_not_controlled");
  return w;
}

export async function release(deps: Deps, m: MerchantRow, reference: string, caller: string) {
  let walletId = "";
  await act(deps, reference, m.id, {
    action: "release",
    check: async (e) => {
      if (caller !== e.depositor) throw new DomainError("escrow_not_depositor");
      walletId = (await partyWallet(deps, m.id, caller)).walletId;
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

export async function confirm(deps: Deps, m: MerchantRow, reference: string, caller: string) {
  let walletId = "";
  await act(deps, reference, m.id, {
    action: "confirm",
    check: async (e) => {
      if (caller !== e.beneficiary) throw new DomainError("escrow_not_beneficiary");
      walletId = (await partyWallet(deps, m.id, caller)).walletId;
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
 * sent again after a stop answers with the first one (its party and reason).
 */
export async function dispute(
  deps: Deps,
  m: MerchantRow,
  input: { reference: string; callerSCA: string; reason: string },
) {
  const reason = input.reason.trim() === "" ? NO_REASON : input.reason;
  let walletId = "";
  const tx = await act(deps, input.reference, m.id, {
    action: "dispute",
    check: async (e) => {
      if (input.callerSCA !== e.depositor && input.callerSCA !== e.beneficiary) {
        throw new DomainError("escrow_not_party");
      }
      walletId = (await partyWallet(deps, m.id, input.callerSCA)).walletId;
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
    explorerUrl: deps.chain.explorerTxUrl(profileOf(deps, e), txHash),
  };
}

/**
 * Refund of an expired ACTIVE escrow to the depositor, sent by the operator (anyone may call the
 * vault's refund). `merchantId` null: the expiry job, for any merchant's escrow.
 */
export async function refund(deps: Deps, merchantId: string | null, reference: string) {
  await act(deps, reference, merchantId, {
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
    explorerUrl: deps.chain.explorerTxUrl(profileOf(deps, e), txHash),
    done,
  };
}

/** The contract's view, for operators and tests comparing it with ours. */
export async function onChain(deps: Deps, e: EscrowRow) {
  return await deps.chain.escrow.read(profileOf(deps, e), e.reference);
}
