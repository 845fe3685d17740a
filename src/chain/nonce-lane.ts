/**
 * One address's send queue inside a process. Callers push; one drain loop at a time takes what
 * has gathered (up to MAX_BATCH) and hands it to the sender's flush, which signs and broadcasts
 * the batch under the address's advisory lock. Requests that arrive while a batch is on its way
 * form the next batch, so a busy wallet pays the lock, the nonce read and the bookkeeping once
 * per batch instead of once per transaction.
 */
import type { Hex, LocalAccount } from "viem";
import type { TxRow } from "./transactions.repo.ts";
import type { TxRequest } from "./sender.ts";

export interface LaneItem {
  req: TxRequest;
  account: LocalAccount;
  value: bigint;
  data: Hex;
  gas: bigint;
  fees: { maxFeePerGas: bigint; maxPriorityFeePerGas: bigint };
}

export interface LaneEntry {
  item: LaneItem;
  resolve(row: TxRow): void;
  reject(e: unknown): void;
  /** Requests for the same intent in the same batch: they get the leader's answer. */
  followers: LaneEntry[];
}

export const MAX_BATCH = 100;

export class NonceLane {
  #queue: LaneEntry[] = [];
  #draining = false;

  /** `flush` answers every entry it was given, or returns the ones to try again first. */
  constructor(
    private readonly flush: (batch: LaneEntry[]) => Promise<LaneEntry[]>,
    private readonly onIdle: () => void,
  ) {}

  push(item: LaneItem): Promise<TxRow> {
    const { promise, resolve, reject } = Promise.withResolvers<TxRow>();
    const entry: LaneEntry = {
      item,
      followers: [],
      resolve: (row) => {
        resolve(row);
        for (const f of entry.followers) f.resolve(row);
      },
      reject: (e) => {
        reject(e);
        for (const f of entry.followers) f.reject(e);
      },
    };
    this.#queue.push(entry);
    if (!this.#draining) this.#drain();
    return promise;
  }

  async #drain() {
    this.#draining = true;
    try {
      while (this.#queue.length) {
        const batch = this.#queue.splice(0, MAX_BATCH);
        try {
          const again = await this.flush(batch);
          this.#queue.unshift(...again);
        } catch (e) {
          // Entries already answered ignore this; the rest learn what went wrong.
          for (const entry of batch) entry.reject(e);
        }
      }
    } finally {
      this.#draining = false;
      this.onIdle();
    }
  }
}
