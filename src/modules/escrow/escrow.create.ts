/**
 * Creating an escrow locks the depositor's USDC in EscrowVault, so it is recoverable from the
 * chain (DESIGN §11): the intent, with every term of the escrow, is committed before the create
 * transaction is signed (`escrow_creates`, migration 0020); the transaction carries the intent
 * key `escrow:create:<reference>`; the escrow's row, its `escrow.created` event and its expiry
 * refund are written in one short transaction once it is mined. A process killed at any instant
 * leaves a pending intent, which is settled by its transaction's state: mined → the escrow is
 * completed as the request would have (once: the row's insert is conditional); never sent,
 * refused or reverted → abandoned (nothing was locked); still in flight → waited for.
 *
 * Creations from one depositor wallet take turns on a claim (`escrow-depositor:<walletId>`, no
 * connection held): each checks the balance the one before left, so a creation the balance
 * cannot cover is refused with 400 before anything is signed, never a reverted transaction. A
 * pending intent found while holding that claim was left by a dead process (its owner would
 * hold the claim): it is settled first, by the same code the worker's recovery runs at start and
 * in the per-minute sweep.
 */
import { createHash } from "node:crypto";
import type { Deps } from "../../deps.ts";
import { DomainError } from "../../errors.ts";
import { withClaim } from "../../db/claims.ts";
import type { ProfileName } from "../../chain/profiles.ts";
import type { TxRow } from "../../chain/index.ts";
import { formatUsdc, usdcToNumber } from "../../money.ts";
import type { MerchantRow } from "../merchants/merchants.types.ts";
import { controlledWallet, usdcClaim } from "../wallets/wallets.service.ts";
import * as repo from "./escrow.repo.ts";
import { refundExpiredQueue } from "./escrow.queues.ts";
import { event } from "./escrow.apply.ts";
import type { CreateEscrowInput } from "./escrow.schemas.ts";
import {
  createIntent,
  depositorClaim,
  ESCROW_CLAIM,
  type EscrowRow,
  MAX_EXPIRY_SECONDS,
  MIN_EXPIRY_SECONDS,
  newEscrowReference,
} from "./escrow.rules.ts";

/**
 * The checks a creation makes before it takes the depositor's claim: a wallet the merchant
 * controls, a beneficiary other than it, a configured chain, an expiry in range.
 */
async function checkParties(
  deps: Deps,
  m: Pick<MerchantRow, "id">,
  profile: ProfileName,
  input: CreateEscrowInput,
) {
  const wallet = await controlledWallet(deps, m.id, {
    walletId: input.depositorWalletId,
    address: input.depositorSCA,
  });
  if (!wallet) throw new DomainError("escrow_depositor_not_controlled");
  if (wallet.address.toLowerCase() === input.beneficiarySCA) {
    throw new DomainError("escrow_parties_invalid");
  }
  if (!deps.chain.has(profile)) throw new DomainError("chain_not_configured");
  // The vault itself (which the contract refuses: that was a 502 `InvalidParties()` after the
  // gas estimate), the token or another of our contracts: no party that could ever be paid.
  if (deps.chain.isServiceContract(profile, input.beneficiarySCA)) {
    throw new DomainError("escrow_beneficiary_contract");
  }
  return { wallet, expiresAt: expiryOf(input, deps.clock.now()) };
}

/**
 * What a creation would do, checked as createEscrow checks it, nothing signed (the dashboard's
 * review step): the depositor wallet, the expiry, and the balance it holds now.
 */
export async function previewEscrow(
  deps: Deps,
  m: Pick<MerchantRow, "id">,
  profile: ProfileName,
  input: CreateEscrowInput,
) {
  const { wallet, expiresAt } = await checkParties(deps, m, profile, input);
  const balance = await deps.chain.usdcBalance(profile, wallet.address);
  if (balance < input.amount) {
    throw new DomainError("escrow_insufficient_balance", {
      balance: formatUsdc(balance, { decimals: "fixed" }),
    });
  }
  return { depositor: wallet.address, depositorWalletId: wallet.walletId, expiresAt, balance };
}

