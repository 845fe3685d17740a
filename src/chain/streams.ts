/**
 * StreamVault through the sender: the sender wallet's one-time approval, create, stop and
 * withdraw as intents, and the vault's view of a stream at a block. A stream is keyed on chain by
 * keccak256 of its reference. Timestamps come from the mined block, the service's time base.
 *
 * A local node mines only on demand, so its chain time stands still between transactions: a
 * decision about the present (has this stream ended, what has accrued) first mines an empty
 * block there (`present`). Never on a configured remote chain, whose blocks come by themselves.
 */
import { encodeFunctionData, type Hex, keccak256, maxUint256, parseEventLogs, toHex } from "viem";
import { StreamVault, TestUSDC } from "./contracts/artifacts/index.ts";
import type { ProfileName } from "./profiles.ts";
import type { Signer, TxRequest } from "./sender.ts";
import type { TxRow } from "./transactions.repo.ts";
import type { ChainRuntime } from "./runtime.ts";

/** What StreamVault's operations need from the chain module (a slice of `Chain`). */
export interface StreamChain {
  runtime(profile: ProfileName): ChainRuntime;
  contract(profile: ProfileName, name: "StreamVault" | "TestUSDC"): `0x${string}`;
  send(req: TxRequest, wait?: { timeoutMs?: number }): Promise<TxRow>;
}

export interface VaultStream {
  sender: `0x${string}`;
  receiver: `0x${string}`;
  status: "None" | "Active" | "Stopped" | "Completed";
  rate: bigint;
  deposit: bigint;
  /** Paid to the receiver so far. */
  withdrawn: bigint;
  startTime: bigint;
  stopTime: bigint;
}

const STATUS = ["None", "Active", "Stopped", "Completed"] as const;

export const streamId = (reference: string) => keccak256(toHex(reference));

/** The vault's view of a stream at the chain's present, with what had accrued by then. */
export interface VaultState extends VaultStream {
  accrued: bigint;
  /** The block read, and its timestamp (seconds). */
  block: bigint;
  at: bigint;
}

/**
 * What a mined transaction did to one stream, from its receipt's events (never a read of the
 * vault at a past block: a local node restarted from its saved state, and a remote node that is
 * not an archive, cannot answer those).
 */
export interface StreamEffects {
  /** A withdrawal: what it paid, and the receiver's total after it. */
  withdrawn?: { amount: bigint; total: bigint };
  /** A stop: what it paid the receiver and refunded the sender, the total, and its time (s). */
  stopped?: { paid: bigint; refunded: bigint; total: bigint; stopTime: bigint };
  /** The stream was fully paid out by this transaction. */
  completed: boolean;
}

/** A mined transaction with its block's timestamp (seconds). */
export interface Mined {
  tx: TxRow;
  blockTime: bigint;
}

