/**
 * The database's live events (migration 0029): one LISTEN connection per process (per pool), not
 * per client, started on the first subscriber. A trigger announces every state change of a
 * payment, stream or payroll batch in the writing transaction, so a settlement recorded by a
 * worker or another web process reaches the streams open on this one.
 */
import type { Sql } from "./client.ts";

export const LIVE_CHANNEL = "live_events";

export type LiveKind = "payment" | "stream" | "payroll" | "escrow";

export interface LiveEvent {
  kind: LiveKind;
  merchantId: string;
  chainId: number;
  reference: string;
  status: string;
}

type Listener = (e: LiveEvent) => void;

export class LiveFeed {
  #listeners = new Set<Listener>();
  #resyncs = new Set<() => void>();
  #listened = false;
  #started: Promise<void> | undefined;
  #unlisten: (() => Promise<void>) | undefined;
  #stopped = false;

  constructor(private sql: Sql, private onError: (e: unknown) => void = () => {}) {}

  /**
   * Calls `fn` for every event until the returned function is called, and `resync` when the
   * LISTEN connection was lost and listens again (postgres.js reconnects it): events of the gap
   * are gone, so the subscriber should look again.
   */
  async subscribe(fn: Listener, resync?: () => void): Promise<() => void> {
    if (this.#stopped) throw new Error("live feed stopped");
    this.#listeners.add(fn);
    if (resync) this.#resyncs.add(resync);
    const off = () => {
      this.#listeners.delete(fn);
      if (resync) this.#resyncs.delete(resync);
    };
    try {
      await this.#start();
    } catch (e) {
      off();
      throw e;
    }
    return off;
  }

  get listeners(): number {
    return this.#listeners.size;
  }

  #start(): Promise<void> {
    this.#started ??= this.sql.listen(
      LIVE_CHANNEL,
      (payload) => this.#dispatch(payload),
      () => this.#onListen(),
    )
      .then((req) => {
        this.#unlisten = () => req.unlisten();
      })
      .catch((e) => {
        this.#started = undefined;
        throw e;
      });
    return this.#started;
  }

  /** Called on every LISTEN: the first, and each one after a reconnect. */
  #onListen() {
    if (!this.#listened) {
      this.#listened = true;
      return;
    }
    for (const fn of this.#resyncs) {
      try {
        fn();
      } catch (err) {
        this.onError(err);
      }
    }
  }

  #dispatch(payload: string) {
    const e = parseEvent(payload);
    if (!e) return;
    for (const fn of this.#listeners) {
      try {
        fn(e);
      } catch (err) {
        this.onError(err);
      }
    }
  }

  /** Stops listening (the process is stopping). */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#listeners.clear();
    this.#resyncs.clear();
    await this.#unlisten?.().catch(() => {});
  }
}

export function parseEvent(payload: string): LiveEvent | null {
  try {
    const o = JSON.parse(payload);
    if (
      !["payment", "stream", "payroll", "escrow"].includes(o.k) || typeof o.m !== "string" ||
      typeof o.c !== "number" || typeof o.r !== "string" || typeof o.s !== "string"
    ) return null;
    return { kind: o.k, merchantId: o.m, chainId: o.c, reference: o.r, status: o.s };
  } catch {
    return null;
  }
}
