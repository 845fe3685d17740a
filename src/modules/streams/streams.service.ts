/**
 * Streams: create (lock the deposit in StreamVault from a wallet the merchant controls) and the
 * list with derived values; stop and withdraw are in streams.actions.ts, the drain in
 * streams.drain.ts. Every lookup and list is by merchant and the credential's chain (DESIGN §11).
 *
 * A create is recorded (`stream_creates`, PENDING) with everything that rebuilds its record
 * before its transaction is sent, and runs under the stream's claim; its balance check, record
 * and send also under the sender wallet's USDC claim (one create per wallet at a time, so none is
 * sent to revert); its record, `stream.created` and the drain job are written in one transaction
 * after the chain confirmed. A process killed in between leaves the intent PENDING for the
 * recovery (streams.recovery.ts).
 */
import { bigintJson, sha256 } from "../../codec.ts";
import type { Deps } from "../../deps.ts";
import { DomainError } from "../../errors.ts";
import type { ProfileName } from "../../chain/profiles.ts";
import { checksum } from "../../chain/address.ts";
import { withClaim } from "../../db/claims.ts";
import { formatUsdc, usdcToNumber } from "../../money.ts";
import { emit } from "../webhooks/webhooks.service.ts";
import { controlledWallet, usdcClaim } from "../wallets/wallets.service.ts";
import type { MerchantRow } from "../merchants/merchants.types.ts";
import * as repo from "./streams.repo.ts";
import type { StreamRow } from "./streams.types.ts";
import type { CreateStreamInput } from "./streams.schemas.ts";
import { derive, durationSeconds, newReference, percentNumber } from "./streams.rules.ts";
import { drainStreamQueue } from "./streams.queues.ts";
import { claimOf, envChain, findOwn, fromSeconds, profileOf } from "./streams.records.ts";

export type { StreamRow } from "./streams.types.ts";
export { stopStream, withdrawStream } from "./streams.actions.ts";
export { drainStream, enqueueDue } from "./streams.drain.ts";

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

/**
 * What a create would do, checked as createStream checks it, nothing signed (the dashboard's
 * review step): a sender the merchant controls holding the deposit, and how long it streams.
 */
export async function previewStream(
  deps: Deps,
  merchant: Pick<MerchantRow, "id">,
  profile: ProfileName,
  input: CreateStreamInput,
) {
  const wallet = await controlledWallet(deps, merchant.id, { address: input.senderSCA });
  if (!wallet) throw new DomainError("stream_sender_not_controlled");
  if (!deps.chain.has(profile)) throw new DomainError("chain_not_configured");
  const balance = await deps.chain.usdcBalance(profile, wallet.address);
  if (balance < input.totalDeposited) {
    throw new DomainError("stream_insufficient_balance", {
      balance: formatUsdc(balance, { decimals: "fixed" }),
    });
  }
  // The spec's estimate: floor(totalDeposited / ratePerSecond) seconds from the start.
  const seconds = Number(input.totalDeposited / input.ratePerSecond);
  return {
    sender: display(wallet.address),
    balance,
    estimatedDurationSeconds: seconds,
    estimatedEndTime: new Date(deps.clock.now().getTime() + seconds * 1000),
  };
}

export async function createStream(
  deps: Deps,
  merchant: MerchantRow,
  profile: ProfileName,
  input: CreateStreamInput,
  requestKey?: string,
) {
  const wallet = await controlledWallet(deps, merchant.id, { address: input.senderSCA });
  if (!wallet) throw new DomainError("stream_sender_not_controlled");
  // The token, the stream vault or another of our contracts could never withdraw what accrues.
  if (deps.chain.has(profile) && deps.chain.isServiceContract(profile, input.receiverSCA)) {
    throw new DomainError("stream_receiver_contract");
  }
  let reference = newReference(deps.clock.now());
  // Per environment, as every create's key: a test key's request does not hold the key for the
  // live one (it answered 400 "already used with a different request" to an identical request).
  const keyHash = requestKey === undefined ? null : sha256(`${profile}\n${requestKey}`);
  if (keyHash !== null) {
    // A retry (after a 408, or after a crash) must lock the same stream, not a second one.
    const requestHash = sha256(
      bigintJson([profile, input]),
    );
    const claimed = await repo.claimCreateRequest(deps.sql, {
      merchantId: merchant.id,
      keyHash,
      requestHash,
      reference,
    });
    if (claimed.requestHash !== requestHash) throw new DomainError("stream_request_key_reused");
    reference = claimed.reference;
  }
  return await withClaim(deps.sql, claimOf(reference), async () => {
    // An earlier attempt, or the recovery, may have finished it.
    const done = await repo.findAnyByReference(deps.sql, reference);
    if (done) return createdView(deps, done);
    const intentKey = `stream-create:${reference}`;
    // The wallet's USDC claim (withdrawals and gateway deposits spend under it too), taken inside
    // the stream's: creates from one wallet check and send one at a time, so each checks the
    // balance the one before left and none is sent to revert. No path takes them the other way.
    const mined = await withClaim(deps.sql, usdcClaim(deps, profile, wallet.address), async () => {
      // The first attempt's deposit may already have left the wallet: no balance to check then.
      if (!(await deps.chain.transaction(profile, intentKey))) {
        const balance = await available(deps, profile, wallet, reference);
        if (balance < input.totalDeposited) {
          throw new DomainError("stream_insufficient_balance", {
            balance: formatUsdc(balance > 0n ? balance : 0n, { decimals: "fixed" }),
          });
        }
      }
      const intent = await repo.recordCreate(deps.sql, {
        reference,
        merchantId: merchant.id,
        profile,
        chainId: deps.chain.chainId(profile),
        senderWalletId: wallet.walletId,
        senderSca: wallet.address,
        receiverSca: input.receiverSCA,
        rate: input.ratePerSecond,
        deposit: input.totalDeposited,
        contractAddress: deps.chain.streams.vaultAddress(profile).toLowerCase(),
        webhookUrl: input.webhookUrl,
        keyHash,
      });
      try {
        const m = await deps.chain.streams.create({
          profile,
          walletId: intent.senderWalletId,
          sender: intent.senderSca,
          reference,
          receiver: intent.receiverSca,
          rate: intent.rate,
          deposit: intent.deposit,
        });
        return { intent, ...m };
      } catch (e) {
        await failUnlessSent(deps, intent, e);
        throw e;
      }
    });
    return createdView(
      deps,
      await finishCreate(deps, mined.intent, mined.tx.txHash, mined.blockTime),
    );
  });
}

