/**
 * The bridge's steps, one pg-boss job each (bridge.jobs.ts): pending → burned → attested →
 * minted (or failed). Each does its chain work under an intent key (the sender never signs a
 * second burn or mint for it), then records the result and enqueues the next step in one
 * transaction. A step that finds the transfer past its status returns: duplicates, retries and
 * the startup resume are harmless.
 */
import type { Deps } from "../../deps.ts";
import { decodeMessage } from "../../chain/index.ts";
import { ChainRevertError } from "../../chain/errors.ts";
import { formatUsdc } from "../../money.ts";
import { withClaim } from "../../db/claims.ts";
import { usdcClaim } from "../wallets/wallets.service.ts";
import * as payments from "../payments/payments.service.ts";
import * as repo from "./bridge.repo.ts";
import { attestQueue, burnQueue, mintQueue } from "./bridge.queues.ts";
import { attestationDelayMs, finalityOf, paymentHookData, profileOf } from "./bridge.rules.ts";
import { fetchAttestation } from "./bridge.attestation.ts";

/** Test-only pauses between a step's chain work and its record (restart tests). */
export interface BridgeHooks {
  beforeMint?: (reference: string) => Promise<void>;
  /** A shopper's authorization was relayed (mined), not yet recorded as burned. */
  afterRelay?: (reference: string) => Promise<void>;
}

/**
 * pending → burned: approve and burn on the source chain (intents `bridge:<ref>:…`) with the
 * maxFee and finality the transfer was quoted, under the burning wallet's USDC claim (the one
 * its withdrawals and deposits take): the approval is exact, so two burns of one wallet must
 * not interleave. Before anything is sent, the messenger's minimum fee is read again: if it rose
 * above the quote, the burn would revert after its approval, so the transfer fails with nothing
 * sent. Likewise, until the burn is sent, the wallet's balance must cover it (read under the
 * claim), else the transfer fails with nothing burned instead of sending a burn that reverts.
 * The result is recorded before the claim is given back, so whoever takes it next sees this
 * transfer burned, not pending.
 */
export async function burnStep(
  deps: Deps,
  reference: string,
  hooks: BridgeHooks = {},
): Promise<void> {
  const first = await repo.find(deps.sql, reference);
  if (!first || first.status !== "pending") return;
  if (first.burnMode === "payer_authorization") return await relayStep(deps, first, hooks);
  const source = profileOf(first.fromChain);
  await deps.chain.ensure(source);
  // The operator burns for transfers without a wallet: its burns take its own claim.
  const burner = first.walletId ? first.sender : deps.chain.runtime(source).operator?.address;
  // No operator account here: the send refuses it, as before.
  if (!burner) return await burnClaimed(deps, first, null);
  await withClaim(deps.sql, usdcClaim(deps, source, burner), async () => {
    // Another delivery of this job may have burned it while this one waited for the claim.
    const t = await repo.find(deps.sql, reference);
    if (t?.status === "pending") await burnClaimed(deps, t, burner as `0x${string}`);
  });
}

async function burnClaimed(
  deps: Deps,
  t: repo.BridgeRow,
  burner: `0x${string}` | null,
): Promise<void> {
  const source = profileOf(t.fromChain);
  const amount = repo.burnAmountOf(t);
  const from = t.walletId ? { walletId: t.walletId } : "operator" as const;
  let burn;
  try {
    const key = `bridge:${t.reference}`;
    if (!(await deps.chain.intent(source, `${key}:approve`))) {
      const floor = await deps.chain.cctp.minFee(source, amount);
      if (floor > t.maxFee) {
        return await fail(
          deps,
          t,
          `the messenger's minimum fee rose to ${usdc(floor)} USDC, above the ${
            usdc(t.maxFee)
          } this transfer allows: nothing was burned`,
        );
      }
    }
    const burnSent = await deps.chain.intent(source, `${key}:burn`);
    if (burner && (!burnSent || burnSent.status === "failed")) {
      const balance = await deps.chain.usdcBalance(source, burner);
      if (balance < amount) {
        return await fail(
          deps,
          t,
          `the wallet's balance ${usdc(balance)} USDC cannot cover ${
            usdc(amount)
          }: nothing was burned`,
        );
      }
    }
    burn = await deps.chain.cctp.burn(source, {
      from,
      amount,
      destination: profileOf(t.toChain),
      mintRecipient: t.recipient as `0x${string}`,
      hookData: t.paymentReference ? paymentHookData(t.paymentReference) : "0x",
      maxFee: t.maxFee,
      minFinalityThreshold: finalityOf(t.transferSpeed),
      intentKey: key,
    });
  } catch (e) {
    if (e instanceof ChainRevertError) return await fail(deps, t, `burn reverted: ${e.reason}`);
    throw e;
  }
  await burned(deps, t, burn.txHash);
}

const usdc = (units: bigint) => formatUsdc(units, { decimals: "fixed" });

