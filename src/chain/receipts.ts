/**
 * One receipt watcher per chain: every waiter of the sender registers its transaction hash here,
 * and a single loop follows the chain's new blocks (`eth_blockNumber` every poll, then one
 * `eth_getBlockReceipts` per new block) and wakes every waiter whose transaction is in them. The
 * number of receipt calls grows with blocks, not with waiters: a thousand calls sharing one
 * settlement transaction cost one block's receipts, not a thousand polls.
 *
 * A waiter may register after its transaction was mined (an automining node mines on broadcast):
 * the receipts of the blocks scanned lately are kept (bounded), and blocks mined while nobody
 * waited are scanned on resumption from where the loop stopped. Only when there is no such history
 * (the first waiter of the process, or a gap longer than MAX_SCAN blocks) are the new waiters'
 * receipts asked for by hash, once, in one request. A node without `eth_getBlockReceipts` is
 * asked by hash for the waiting transactions once per new block instead.
 */
import type { PublicClient, RpcLog } from "viem";
import type { Logger } from "../log.ts";

export interface WatchedReceipt {
  status: "success" | "reverted";
  blockNumber: bigint;
  gasUsed: bigint;
  contractAddress: string | null;
  /** The receipt's logs, for the waiters woken by it (kept for the latest RECENT_LOGS only). */
  logs?: ReceiptLog[];
}

/** A log as the node's JSON-RPC answers it. */
export type ReceiptLog = RpcLog;

interface RpcReceipt {
  transactionHash: string;
  status: string;
  blockNumber: string;
  gasUsed: string;
  contractAddress?: string | null;
  logs?: ReceiptLog[];
}

/** Blocks scanned on resumption before falling back to asking by hash. */
const MAX_SCAN = 256n;
/** Clock skew allowed between the database (createdAt) and this process. */
const CLOCK_MARGIN_MS = 5_000;
/** Receipts kept from scanned blocks, for waiters that register after their block was seen. */
const RECENT = 20_000;
/**
 * Of those, the latest keep their logs too: a waiter that registers just after the watcher read
 * its block (a loaded process, between broadcast and wait) still gets its logs without asking.
 */
const RECENT_LOGS = 2_000;

interface Entry {
  done: PromiseWithResolvers<WatchedReceipt>;
  refs: number;
  /** Possibly mined before the scanned history began: asked for by hash on the next pass. */
  old: boolean;
}

export interface Watch {
  /** The receipt, or null when `ms` passed first. */
  next(ms: number): Promise<WatchedReceipt | null>;
  release(): void;
}

export class ReceiptWatcher {
  #waiting = new Map<string, Entry>();
  #recent = new Map<string, WatchedReceipt>();
  #recentLogs = new Map<string, ReceiptLog[]>();
  /** The last block whose receipts were taken. */
  #cursor: bigint | null = null;
  #running = false;
  #blockReceipts = true;
  #wake: (() => void) | null = null;
  /** When the scanned history began (ms): transactions created before it are asked by hash. */
  #historySince = Infinity;

  constructor(
    readonly client: PublicClient,
    readonly pollMs: number,
    readonly log: Logger,
  ) {}