export function streamOps(chain: StreamChain) {
  const vault = (p: ProfileName) => chain.contract(p, "StreamVault");
  const mined = async (p: ProfileName, tx: TxRow): Promise<Mined> => {
    const block = await chain.runtime(p).client.getBlock({ blockNumber: tx.blockNumber! });
    return { tx, blockTime: block.timestamp };
  };
  const call = (
    p: ProfileName,
    from: Signer,
    intentKey: string,
    fn: "create" | "stop" | "withdraw",
    args: readonly unknown[],
  ) =>
    chain.send({
      profile: p,
      from,
      to: vault(p),
      // deno-lint-ignore no-explicit-any
      data: encodeFunctionData({ abi: StreamVault.abi, functionName: fn, args: args as any }),
      intentKey,
    });

  const ops = {
    vaultAddress: vault,

    /** The vault's view of a stream, at a block (default: the head). */
    async get(p: ProfileName, reference: string, blockNumber?: bigint): Promise<VaultStream> {
      const s = await chain.runtime(p).client.readContract({
        address: vault(p),
        abi: StreamVault.abi,
        functionName: "getStream",
        args: [streamId(reference)],
        blockNumber,
      });
      return {
        sender: s.sender,
        receiver: s.receiver,
        status: STATUS[s.status] ?? "None",
        rate: s.rate,
        deposit: s.deposit,
        withdrawn: s.withdrawn,
        startTime: BigInt(s.startTime),
        stopTime: BigInt(s.stopTime),
      };
    },

    /**
     * The chain's present: the head block, after mining one on a local node this service runs
     * (its clock moves only when a block is mined). On a remote chain, just the head.
     */
    async present(p: ProfileName): Promise<{ number: bigint; timestamp: bigint }> {
      const rt = chain.runtime(p);
      if (rt.node) {
        await rt.client.request(
          { method: "evm_mine", params: [] } as unknown as Parameters<
            typeof rt.client.request
          >[0],
        );
      }
      const block = await rt.client.getBlock();
      return { number: block.number, timestamp: block.timestamp };
    },

    /** What the mined transaction `txHash` did to the stream (its receipt's events). */
    async effects(p: ProfileName, reference: string, txHash: string): Promise<StreamEffects> {
      const receipt = await chain.runtime(p).client.getTransactionReceipt({ hash: txHash as Hex });
      const id = streamId(reference);
      const address = vault(p).toLowerCase();
      const events = parseEventLogs({
        abi: StreamVault.abi,
        logs: receipt.logs.filter((l) => l.address.toLowerCase() === address),
      }).filter((e) => "id" in e.args && e.args.id === id);
      const out: StreamEffects = { completed: false };
      for (const e of events) {
        if (e.eventName === "StreamWithdrawn") {
          out.withdrawn = { amount: e.args.amount, total: e.args.totalWithdrawn };
        } else if (e.eventName === "StreamStopped") {
          out.stopped = {
            paid: e.args.paidToReceiver,
            refunded: e.args.refundedToSender,
            total: e.args.totalStreamed,
            stopTime: e.args.stopTime,
          };
        } else if (e.eventName === "StreamCompleted") out.completed = true;
      }
      return out;
    },

    /** The stream and its accrual at the chain's present (`present`), read at one block. */
    async state(p: ProfileName, reference: string): Promise<VaultState> {
      const head = await ops.present(p);
      const s = await ops.get(p, reference, head.number);
      const accrued = s.status === "None" ? 0n : await chain.runtime(p).client.readContract({
        address: vault(p),
        abi: StreamVault.abi,
        functionName: "accruedAt",
        args: [streamId(reference), head.timestamp],
        blockNumber: head.number,
      });
      return { ...s, accrued, block: head.number, at: head.timestamp };
    },

    /** The contract's accrual at the head block, and that block's timestamp. */
    async accrued(p: ProfileName, reference: string): Promise<{ accrued: bigint; at: bigint }> {
      const client = chain.runtime(p).client;
      const block = await client.getBlock();
      const accrued = await client.readContract({
        address: vault(p),
        abi: StreamVault.abi,
        functionName: "accrued",
        args: [streamId(reference)],
        blockNumber: block.number,
      });
      return { accrued, at: block.timestamp };
    },

    /**
     * Approves the vault once per wallet (unlimited: the vault only pulls what `create` names,
     * from its caller), then locks the deposit. Both are intents keyed by the reference and
     * wallet, so a retry never locks twice.
     */
    async create(req: {
      profile: ProfileName;
      walletId: string;
      sender: `0x${string}`;
      reference: string;
      receiver: `0x${string}`;
      rate: bigint;
      deposit: bigint;
    }): Promise<Mined> {
      const p = req.profile;
      const allowance = await chain.runtime(p).client.readContract({
        address: chain.contract(p, "TestUSDC"),
        abi: TestUSDC.abi,
        functionName: "allowance",
        args: [req.sender, vault(p)],
      });
      if (allowance < req.deposit) {
        await chain.send({
          profile: p,
          from: { walletId: req.walletId },
          to: chain.contract(p, "TestUSDC"),
          data: encodeFunctionData({
            abi: TestUSDC.abi,
            functionName: "approve",
            args: [vault(p), maxUint256],
          }),
          intentKey: `stream-approve:${vault(p).toLowerCase()}:${req.walletId}`,
        });
      }
      const tx = await call(
        p,
        { walletId: req.walletId },
        `stream-create:${req.reference}`,
        "create",
        [
          streamId(req.reference),
          req.receiver,
          req.rate,
          req.deposit,
        ],
      );
      return await mined(p, tx);
    },

    /** Sent from `from`; the vault reverts (NotSender) unless it is the stream's sender. */
    async stop(p: ProfileName, reference: string, from: Signer, intentKey: string) {
      return await mined(p, await call(p, from, intentKey, "stop", [streamId(reference)]));
    },

    /** Pays the receiver its accrued remainder; any signer may send it. */
    async withdraw(p: ProfileName, reference: string, from: Signer, intentKey: string) {
      return await mined(p, await call(p, from, intentKey, "withdraw", [streamId(reference)]));
    },
  };
  return ops;
}