/**
 * pending → burned for a shopper's one-signature payment: our relayer submits their EIP-3009
 * authorization to CheckoutBurner (intent `bridge:<ref>:burn`). Nothing is sent when the
 * authorization is about to expire, or the messenger's minimum fee rose above the maxFee it
 * signed. When the token has already spent the authorization, someone else submitted the same
 * signed burn (it burns exactly the same): the transfer goes on with that transaction; spent
 * with no such burn, the shopper cancelled it.
 */
async function relayStep(deps: Deps, t: repo.BridgeRow, hooks: BridgeHooks): Promise<void> {
  const source = profileOf(t.fromChain);
  const a = t.payerAuthorization!;
  const from = a.from as `0x${string}`;
  const nonce = a.nonce as `0x${string}`;
  const ops = deps.chain.cctp.checkout;
  const intentKey = `bridge:${t.reference}:burn`;
  await deps.chain.ensure(source);
  const elsewhere = async () =>
    (await ops.authorizationUsed(source, from, nonce))
      ? (await ops.burnedBy(source, from, nonce, t.createdAt)) ?? "cancelled"
      : null;
  if (!(await deps.chain.intent(source, intentKey))) {
    const other = await elsewhere();
    if (other === "cancelled") {
      return await fail(deps, t, "the authorization was cancelled: nothing was burned");
    }
    if (other) return await burned(deps, t, other.txHash);
    const now = BigInt(Math.floor(deps.clock.now().getTime() / 1000));
    if (BigInt(a.validBefore) <= now + RELAY_MARGIN_SECONDS) {
      return await fail(
        deps,
        t,
        "the authorization expired before it was relayed: nothing was burned",
      );
    }
    const floor = await deps.chain.cctp.minFee(source, repo.burnAmountOf(t));
    if (floor > t.maxFee) {
      return await fail(
        deps,
        t,
        `the messenger's minimum fee rose to ${
          formatUsdc(floor, { decimals: "fixed" })
        } USDC, above the signed maxFee: nothing was burned`,
      );
    }
  }
  let tx: { txHash: string };
  try {
    tx = await ops.relay(source, {
      burn: {
        amount: repo.burnAmountOf(t),
        destinationDomain: t.destinationDomain,
        mintRecipient: t.recipient as `0x${string}`,
        maxFee: t.maxFee,
        minFinalityThreshold: finalityOf(t.transferSpeed),
        hookData: paymentHookData(t.paymentReference!),
      },
      window: { from, validAfter: BigInt(a.validAfter), validBefore: BigInt(a.validBefore) },
      signature: a.signature as `0x${string}`,
      intentKey,
    });
  } catch (e) {
    if (!(e instanceof ChainRevertError)) throw e;
    const other = await elsewhere();
    if (!other || other === "cancelled") return await fail(deps, t, `burn reverted: ${e.reason}`);
    tx = other;
  }
  await hooks.afterRelay?.(t.reference);
  await burned(deps, t, tx.txHash);
}

/** A relayed authorization this close to its end is not sent (it could expire in the pool). */
const RELAY_MARGIN_SECONDS = 30n;

async function burned(deps: Deps, t: repo.BridgeRow, txHash: string): Promise<void> {
  const now = deps.clock.now();
  await deps.sql.begin(async (tx) => {
    if (await repo.markBurned(tx, t.reference, { txHash, now })) {
      await deps.queue.send(attestQueue, { reference: t.reference }, { tx });
    }
  });
}

/**
 * burned → attested: asks for the attestation (Circle's API when configured, else our local
 * attester). Without one yet, records the wait (attempts, last answer, next poll: visible in
 * the status) and polls again with backoff.
 */
export async function attestStep(deps: Deps, reference: string, due?: string): Promise<void> {
  const t = await repo.find(deps.sql, reference);
  if (!t || t.status !== "burned" || !t.burnTxHash) return;
  // Superseded: a later poll (a resume's) rescheduled this transfer's; that chain goes on.
  if (due !== undefined && t.nextAttestationAt?.getTime() !== Date.parse(due)) return;
  const answer = await fetchAttestation(deps, t);
  const now = deps.clock.now();
  if (answer.state !== "complete" || !answer.message || !answer.attestation || !answer.nonce) {
    const delay = attestationDelayMs(t.attestationAttempts + 1);
    const nextAt = new Date(now.getTime() + delay);
    await deps.sql.begin(async (tx) => {
      await repo.recordAttestationWait(tx, t.reference, { state: answer.state, nextAt, now });
      await deps.queue.send(attestQueue, { reference: t.reference, due: nextAt.toISOString() }, {
        tx,
        startAfter: delay,
      });
    });
    return;
  }
  const { message, attestation, nonce } = answer;
  const mismatch = checkMessage(t, message);
  if (mismatch) return await fail(deps, t, `attestation does not match the burn: ${mismatch}`);
  const decoded = decodeMessage(message)!;
  await deps.sql.begin(async (tx) => {
    const moved = await repo.markAttested(tx, t.reference, {
      message,
      attestation,
      nonce,
      feeExecuted: BigInt(decoded.decodedMessageBody!.feeExecuted),
      finalityExecuted: decoded.finalityThresholdExecuted,
      now,
    });
    if (moved) await deps.queue.send(mintQueue, { reference: t.reference }, { tx });
  });
}

