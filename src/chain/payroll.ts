/**
 * BatchPayout through the sender: the payer's one-time permit (signed by its managed wallet,
 * relayed by the operator), chunks sent by the operator without waiting (so a batch's chunks are
 * pipelined), each chunk's per-recipient results from its Payout events, and the check of an
 * external wallet's own USDC transfer for a signature request.
 */
import {
  encodeFunctionData,
  type Hex,
  keccak256,
  maxUint256,
  parseEventLogs,
  parseSignature,
  toHex,
  TransactionReceiptNotFoundError,
} from "viem";
import { BatchPayout, TestUSDC } from "./contracts/artifacts/index.ts";
import { usdcDomain } from "./eip3009.ts";
import { ChainRevertError } from "./errors.ts";
import type { ProfileName } from "./profiles.ts";
import type { TxRequest } from "./sender.ts";
import type { TxSender } from "./sender.ts";
import type { TxRow } from "./transactions.repo.ts";
import type { ChainRuntime } from "./runtime.ts";
import type { LocalAccount } from "viem";

export interface PayrollChain {
  runtime(profile: ProfileName): ChainRuntime;
  contract(profile: ProfileName, name: "BatchPayout" | "TestUSDC"): `0x${string}`;
  send(req: TxRequest, wait?: { timeoutMs?: number }): Promise<TxRow>;
  walletAccount(walletId: string): Promise<LocalAccount>;
  readonly sender: TxSender;
}

/** Recipients per chunk transaction: about 6M gas at 29.8k each, a fifth of a 30M block. */
export const CHUNK_SIZE = 200;
/**
 * The gas limit budgeted per recipient: a USDC transferFrom to a fresh recipient plus its Payout
 * event measured 29.8k on TestUSDC (real USDC's blacklist reads add a few thousand), so 75k is
 * over twice that while a full chunk's limit (15.1M) stays within half a 30M block. A chunk that
 * runs out anyway reverts whole (its recipients FAILED, nothing moved).
 */
const GAS_PER_RECIPIENT = 75_000n;
const GAS_BASE = 120_000n;
/** Permits tried per allowance need (the first, then re-signed after a mined revert). */
const PERMIT_ATTEMPTS = 3;

export interface ChunkResult {
  index: number;
  recipient: `0x${string}`;
  amount: bigint;
  ok: boolean;
}

/** Blocks per getLogs call when looking for a chunk's Payout events (many RPCs cap a range). */
export const PAYOUT_WINDOW = 2_000n;
/** How far before the batch's creation time the lookup still reads (clock skew, slow blocks). */
const PAYOUT_SKEW_MS = 60 * 60_000;

/**
 * The block ranges read, newest first, when looking for the transaction that paid a chunk: from
 * `upper` (the block our reverted transaction was mined in: the chunk was already paid there, so
 * the paying one is at or before it) back to `floor` (no earlier block can hold it), in windows.
 */
export function payoutLookupWindows(
  upper: bigint,
  floor: bigint,
  size: bigint = PAYOUT_WINDOW,
): [bigint, bigint][] {
  const out: [bigint, bigint][] = [];
  for (let to = upper; to >= floor; to -= size) {
    const from = to - size + 1n > floor ? to - size + 1n : floor;
    out.push([from, to]);
    if (from === floor) break;
  }
  return out;
}

/**
 * The lowest block a chunk's paying transaction can be in. A local node's chain is short: 0. A
 * configured chain: the latest of the profile's START_BLOCK and the last block mined before the
 * batch was created (less an hour of clock skew), found by bisecting block timestamps, so never
 * block 0 of a long chain.
 */
export async function payoutFloor(
  rt: Pick<ChainRuntime, "node" | "profile" | "client">,
  since: Date,
  upper: bigint,
): Promise<bigint> {
  if (rt.node) return 0n;
  const configured = rt.profile.startBlock ?? 0n;
  const t = BigInt(Math.floor((since.getTime() - PAYOUT_SKEW_MS) / 1000));
  let lo = configured, hi = upper;
  // The last block whose timestamp is before t (or `configured` when none is).
  while (lo < hi) {
    const mid = (lo + hi + 1n) / 2n;
    const b = await rt.client.getBlock({ blockNumber: mid });
    if (b.timestamp < t) lo = mid;
    else hi = mid - 1n;
  }
  return lo;
}

