/**
 * Server-sent event streams fed by the database's live events (src/db/live.ts). Per process: one
 * LISTEN connection, a bounded number of open streams per key (a merchant, a client address),
 * a heartbeat comment so proxies and browsers keep an idle stream, a bounded lifetime (the
 * browser reconnects), and `closeAll` at shutdown so no stream holds the HTTP server's drain.
 */
import type { Sql } from "../db/client.ts";
import { type LiveEvent, LiveFeed } from "../db/live.ts";
import type { Logger } from "../log.ts";

/** A comment line this often keeps an idle stream open through proxies. */
export const HEARTBEAT_MS = 15_000;
/** A stream ends after this long; the browser reconnects (and the page refreshes once). */
export const MAX_STREAM_MS = 15 * 60_000;
/** What the browser waits before reconnecting a dropped stream. */
export const RETRY_MS = 2_000;

export interface SseMessage {
  event: string;
  data: string;
}

export interface OpenOptions {
  /** Counted against `limit`: e.g. `merchant:<id>` or `ip:<address>`. */
  key: string;
  limit: number;
  /** The message an event gives this stream, or null (not this stream's). */
  select: (e: LiveEvent) => SseMessage | null;
  /**
   * Asked before a selected message is sent (its answer kept for RECHECK_MS): false ends the
   * stream instead (a session logged out, or switched to the other mode; the browser reconnects
   * and is answered for what the session is now).
   */
  stillAllowed?: () => Promise<boolean>;
}

/** How long a `stillAllowed` answer is trusted. */
export const RECHECK_MS = 1_000;

export type OpenResult = { ok: true; response: Response } | {
  ok: false;
  reason: "limit" | "closing";
};

interface OpenStream {
  key: string;
  close(): void;
}

const encoder = new TextEncoder();

export function frame(m: SseMessage): string {
  // A data value has no line breaks here (statuses, JSON); split anyway, as the format requires.
  const data = m.data.split(/\r\n|\r|\n/).map((l) => `data: ${l}`).join("\n");
  return `event: ${m.event}\n${data}\n\n`;
}

export class LiveStreams {
  readonly feed: LiveFeed;
  #open = new Set<OpenStream>();
  #perKey = new Map<string, number>();
  #closing = false;

  constructor(
    sql: Sql,
    private log?: Logger,
    private timing: { heartbeatMs?: number; maxStreamMs?: number } = {},
  ) {
    this.feed = new LiveFeed(sql, (e) => log?.warn("live event listener failed", { error: e }));
  }

  get size(): number {
    return this.#open.size;
  }

  /** Opens a stream (subscribed before the response is returned, so no later event is missed). */
  async open(opts: OpenOptions): Promise<OpenResult> {
    if (this.#closing) return { ok: false, reason: "closing" };
    const n = this.#perKey.get(opts.key) ?? 0;
    if (n >= opts.limit) return { ok: false, reason: "limit" };
    this.#perKey.set(opts.key, n + 1);

    let controller!: ReadableStreamDefaultController<Uint8Array>;
    let done = false;
    let unsubscribe: (() => void) | undefined;
    const timers: {
      heartbeat?: ReturnType<typeof setInterval>;
      lifetime?: ReturnType<typeof setTimeout>;
    } = {};
    const send = (text: string) => {
      if (done) return;
      try {
        controller.enqueue(encoder.encode(text));
      } catch {
        finish(false);
      }
    };
    const entry: OpenStream = { key: opts.key, close: () => finish(true) };
    let queue = Promise.resolve();
    let allowed = true;
    // The open request was just authorised.
    let checkedAt = Date.now();
    const finish = (closeBody: boolean) => {
      if (done) return;
      done = true;
      clearInterval(timers.heartbeat);
      clearTimeout(timers.lifetime);
      unsubscribe?.();
      this.#open.delete(entry);
      const left = (this.#perKey.get(opts.key) ?? 1) - 1;
      if (left > 0) this.#perKey.set(opts.key, left);
      else this.#perKey.delete(opts.key);
      if (closeBody) {
        try {
          controller.close();
        } catch { /* already closed by the client */ }
      }
    };
    const body = new ReadableStream<Uint8Array>({
      start: (c) => {
        controller = c;
      },
      // The client went away.
      cancel: () => finish(false),
    });
    this.#open.add(entry);
    try {
      unsubscribe = await this.feed.subscribe(
        (e) => {
          const m = opts.select(e);
          if (!m) return;
          if (!opts.stillAllowed) return send(frame(m));
          // In order, each after the check (usually the cached answer).
          queue = queue.then(async () => {
            if (done) return;
            if (Date.now() - checkedAt > RECHECK_MS) {
              allowed = await opts.stillAllowed!().catch(() => false);
              checkedAt = Date.now();
            }
            if (allowed) send(frame(m));
            else finish(true);
          });
        },
        // The feed lost events while it reconnected: the page looks again.
        () => send(frame({ event: "resync", data: "{}" })),
      );
    } catch (e) {
      finish(true);
      throw e;
    }
    if (this.#closing) {
      finish(true);
      return { ok: false, reason: "closing" };
    }
    send(`retry: ${RETRY_MS}\n: open\n\n`);
    timers.heartbeat = setInterval(
      () => send(": hb\n\n"),
      this.timing.heartbeatMs ?? HEARTBEAT_MS,
    );
    timers.lifetime = setTimeout(() => finish(true), this.timing.maxStreamMs ?? MAX_STREAM_MS);
    return {
      ok: true,
      response: new Response(body, {
        headers: {
          "content-type": "text/event-stream; charset=utf-8",
          "cache-control": "no-store",
          "x-accel-buffering": "no",
        },
      }),
    };
  }

  /** Ends every open stream and stops listening: the HTTP server can then drain. */
  async closeAll(): Promise<void> {
    this.#closing = true;
    const n = this.#open.size;
    for (const s of [...this.#open]) s.close();
    await this.feed.stop();
    if (n) this.log?.info("live streams closed", { streams: n });
  }
}

const bySql = new WeakMap<Sql, LiveStreams>();

/** This process's (this pool's) live streams. */
export function liveStreams(deps: { sql: Sql; log?: Logger }): LiveStreams {
  let s = bySql.get(deps.sql);
  if (!s) {
    s = new LiveStreams(deps.sql, deps.log);
    bySql.set(deps.sql, s);
  }
  return s;
}

/** The stop step: closes the streams of this pool, if any were ever opened. */
export async function closeLiveStreams(sql: Sql): Promise<void> {
  await bySql.get(sql)?.closeAll();
}
