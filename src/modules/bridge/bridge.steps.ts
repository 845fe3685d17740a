/**
 * The bridge's steps, one pg-boss job each (bridge.jobs.ts): pending → burned → attested →
 * minted (or failed). Each does its chain work under an intent key (the sender never signs a
 * second burn or mint for it), then records the result and enqueues the next step in one
 * transaction. A step that finds the transfer past its status returns: duplicates, retries and
 * the startup resume are harmless.
 */
import type { Deps } from "../../deps.ts";
import { type AttestedMessage, decodeMessage } from "../../chain/index.ts";
import { ChainRevertError } from "../../chain/errors.ts";
import * as payments from "../payments/payments.service.ts";
import * as repo from "./bridge.repo.ts";
import { attestQueue, burnQueue, mintQueue } from "./bridge.queues.ts";
import { attestationDelayMs, paymentHookData } from "./bridge.rules.ts";
import { profileOf } from "./bridge.service.ts";

/** Test-only pauses between a step's chain work and its record (restart tests). */
export interface BridgeHooks {
  beforeMint?: (reference: string) => Promise<void>;
}

/** pending → burned: approve and burn on the source chain (intents `bridge:<ref>:…`). */
export async function burnStep(deps: Deps, reference: string): Promise<void> {
  const t = await repo.find(deps.sql, reference);
  if (!t || t.status !== "pending") return;
  const source = profileOf(t.fromChain);
  let burn;
  try {
    await deps.chain.ensure(source);
    burn = await deps.chain.cctp.burn(source, {
      from: t.walletId ? { walletId: t.walletId } : "operator",
      amount: t.amount,
      destination: profileOf(t.toChain),
      mintRecipient: t.recipient as `0x${string}`,
      hookData: t.paymentReference ? paymentHookData(t.paymentReference) : "0x",
      intentKey: `bridge:${t.reference}`,
    });
  } catch (e) {
    if (e instanceof ChainRevertError) return await fail(deps, t, `burn reverted: ${e.reason}`);
    throw e;
  }
  const now = deps.clock.now();
  await deps.sql.begin(async (tx) => {
    if (await repo.markBurned(tx, t.reference, { txHash: burn.txHash, now })) {
      await deps.queue.send(attestQueue, { reference: t.reference }, { tx });
    }
  });
}

/**
 * burned → attested: asks for the attestation (Circle's API when configured, else our local
 * attester). Without one yet, records the wait (attempts, last answer, next poll: visible in
 * the status) and polls again with backoff.
 */
export async function attestStep(deps: Deps, reference: string): Promise<void> {
  const t = await repo.find(deps.sql, reference);
  if (!t || t.status !== "burned" || !t.burnTxHash) return;
  const answer = await fetchAttestation(deps, t);
  const now = deps.clock.now();
  if (answer.state !== "complete" || !answer.message || !answer.attestation || !answer.nonce) {
    const delay = attestationDelayMs(t.attestationAttempts + 1);
    await deps.sql.begin(async (tx) => {
      await repo.recordAttestationWait(tx, t.reference, {
        state: answer.state,
        nextAt: new Date(now.getTime() + delay),
        now,
      });
      await deps.queue.send(attestQueue, { reference: t.reference }, { tx, startAfter: delay });
    });
    return;
  }
  const { message, attestation, nonce } = answer;
  const mismatch = checkMessage(t, message);
  if (mismatch) return await fail(deps, t, `attestation does not match the burn: ${mismatch}`);
  await deps.sql.begin(async (tx) => {
    const moved = await repo.markAttested(tx, t.reference, {
      message,
      attestation,
      nonce,
      now,
    });
    if (moved) await deps.queue.send(mintQueue, { reference: t.reference }, { tx });
  });
}

/** attested → minted: receiveMessage on the destination from the operator, once. */
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
      mint = /NonceAlreadyUsed/.test(e.reason)
        ? await deps.chain.cctp.receivedBy(dest, t.nonce as `0x${string}`, t.createdAt)
        : null;
      if (!mint) return await fail(deps, t, `mint reverted: ${e.reason}`);
    }
  }
  const minted = await deps.chain.cctp.minted(dest, mint.txHash as `0x${string}`);
  const amount = minted?.amount ?? t.amount;
  const now = deps.clock.now();
  await deps.sql.begin(async (tx) => {
    const moved = await repo.markMinted(tx, t.reference, { txHash: mint.txHash, amount, now });
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

interface Attestation {
  /** `complete`, or the wait's last answer: `not_found`, `pending_confirmations`, … */
  state: string;
  message?: `0x${string}`;
  attestation?: `0x${string}`;
  nonce?: string;
}

/** The attestation of the transfer's burn: GET /v2/messages/{sourceDomain}?transactionHash=. */
async function fetchAttestation(
  deps: Deps,
  t: repo.BridgeRow,
): Promise<Attestation> {
  const api = deps.config.chain.cctp.attestationApiUrl;
  let messages: AttestedMessage[] | null;
  if (api) {
    const url = `${api}/v2/messages/${t.sourceDomain}?transactionHash=${t.burnTxHash}`;
    const res = await fetch(url, { signal: AbortSignal.timeout(10_000) });
    if (res.status === 404) {
      await res.body?.cancel();
      messages = null;
    } else if (!res.ok) {
      await res.body?.cancel();
      throw new Error(`attestation API answered ${res.status}`);
    } else {
      messages = ((await res.json()) as { messages?: AttestedMessage[] }).messages ?? [];
    }
  } else {
    messages = await deps.chain.cctp.attest(
      profileOf(t.fromChain),
      t.burnTxHash as `0x${string}`,
    );
  }
  const m = messages?.[0];
  if (!m) return { state: "not_found" };
  if (m.status !== "complete" || !m.attestation || m.attestation === "PENDING") {
    return { state: m.status || "pending" };
  }
  return {
    state: "complete",
    message: m.message,
    attestation: m.attestation,
    nonce: decodeMessage(m.message)?.nonce ?? String(m.eventNonce),
  };
}

/** The attested message must be the burn we asked for (an attestation API is not trusted). */
function checkMessage(t: repo.BridgeRow, message: `0x${string}`): string | null {
  const m = decodeMessage(message);
  if (!m?.decodedMessageBody) return "not a burn message";
  if (m.sourceDomain !== t.sourceDomain) return "source domain";
  if (m.destinationDomain !== t.destinationDomain) return "destination domain";
  const body = m.decodedMessageBody;
  if (BigInt(body.amount) !== t.amount) return "amount";
  if (`0x${body.mintRecipient.slice(-40)}`.toLowerCase() !== t.recipient) return "recipient";
  return null;
}