  /**
   * `since`: when the transaction was recorded: `local` by this process's clock (signed here), or
   * by the database's; one possibly older than the scanned history is asked for by hash, once.
   */
  watch(txHash: string, since: { local: number } | { db: Date }): Watch {
    const hash = txHash.toLowerCase();
    let e = this.#waiting.get(hash);
    if (!e) {
      const old = "local" in since
        ? since.local < this.#historySince
        : since.db.getTime() < this.#historySince + CLOCK_MARGIN_MS;
      e = { done: Promise.withResolvers(), refs: 0, old };
      e.done.promise.catch(() => {});
      this.#waiting.set(hash, e);
      const known = this.#recent.get(hash);
      if (known) {
        const logs = this.#recentLogs.get(hash);
        this.#resolve(hash, logs ? { ...known, logs } : known);
      }
    }
    e.refs++;
    const entry = e;
    if (!this.#running && this.#waiting.size) void this.#loop();
    let released = false;
    return {
      next: async (ms) => {
        let timer: ReturnType<typeof setTimeout> | undefined;
        try {
          return await Promise.race([
            entry.done.promise,
            new Promise<null>((r) => timer = setTimeout(() => r(null), Math.max(0, ms))),
          ]);
        } finally {
          clearTimeout(timer);
        }
      },
      release: () => {
        if (released) return;
        released = true;
        if (--entry.refs === 0 && this.#waiting.get(hash) === entry) this.#waiting.delete(hash);
        if (!this.#waiting.size) this.#wake?.();
      },
    };
  }

  /**
   * Asks for a pass now rather than at the next poll: for a transaction just accepted by a node
   * that mines on arrival (anvil), whose receipt is already there. A sleeping loop wakes; a pass
   * in progress (which may have read the head before that block) is followed by another at once.
   */
  poke(): void {
    if (this.#wake) this.#wake();
    else if (this.#running) this.#poked = true;
  }

  /** A poke came during a pass: the next pass follows it at once. */
  #poked = false;

  /**
   * A receipt the caller already holds, as the node answered it (eth_sendRawTransactionSync's
   * answer): kept, and given to its waiter, as a receipt found by the loop would be. Anything
   * not shaped as a receipt is ignored (the loop finds the real one).
   */
  deliver(txHash: string, receipt: unknown): void {
    const r = receipt as Partial<RpcReceipt> | null;
    if (
      !r || typeof r !== "object" || typeof r.status !== "string" ||
      typeof r.blockNumber !== "string" || typeof r.gasUsed !== "string" ||
      typeof r.transactionHash !== "string" ||
      r.transactionHash.toLowerCase() !== txHash.toLowerCase()
    ) return;
    this.#remember(txHash.toLowerCase(), parse(r as RpcReceipt));
  }

  /** Hashes to ask for by hash on the next lookup (`lookup`), and whether one is in flight. */
  #lookups = new Set<string>();
  #lookingUp = false;

  /**
   * Asks for a transaction's receipt by hash now: for one just accepted by a node that mines on
   * arrival (anvil), whose receipt is there (or nearly) by the time the node answers. One
   * request instead of a pass (the head, then its block's receipts). Lookups made while one is
   * in flight go together in the next; a receipt not there yet is left to the loop, poked.
   */
  lookup(txHash: string): void {
    this.#lookups.add(txHash.toLowerCase());
    if (this.#lookingUp) return;
    this.#lookingUp = true;
    void (async () => {
      try {
        while (this.#lookups.size) {
          const hashes = [...this.#lookups].filter((h) => this.#waiting.has(h));
          this.#lookups.clear();
          try {
            await this.#byHash(hashes);
          } catch {
            // The loop asks again in its own way.
          }
          if (hashes.some((h) => this.#waiting.has(h))) this.poke();
        }
      } finally {
        this.#lookingUp = false;
      }
    })();
  }

  #resolve(hash: string, r: WatchedReceipt) {
    const e = this.#waiting.get(hash);
    if (!e) return;
    this.#waiting.delete(hash);
    e.done.resolve(r);
  }

  #remember(hash: string, r: WatchedReceipt) {
    this.#recent.set(hash, { ...r, logs: undefined });
    if (this.#recent.size > RECENT) {
      this.#recent.delete(this.#recent.keys().next().value!);
    }
    if (r.logs) {
      this.#recentLogs.set(hash, r.logs);
      if (this.#recentLogs.size > RECENT_LOGS) {
        this.#recentLogs.delete(this.#recentLogs.keys().next().value!);
      }
    }
    this.#resolve(hash, r);
  }

  #failures = 0;

  async #loop() {
    this.#running = true;
    try {
      while (this.#waiting.size) {
        let failures = 0;
        try {
          await this.#pass();
          this.#failures = 0;
        } catch (e) {
          failures = ++this.#failures;
          // A node that is down fails every pass: said on the first failure and then at 2, 4,
          // 8, ... in a row, and polled less often (up to every 2 s) until it answers again.
          if ((failures & (failures - 1)) === 0) {
            this.log.warn("receipt watcher pass failed", {
              error: String(e).slice(0, 200),
              failuresInARow: failures,
            });
          }
        }
        if (!this.#waiting.size) break;
        if (this.#poked && !failures) {
          this.#poked = false;
          continue;
        }
        const wait = failures
          ? Math.min(this.pollMs * 2 ** Math.min(failures, 10), 2_000)
          : this.pollMs;
        await new Promise<void>((r) => {
          const t = setTimeout(r, wait);
          this.#wake = () => {
            clearTimeout(t);
            r();
          };
        });
        this.#wake = null;
      }
    } finally {
      this.#running = false;
    }
    // A waiter that came between the last check and the flag's reset.
    if (this.#waiting.size) void this.#loop();
  }

  async #pass() {
    const latest = await this.client.getBlockNumber({ cacheTime: 0 });
    if (this.#cursor === null || latest - this.#cursor > MAX_SCAN) {
      // No history that covers them: the waiters present are asked for once, by hash; blocks
      // after `latest` are followed from here on.
      // Only the waiters asked for lose their flag: one that registers during the request may
      // be mined at or below `latest` and must be asked for by hash on the next pass.
      this.#historySince = Date.now();
      const asked = [...this.#waiting.keys()];
      await this.#byHash(asked);
      for (const h of asked) {
        const e = this.#waiting.get(h);
        if (e) e.old = false;
      }
      this.#cursor = latest;
      return;
    }
    // Transactions older than the history (a recovery's wait on an old row): once, by hash.
    const old = [...this.#waiting].filter(([, e]) => e.old).map(([h]) => h);
    for (const h of old) this.#waiting.get(h)!.old = false;
    await this.#byHash(old);
    if (latest <= this.#cursor) return;
    const from = this.#cursor + 1n;
    for (let b = from; b <= latest; b += 16n) {
      const blocks: bigint[] = [];
      for (let n = b; n <= latest && n < b + 16n; n++) blocks.push(n);
      if (this.#blockReceipts) {
        try {
          const all = await Promise.all(blocks.map((n) => this.#blockReceiptsOf(n)));
          // A block the node named but cannot give yet (a node behind a balancer, or one still
          // writing it) is read again on the next pass: the cursor stops before it.
          const gap = all.findIndex((list) => list === null);
          for (const list of gap < 0 ? all : all.slice(0, gap)) {
            for (const r of list!) this.#remember(r.transactionHash.toLowerCase(), parse(r));
          }
          if (gap >= 0) {
            if (gap > 0) this.#cursor = blocks[gap - 1];
            return;
          }
        } catch (e) {
          if (!/not (found|supported|available)|does not exist|unknown method/i.test(String(e))) {
            throw e;
          }
          this.log.info("no eth_getBlockReceipts on this node; asking by hash per block");
          this.#blockReceipts = false;
        }
      }
      if (!this.#blockReceipts) await this.#byHash([...this.#waiting.keys()]);
      this.#cursor = blocks[blocks.length - 1];
    }
  }

  async #blockReceiptsOf(n: bigint): Promise<RpcReceipt[] | null> {
    return await this.client.request({
      method: "eth_getBlockReceipts",
      params: [`0x${n.toString(16)}`],
      // deno-lint-ignore no-explicit-any
    } as any) as RpcReceipt[] | null;
  }

  /** The receipts of these transactions, asked for by hash. */
  async #byHash(hashes: string[]) {
    await Promise.all(hashes.map(async (h) => {
      const r = await this.client.request({
        method: "eth_getTransactionReceipt",
        params: [h as `0x${string}`],
      }) as unknown as RpcReceipt | null;
      if (r) this.#remember(h, parse(r));
    }));
  }
}

function parse(r: RpcReceipt): WatchedReceipt {
  return {
    status: r.status === "0x1" ? "success" : "reverted",
    blockNumber: BigInt(r.blockNumber),
    gasUsed: BigInt(r.gasUsed),
    contractAddress: r.contractAddress ?? null,
    logs: r.logs,
  };
}