/** Funds a new escrow from one of the merchant's managed wallets and waits for the receipt. */
export async function createEscrow(
  deps: Deps,
  m: MerchantRow,
  profile: ProfileName,
  input: CreateEscrowInput,
  requestKey?: string,
): Promise<EscrowRow> {
  const { wallet, expiresAt } = await checkParties(deps, m, profile, input);
  // A request key (the dashboard's review) names one escrow: a second confirm answers it.
  const keyHash = requestKey === undefined
    ? null
    : createHash("sha256").update(requestKey).digest("hex");
  let reference = newEscrowReference();
  if (keyHash !== null) {
    reference = await repo.claimCreateRequest(deps.sql, { merchantId: m.id, keyHash, reference });
  }
  return await withClaim(deps.sql, depositorClaim(wallet.walletId), async () => {
    const chainId = deps.chain.chainId(profile);
    // A creation left in flight that could not be settled may still take its amount.
    const held = (await settleDepositor(deps, wallet.walletId))
      .filter((s) => s.settled === "pending" && s.intent.chainId === chainId)
      .reduce((sum, s) => sum + s.intent.amount, 0n);
    if (keyHash !== null) {
      // The first attempt of this request, settled above when it was left in flight.
      const done = await repo.findByReference(deps.sql, reference);
      if (done) return done;
      const earlier = await repo.findCreate(deps.sql, reference);
      if (earlier?.status === "pending") throw new DomainError("resource_busy");
      if (earlier) {
        // Abandoned (nothing held): this attempt is a new escrow under the same key.
        const next = newEscrowReference();
        await repo.moveCreateRequest(deps.sql, {
          merchantId: m.id,
          keyHash,
          from: reference,
          to: next,
        });
        reference = next;
      }
    }
    // Under the wallet's USDC claim too (its withdrawals, gateway deposits, stream creates, job
    // funds and bridge burns take it), from the balance check to the send: another feature's
    // spend cannot pass its own check on the same balance meanwhile.
    const { intent, tx } = await withClaim(
      deps.sql,
      usdcClaim(deps, profile, wallet.address),
      async () => {
        const balance = await deps.chain.usdcBalance(profile, wallet.address) - held;
        if (balance < input.amount) {
          throw new DomainError("escrow_insufficient_balance", {
            balance: formatUsdc(balance > 0n ? balance : 0n, { decimals: "fixed" }),
          });
        }
        const intent: repo.CreateIntent = {
          reference,
          merchantId: m.id,
          chainId,
          amount: input.amount,
          depositor: wallet.address.toLowerCase(),
          depositorWalletId: wallet.walletId,
          beneficiary: input.beneficiarySCA,
          description: input.description,
          webhookUrl: input.webhookUrl,
          expiresAt,
          status: "pending",
          createdAt: deps.clock.now(),
        };
        await repo.insertCreate(deps.sql, intent);
        let tx: TxRow;
        try {
          tx = await send(deps, profile, intent);
        } catch (e) {
          await afterFailedSend(deps, profile, intent, e);
          throw e;
        }
        return { intent, tx };
      },
    );
    return await complete(deps, intent, tx);
  }, ESCROW_CLAIM);
}

/** Signs (the depositor's authorization), records and sends the create; waits for the receipt. */
async function send(deps: Deps, profile: ProfileName, c: repo.CreateIntent): Promise<TxRow> {
  return await deps.chain.escrow.create(profile, {
    depositorWalletId: c.depositorWalletId,
    terms: {
      reference: c.reference,
      depositor: c.depositor as `0x${string}`,
      beneficiary: c.beneficiary as `0x${string}`,
      amount: c.amount,
      expiresAt: BigInt(c.expiresAt.getTime() / 1000),
    },
    intentKey: createIntent(c.reference),
  });
}

/**
 * After a failed send: abandoned when nothing can be mined any more (nothing recorded, refused,
 * reverted at estimation or when mined); left pending while a transaction may still be mined
 * (no receipt within the bound, a broadcast to retry): the recovery settles it.
 */
async function afterFailedSend(
  deps: Deps,
  profile: ProfileName,
  c: repo.CreateIntent,
  error: unknown,
) {
  if (error instanceof DomainError && error.code === "chain_timeout") return;
  try {
    const tx = await deps.chain.intent(profile, createIntent(c.reference));
    if (!tx || tx.status === "failed" || tx.status === "reverted") {
      await abandon(deps, c, tx ? `transaction ${tx.status}` : "nothing was sent");
    }
  } catch (e) {
    deps.log.warn("escrow create left for recovery", { reference: c.reference, error: e });
  }
}

async function abandon(deps: Deps, c: repo.CreateIntent, why: string) {
  await repo.endCreate(deps.sql, c.reference, "abandoned", why, deps.clock.now());
}