/**
 * The sender's USDC a new create may lock: its balance on chain less the deposits of its other
 * creates still on their way (signed or broadcast, not yet in the vault: a create whose receipt
 * timed out, or one a dead process left). Read in that order, so a create mined in between is
 * counted twice (a refusal to retry), never missed. Call it holding the wallet's USDC claim: any
 * other create of the wallet sends only under it.
 */
async function available(
  deps: Deps,
  profile: ProfileName,
  wallet: { walletId: string; address: string },
  reference: string,
): Promise<bigint> {
  const chainId = deps.chain.chainId(profile);
  let inFlight = 0n;
  for (const c of await repo.pendingCreatesOf(deps.sql, wallet.walletId, chainId, reference)) {
    const tx = await deps.chain.intent(profile, `stream-create:${c.reference}`);
    if (!tx || (tx.status !== "signed" && tx.status !== "broadcast")) continue;
    if ((await deps.chain.streams.get(profile, c.reference)).status !== "None") continue;
    inFlight += c.deposit;
  }
  return await deps.chain.usdcBalance(profile, wallet.address as `0x${string}`) - inFlight;
}

/**
 * A create that failed with nothing sent, or whose transaction was refused or reverted, locked
 * nothing: its intent is FAILED. One broadcast and not mined yet (a timeout) stays PENDING.
 */
async function failUnlessSent(deps: Deps, c: repo.CreateIntent, e: unknown): Promise<void> {
  const tx = await deps.chain.intent(c.profile as ProfileName, `stream-create:${c.reference}`);
  if (tx && tx.status !== "failed" && tx.status !== "reverted") return;
  await repo.settleCreate(deps.sql, c.reference, "FAILED", String(e).slice(0, 500));
}

/**
 * Writes the record of a stream the vault holds (its create mined at `startTime`, the block's
 * timestamp), with `stream.created` and the drain job, once: a second call finds the record.
 */
export async function finishCreate(
  deps: Deps,
  c: repo.CreateIntent,
  txHash: string,
  startTime: bigint,
): Promise<StreamRow> {
  const startedAt = fromSeconds(startTime);
  const duration = durationSeconds(c.rate, c.deposit);
  return await deps.sql.begin(async (tx) => {
    await repo.settleCreate(tx, c.reference, "DONE");
    const row = await repo.insert(tx, {
      merchantId: c.merchantId,
      reference: c.reference,
      profile: c.profile,
      chainId: c.chainId,
      senderWalletId: c.senderWalletId,
      senderSca: c.senderSca,
      receiverSca: c.receiverSca,
      rate: c.rate,
      deposit: c.deposit,
      contractAddress: c.contractAddress,
      txHash,
      startedAt,
      endsAt: new Date(startedAt.getTime() + Number(duration) * 1000),
      webhookUrl: c.webhookUrl,
      now: deps.clock.now(),
    });
    if (!row) return (await repo.findAnyByReference(tx, c.reference))!;
    if (row.webhookUrl) {
      await emit(deps, tx, {
        merchantId: row.merchantId,
        url: row.webhookUrl,
        event: "stream.created",
        payload: {
          reference: row.reference,
          senderSCA: checksum(row.senderSca),
          receiverSCA: checksum(row.receiverSca),
          ratePerSecond: usdcToNumber(row.rate),
          totalDeposited: usdcToNumber(row.deposit),
          estimatedDurationSeconds: Number(row.deposit / row.rate),
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

/** The merchant's streams in the credential's environment (its chain only), with metrics. */
export async function listStreams(
  deps: Deps,
  merchantId: string,
  profile: ProfileName,
  filter: repo.ListFilter,
) {
  const chainId = envChain(deps, profile);
  const rows = chainId === null ? [] : await repo.list(deps.sql, merchantId, chainId, filter);
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

/** One of the merchant's streams in the credential's environment, or stream_not_found. */
export async function getStream(
  deps: Deps,
  merchantId: string,
  profile: ProfileName,
  reference: string,
) {
  return await findOwn(deps, merchantId, profile, reference);
}

/** Base units as the USDC decimal people read (no trailing zeros). */
export const usdc = (units: bigint) => formatUsdc(units);