/**
 * attested → minted: receiveMessage on the destination from the operator, once. Receiving is
 * permissionless: whether the message was already delivered (by another relayer, before our
 * send or in the same block) is the destination transmitter's `usedNonces`, read before
 * sending and again after any revert; never the revert's text, which differs between Circle's
 * contracts (`Nonce already used`) and ours (`NonceAlreadyUsed`) and is absent for a
 * transaction that reverted when mined.
 */
export async function mintStep(
  deps: Deps,
  reference: string,
  hooks: BridgeHooks = {},
): Promise<void> {
  const t = await repo.find(deps.sql, reference);
  if (!t || t.status !== "attested" || !t.message || !t.attestation) return;
  await hooks.beforeMint?.(reference);
  const dest = profileOf(t.toChain);
  await deps.chain.ensure(dest);
  const intentKey = `bridge:${t.reference}:mint`;
  let mint: { txHash: string; blockNumber: bigint | null } | null = null;
  // CCTP receives are permissionless: another relayer may have delivered our message already.
  if (!(await deps.chain.intent(dest, intentKey))) {
    mint = await deps.chain.cctp.receivedBy(dest, t.nonce as `0x${string}`, t.createdAt);
  }
  if (!mint) {
    try {
      mint = await deps.chain.cctp.receive(dest, {
        message: t.message as `0x${string}`,
        attestation: t.attestation as `0x${string}`,
        intentKey,
      });
    } catch (e) {
      if (!(e instanceof ChainRevertError)) throw e;
      const nonce = t.nonce as `0x${string}`;
      if (!(await deps.chain.cctp.nonceUsed(dest, nonce))) {
        return await fail(deps, t, `mint reverted: ${e.reason}`);
      }
      mint = await deps.chain.cctp.receivedBy(dest, nonce, t.createdAt);
      // Delivered, but its MessageReceived is not readable yet: pg-boss asks again.
      if (!mint) {
        throw new Error(`message ${nonce} was delivered; its transaction is not found yet`);
      }
    }
  }
  const minted = await deps.chain.cctp.minted(dest, mint.txHash as `0x${string}`);
  const amount = minted?.amount ?? repo.burnAmountOf(t) - (t.feeExecuted ?? 0n);
  const now = deps.clock.now();
  await deps.sql.begin(async (tx) => {
    const moved = await repo.markMinted(tx, t.reference, {
      txHash: mint.txHash,
      amount,
      fee: minted?.fee ?? t.feeExecuted,
      now,
    });
    if (!moved || !t.paymentReference || t.direction !== "inbound") return;
    await payments.settleBridged(deps, tx, {
      chainId: deps.chain.chainId(dest),
      reference: t.paymentReference,
      payer: t.sender,
      payTo: minted?.recipient ?? t.recipient,
      amount,
      txHash: mint.txHash,
      blockNumber: mint.blockNumber ?? 0n,
    });
  });
}

/** After a restart: every open transfer's current step is enqueued again (steps are idempotent). */
export async function resumeOpen(deps: Deps, opts: { staleBefore?: Date } = {}): Promise<number> {
  const rows = opts.staleBefore
    ? await repo.listStale(deps.sql, opts.staleBefore)
    : await repo.listOpen(deps.sql);
  for (const t of rows) {
    const job = t.status === "pending"
      ? burnQueue
      : t.status === "burned"
      ? attestQueue
      : mintQueue;
    await deps.queue.send(job, { reference: t.reference });
  }
  return rows.length;
}

async function fail(deps: Deps, t: repo.BridgeRow, error: string): Promise<void> {
  deps.log.warn("bridge transfer failed", { reference: t.reference, error });
  await repo.markFailed(deps.sql, t.reference, { error, now: deps.clock.now() });
}

/** The attested message must be the burn we asked for (an attestation API is not trusted). */
function checkMessage(t: repo.BridgeRow, message: `0x${string}`): string | null {
  const m = decodeMessage(message);
  if (!m?.decodedMessageBody) return "not a burn message";
  if (m.sourceDomain !== t.sourceDomain) return "source domain";
  if (m.destinationDomain !== t.destinationDomain) return "destination domain";
  const body = m.decodedMessageBody;
  if (BigInt(body.amount) !== repo.burnAmountOf(t)) return "amount";
  if (BigInt(body.feeExecuted) > t.maxFee) return "fee";
  if (`0x${body.mintRecipient.slice(-40)}`.toLowerCase() !== t.recipient) return "recipient";
  return null;
}
