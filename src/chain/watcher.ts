/**
 * The log watcher: reads our contracts' logs past each chain's confirmation depth and hands each
 * log to its handlers exactly once, even across restarts and with several processes.
 *
 * One batch of blocks is one database transaction: a per-chain transaction-level advisory lock
 * (one process reads a chain at a time), the cursor, a row in chain_log_receipts per (handler,
 * log), the handlers' own writes, and the cursor's advance all commit together or not at all.
 * A crash mid-batch leaves nothing behind and the batch is read again; the receipt rows make a
 * re-read (a lost cursor, a second process that read the same range) a no-op.
 */
import { type Abi, decodeEventLog, type Log, toEventSelector } from "viem";
import type { Sql, Tx } from "../db/client.ts";
import type { Logger } from "../log.ts";
import type { ChainRuntime } from "./runtime.ts";
import type { ContractName, ProfileName } from "./profiles.ts";
import * as repo from "./watcher.repo.ts";

export interface ChainEvent {
  eventName: string;
  args: Record<string, unknown>;
  address: `0x${string}`;
  blockNumber: bigint;
  transactionHash: `0x${string}`;
  logIndex: number;
}

export interface LogHandlerContext {
  profile: ProfileName;
  chainId: number;
}

export interface LogHandler {
  /** Stable identifier: part of the exactly-once key. */
  name: string;
  contract: ContractName;
  abi: Abi;
  eventName: string;
  /** Runs inside the batch's database transaction; throw to retry the batch. */
  handle(tx: Tx, event: ChainEvent, ctx: LogHandlerContext): Promise<void>;
}

export interface WatcherOptions {
  sql: Sql;
  log: Logger;
  runtimes: ChainRuntime[];
  pollIntervalMs: number;
  /** Blocks per batch. */
  batchSize?: number;
}

const LOCK_NAMESPACE = 5043;
export const CURSOR = "logs";

export class LogWatcher {
  #handlers: LogHandler[] = [];
  #timers = new Map<number, ReturnType<typeof setTimeout>>();
  #running = new Map<number, Promise<unknown>>();
  #stopped = true;

  constructor(readonly opts: WatcherOptions) {}

  register(handler: LogHandler): void {
    if (this.#handlers.some((h) => h.name === handler.name)) {
      throw new Error(`log handler ${handler.name} registered twice`);
    }
    this.#handlers.push(handler);
  }

  start(): void {
    this.#stopped = false;
    for (const rt of this.opts.runtimes) this.#schedule(rt, 0);
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    for (const t of this.#timers.values()) clearTimeout(t);
    this.#timers.clear();
    await Promise.allSettled([...this.#running.values()]);
  }

  /** Ask for an immediate read of a chain (e.g. after our own transaction confirmed). */
  nudge(profile: ProfileName): void {
    const rt = this.opts.runtimes.find((r) => r.profile.name === profile);
    if (!rt || this.#stopped || this.#running.has(rt.chainId)) return;
    clearTimeout(this.#timers.get(rt.chainId));
    this.#schedule(rt, 0);
  }

  #schedule(rt: ChainRuntime, delay: number) {
    this.#timers.set(
      rt.chainId,
      setTimeout(async () => {
        if (this.#stopped) return;
        let more = false;
        const run = this.pollOnce(rt).then(
          (r) => (more = r.more),
          (e) =>
            this.opts.log.error("log watcher batch failed", { chain: rt.profile.name, error: e }),
        );
        this.#running.set(rt.chainId, run);
        await run;
        this.#running.delete(rt.chainId);
        if (!this.#stopped) this.#schedule(rt, more ? 0 : this.opts.pollIntervalMs);
      }, delay),
    );
  }

  /** Reads and handles one batch. Returns what it did; `more` when blocks remain behind. */
  async pollOnce(
    rt: ChainRuntime,
  ): Promise<{ from?: bigint; to?: bigint; handled: number; more: boolean }> {
    const head = await rt.client.getBlockNumber();
    const safe = head - BigInt(rt.profile.confirmations);
    if (safe < 0n) return { handled: 0, more: false };
    const handlers = this.#handlers.filter((h) => rt.contracts[h.contract]);
    const batch = BigInt(this.opts.batchSize ?? 500);

    return await this.opts.sql.begin(async (tx) => {
      if (!await repo.tryLockChain(tx, LOCK_NAMESPACE, rt.chainId)) {
        return { handled: 0, more: false };
      }
      const cur = await repo.readCursor(tx, rt.chainId, CURSOR);
      const from = cur !== null ? cur + 1n : rt.startBlock;
      if (from > safe) return { handled: 0, more: false };
      const to = from + batch - 1n < safe ? from + batch - 1n : safe;

      let handled = 0;
      if (handlers.length) {
        const addresses = [...new Set(handlers.map((h) => rt.contracts[h.contract]!))];
        const logs = await rt.client.getLogs({ address: addresses, fromBlock: from, toBlock: to });
        logs.sort((a, b) =>
          a.blockNumber === b.blockNumber
            ? a.logIndex! - b.logIndex!
            : a.blockNumber! < b.blockNumber!
            ? -1
            : 1
        );
        for (const log of logs) handled += await this.#dispatch(tx, rt, handlers, log);
      }
      await repo.saveCursor(tx, rt.chainId, CURSOR, to);
      return { from, to, handled, more: to < safe };
    });
  }

  async #dispatch(tx: Tx, rt: ChainRuntime, handlers: LogHandler[], log: Log): Promise<number> {
    let handled = 0;
    for (const h of handlers) {
      if (log.address.toLowerCase() !== rt.contracts[h.contract]!.toLowerCase()) continue;
      const event = decode(h, log);
      if (!event) continue;
      const first = await repo.recordReceipt(tx, {
        chainId: rt.chainId,
        handler: h.name,
        txHash: event.transactionHash,
        logIndex: event.logIndex,
        blockNumber: event.blockNumber,
      });
      if (!first) continue;
      await h.handle(tx, event, { profile: rt.profile.name, chainId: rt.chainId });
      handled++;
    }
    return handled;
  }

  async cursor(rt: ChainRuntime): Promise<bigint | null> {
    return await repo.readCursor(this.opts.sql, rt.chainId, CURSOR);
  }
}

const selectorCache = new WeakMap<LogHandler, string>();

function decode(h: LogHandler, log: Log): ChainEvent | null {
  let selector = selectorCache.get(h);
  if (!selector) {
    const item = h.abi.find((x) => x.type === "event" && x.name === h.eventName);
    if (!item || item.type !== "event") {
      throw new Error(`${h.name}: no event ${h.eventName} in abi`);
    }
    selector = toEventSelector(item);
    selectorCache.set(h, selector);
  }
  if (log.topics[0] !== selector) return null;
  const decoded = decodeEventLog({ abi: h.abi, data: log.data, topics: log.topics });
  return {
    eventName: String(decoded.eventName),
    args: decoded.args as unknown as Record<string, unknown>,
    address: log.address,
    blockNumber: log.blockNumber!,
    transactionHash: log.transactionHash!,
    logIndex: log.logIndex!,
  };
}