/**
 * The escrow's row, `escrow.created` and the expiry refund, in one transaction; the intent is
 * marked completed in it. The row's insert is conditional: when it exists already (completed by
 * another process), that row is the answer and nothing is emitted again.
 */
async function complete(deps: Deps, c: repo.CreateIntent, tx: TxRow): Promise<EscrowRow> {
  return await deps.sql.begin(async (db) => {
    const row = await repo.insert(db, { ...c, txHash: tx.txHash, now: c.createdAt });
    await repo.completeCreate(db, c.reference, deps.clock.now());
    if (!row) return (await repo.findByReference(db, c.reference))!;
    await event(deps, db, row, "escrow.created", {
      reference: row.reference,
      amount: usdcToNumber(row.amount),
      currency: row.currency,
      txHash: tx.txHash,
    });
    // The automatic refund at expiry, enqueued with the escrow (a rollback drops it too).
    await deps.queue.send(refundExpiredQueue, { reference: row.reference }, {
      tx: db,
      startAfter: c.expiresAt,
    });
    return row;
  });
}

export type Settled = "completed" | "abandoned" | "pending";

/**
 * Settles one pending creation by its transaction's state. The caller holds its depositor's
 * claim, so its owner is gone (or done: then it is no longer pending).
 */
async function settle(deps: Deps, reference: string): Promise<Settled> {
  const c = await repo.findCreate(deps.sql, reference);
  if (!c || c.status !== "pending") return c?.status === "abandoned" ? "abandoned" : "completed";
  if (!deps.chain.profiles().some((p) => deps.chain.chainId(p) === c.chainId)) return "pending";
  const profile = deps.chain.profileOf(c.chainId);
  let tx = await deps.chain.intent(profile, createIntent(reference));
  if (!tx || tx.status === "failed" || tx.status === "reverted") {
    await abandon(deps, c, tx ? `transaction ${tx.status}` : "nothing was sent");
    return "abandoned";
  }
  if (tx.status !== "confirmed") {
    try {
      // Re-broadcasts bytes recorded but never sent; records the receipt.
      tx = await deps.chain.sender.wait(profile, tx);
    } catch (e) {
      const code = e instanceof DomainError ? e.code : "";
      if (code !== "chain_reverted" && code !== "chain_refused") throw e;
      await abandon(deps, c, `transaction ${code === "chain_reverted" ? "reverted" : "refused"}`);
      return "abandoned";
    }
  }
  await complete(deps, c, tx);
  deps.log.warn("escrow creation completed by recovery", { reference });
  return "completed";
}

/**
 * Settles every pending creation of one depositor (the caller holds its claim). One that cannot
 * be settled now (no receipt within the bound, the node unreachable) stays pending.
 */
async function settleDepositor(deps: Deps, walletId: string) {
  const pending = await repo.pendingCreates(deps.sql, { depositorWalletId: walletId, limit: 100 });
  const out: { intent: repo.CreateIntent; settled: Settled }[] = [];
  for (const intent of pending) {
    let settled: Settled = "pending";
    try {
      settled = await settle(deps, intent.reference);
    } catch (e) {
      deps.log.warn("escrow create not settled yet", { reference: intent.reference, error: e });
    }
    out.push({ intent, settled });
  }
  return out;
}

/**
 * Settles the creations dead processes left pending (a worker's start, the per-minute sweep):
 * each depositor's under its claim, waiting up to `waitMs` for it (a dead holder's claim lapses
 * after ESCROW_CLAIM.ttlMs); a depositor whose claim a live request holds is left for next time.
 */
export async function recoverCreates(
  deps: Deps,
  opts: { waitMs?: number } = {},
): Promise<Record<Settled, number>> {
  const counts: Record<Settled, number> = { completed: 0, abandoned: 0, pending: 0 };
  const pending = await repo.pendingCreates(deps.sql, { limit: 500 });
  const wallets = [...new Set(pending.map((c) => c.depositorWalletId))];
  await Promise.all(wallets.map(async (walletId) => {
    try {
      const settled = await withClaim(
        deps.sql,
        depositorClaim(walletId),
        () => settleDepositor(deps, walletId),
        { ttlMs: ESCROW_CLAIM.ttlMs, waitMs: opts.waitMs ?? 0 },
      );
      for (const s of settled) counts[s.settled]++;
    } catch (e) {
      if (e instanceof DomainError && e.code === "resource_busy") return;
      deps.log.warn("escrow create recovery failed", { walletId, error: e });
    }
  }));
  return counts;
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
