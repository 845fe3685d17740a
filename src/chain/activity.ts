/** An address's recent USDC history, read from the token's Transfer logs. */
import { parseAbiItem } from "viem";
import type { ChainRuntime } from "./runtime.ts";

export interface UsdcTransfer {
  direction: "in" | "out";
  from: `0x${string}`;
  to: `0x${string}`;
  amount: bigint;
  txHash: `0x${string}`;
  blockNumber: bigint;
  logIndex: number;
  timestamp?: Date;
}

/** USDC transfers in and out of an address, newest first, from recent blocks. */
export async function usdcTransfers(
  rt: ChainRuntime,
  address: `0x${string}`,
  opts: { limit?: number; blocks?: bigint } = {},
): Promise<UsdcTransfer[]> {
  const token = rt.contracts.TestUSDC;
  if (!token) return [];
  const head = await rt.client.getBlockNumber();
  const span = opts.blocks ?? 100_000n;
  const fromBlock = head > span ? head - span : 0n;
  const event = parseAbiItem(
    "event Transfer(address indexed from, address indexed to, uint256 value)",
  );
  const [outgoing, incoming] = await Promise.all([
    rt.client.getLogs({
      address: token,
      event,
      args: { from: address },
      fromBlock,
      toBlock: head,
    }),
    rt.client.getLogs({ address: token, event, args: { to: address }, fromBlock, toBlock: head }),
  ]);
  const seen = new Set<string>();
  const all: UsdcTransfer[] = [];
  for (const [dir, logs] of [["out", outgoing], ["in", incoming]] as const) {
    for (const l of logs) {
      const key = `${l.transactionHash}:${l.logIndex}:${dir}`;
      if (seen.has(key)) continue;
      seen.add(key);
      all.push({
        direction: dir,
        from: l.args.from!.toLowerCase() as `0x${string}`,
        to: l.args.to!.toLowerCase() as `0x${string}`,
        amount: l.args.value!,
        txHash: l.transactionHash!,
        blockNumber: l.blockNumber!,
        logIndex: l.logIndex!,
      });
    }
  }
  all.sort((a, b) =>
    a.blockNumber === b.blockNumber
      ? b.logIndex - a.logIndex
      : a.blockNumber < b.blockNumber
      ? 1
      : -1
  );
  const top = all.slice(0, opts.limit ?? 50);
  const blocks = new Map<bigint, Date>();
  for (const t of top) {
    if (!blocks.has(t.blockNumber)) {
      const b = await rt.client.getBlock({ blockNumber: t.blockNumber });
      blocks.set(t.blockNumber, new Date(Number(b.timestamp) * 1000));
    }
    t.timestamp = blocks.get(t.blockNumber);
  }
  return top;
}