export const chunkId = (batchRef: string, chunk: number) =>
  keccak256(toHex(`${batchRef}:${chunk}`));

const PERMIT_TYPES = {
  Permit: [
    { name: "owner", type: "address" },
    { name: "spender", type: "address" },
    { name: "value", type: "uint256" },
    { name: "nonce", type: "uint256" },
    { name: "deadline", type: "uint256" },
  ],
} as const;

export function payrollOps(chain: PayrollChain) {
  const batch = (p: ProfileName) => chain.contract(p, "BatchPayout");
  const usdc = (p: ProfileName) => chain.contract(p, "TestUSDC");

  async function receipt(p: ProfileName, hash: Hex) {
    try {
      return await chain.runtime(p).client.getTransactionReceipt({ hash });
    } catch (e) {
      if (e instanceof TransactionReceiptNotFoundError) return null;
      throw e;
    }
  }

  /** BatchPayout.permit call data: the payer's unlimited permit, valid for an hour of chain time. */
  async function permitCall(
    p: ProfileName,
    payer: { walletId: string; address: `0x${string}` },
    nonce: bigint,
  ): Promise<Hex> {
    const rt = chain.runtime(p);
    const deadline = (await rt.client.getBlock()).timestamp + 3600n;
    const account = await chain.walletAccount(payer.walletId);
    const signature = await account.signTypedData({
      domain: usdcDomain(rt),
      types: PERMIT_TYPES,
      primaryType: "Permit",
      message: { owner: payer.address, spender: batch(p), value: maxUint256, nonce, deadline },
    });
    const { v, r, s } = parseSignature(signature);
    return encodeFunctionData({
      abi: BatchPayout.abi,
      functionName: "permit",
      args: [payer.address, maxUint256, deadline, Number(v), r, s],
    });
  }

  return {
    address: batch,

    /**
     * Makes sure BatchPayout may move `needed` from the payer: otherwise its managed wallet
     * signs an unlimited permit (once per payer and contract) and the operator relays it, so the
     * payer needs no gas. The intent is keyed by the permit nonce: a retry finds the same one. A
     * permit that was mined reverted (signed before a crash, broadcast by the resume after its
     * deadline passed) leaves the nonce unused: the next attempt signs afresh under the intent
     * with an attempt suffix (`…:<nonce>:<n>`), so the batch is not stopped by it for good.
     */
    async ensureAllowance(
      p: ProfileName,
      payer: { walletId: string; address: `0x${string}` },
      needed: bigint,
    ): Promise<void> {
      const rt = chain.runtime(p);
      const read = (functionName: "allowance" | "nonces") =>
        rt.client.readContract({
          address: usdc(p),
          abi: TestUSDC.abi,
          functionName,
          args: functionName === "allowance" ? [payer.address, batch(p)] : [payer.address],
        } as never) as Promise<bigint>;
      for (let attempt = 0;; attempt++) {
        if (await read("allowance") >= needed) return;
        const nonce = await read("nonces");
        const base = `payroll-permit:${batch(p).toLowerCase()}:${payer.address}:${nonce}`;
        try {
          await chain.send({
            profile: p,
            from: "operator",
            to: batch(p),
            data: await permitCall(p, payer, nonce),
            intentKey: attempt === 0 ? base : `${base}:${attempt}`,
          });
          return;
        } catch (e) {
          const minedRevert = e instanceof ChainRevertError && !!e.txHash;
          if (!minedRevert || attempt >= PERMIT_ATTEMPTS - 1) throw e;
        }
      }
    },

    /** Signs, records and broadcasts one chunk (or finds the one its intent already has). */
    async submitChunk(
      p: ProfileName,
      req: {
        batchRef: string;
        chunk: number;
        payer: `0x${string}`;
        recipients: `0x${string}`[];
        amounts: bigint[];
        firstIndex: number;
      },
    ): Promise<TxRow> {
      return await chain.sender.submit({
        profile: p,
        from: "operator",
        to: batch(p),
        data: encodeFunctionData({
          abi: BatchPayout.abi,
          functionName: "pay",
          args: [
            chunkId(req.batchRef, req.chunk),
            req.payer,
            req.recipients,
            req.amounts,
            BigInt(req.firstIndex),
          ],
        }),
        gas: GAS_BASE + GAS_PER_RECIPIENT * BigInt(req.recipients.length),
        intentKey: `payroll:${req.batchRef}:${req.chunk}`,
      });
    },

    /** The transaction recorded for a chunk, if any. */
    chunkIntent: (batchRef: string, chunk: number) => `payroll:${batchRef}:${chunk}`,

    /**
     * Waits for a chunk's transaction and reads its Payout events. A chunk whose transaction
     * reverted because the chunk id was already paid (by an earlier transaction) is read from
     * that one's events instead.
     */
    async chunkResults(
      p: ProfileName,
      row: TxRow,
      batchRef: string,
      chunk: number,
      /**
       * When the batch was created (no transaction can have paid its chunk before), and the
       * blocks read per getLogs call (default PAYOUT_WINDOW).
       */
      lookup: { since: Date; window?: bigint },
      timeoutMs?: number,
    ): Promise<{ txHash: string; results: ChunkResult[] }> {
      const id = chunkId(batchRef, chunk);
      let hash = row.txHash as Hex;
      try {
        await chain.sender.wait(p, row, timeoutMs);
      } catch (e) {
        const paid = await chain.runtime(p).client.readContract({
          address: batch(p),
          abi: BatchPayout.abi,
          functionName: "paid",
          args: [id],
        });
        if (!paid) throw e;
        const rt = chain.runtime(p);
        const mined = await rt.client.getTransactionReceipt({ hash }).catch(() => null);
        const upper = mined?.blockNumber ?? await rt.client.getBlockNumber();
        // Newest first: the paying transaction is usually a block or two before ours, so the
        // first window finds it and the floor (a bisection on a remote chain) is not needed.
        let found: Hex | undefined;
        const window = lookup.window ?? PAYOUT_WINDOW;
        const first = payoutLookupWindows(upper, 0n, window)[0];
        const read = async ([from, to]: [bigint, bigint]) =>
          (await rt.client.getContractEvents({
            address: batch(p),
            abi: BatchPayout.abi,
            eventName: "Payout",
            args: { chunkId: id },
            fromBlock: from,
            toBlock: to,
          }))[0]?.transactionHash ?? undefined;
        found = await read(first);
        if (!found && first[0] > 0n) {
          const floor = await payoutFloor(rt, lookup.since, first[0] - 1n);
          for (const w of payoutLookupWindows(first[0] - 1n, floor, window)) {
            found = await read(w);
            if (found) break;
          }
        }
        if (!found) throw e;
        hash = found;
      }
      const r = await receipt(p, hash);
      if (!r) throw new Error(`receipt of ${hash} vanished`);
      const results = parseEventLogs({ abi: BatchPayout.abi, logs: r.logs, eventName: "Payout" })
        .filter((l) => l.args.chunkId === id && l.address.toLowerCase() === batch(p).toLowerCase())
        .map((l) => ({
          index: Number(l.args.index),
          recipient: l.args.recipient.toLowerCase() as `0x${string}`,
          amount: l.args.amount,
          ok: l.args.ok,
        }));
      return { txHash: hash, results };
    },

    /**
     * A mined transaction's USDC transfers (the token of this profile only), for checking a
     * signature request paid from an external wallet. Null: no receipt yet, or one not yet at
     * the profile's confirmation depth.
     */
    async usdcTransfersIn(
      p: ProfileName,
      hash: Hex,
    ): Promise<
      | { status: "success" | "reverted"; transfers: { from: string; to: string; value: bigint }[] }
      | null
    > {
      const r = await receipt(p, hash);
      if (!r) return null;
      // Not yet as deep as the profile's confirmation depth: not accepted yet (a reorg may drop it).
      const rt = chain.runtime(p);
      const head = await rt.client.getBlockNumber();
      if (head - r.blockNumber + 1n < BigInt(rt.profile.confirmations)) return null;
      const transfers = parseEventLogs({ abi: TestUSDC.abi, logs: r.logs, eventName: "Transfer" })
        .filter((l) => l.address.toLowerCase() === usdc(p).toLowerCase())
        .map((l) => ({
          from: l.args.from.toLowerCase(),
          to: l.args.to.toLowerCase(),
          value: l.args.value,
        }));
      return { status: r.status, transfers };
    },
  };
}
