/**
 * The sockets of our postgres.js pools (its `socket` option), for one defect of postgres.js
 * 3.4.9: a peer that accepts a connection and closes it before answering anything (a TCP proxy or
 * load balancer with no database behind it; Docker's port proxy while the container's PostgreSQL
 * is not listening yet) sends postgres.js into a loop. Its connection sees the close with the
 * query it was opened for still waiting, and connects again at once, with no pause and no error:
 * ~350 connections a second on one core, and the query (a request's, a role's start ping) never
 * settles while the peer does that, so a request hangs instead of answering 503.
 *
 * Each socket is made as postgres.js makes its own (a `net.Socket` connecting to the next host;
 * postgres.js writes its start-up message behind the connect and keeps its own connect timeout),
 * and its first messages are read beside postgres.js. A socket the peer closed before the session
 * was ready and without PostgreSQL's own error (closed with nothing said, or after bytes that are
 * not PostgreSQL's) starts or extends the pool's run of such closes. While a run lasts, the next
 * socket is made after a pause (25 ms doubling to 250 ms), so a query waits out a short cut as it
 * did, without the loop; once the run is older than the pool's connect timeout, the next socket is
 * a refused one. It fails with CONNECTION_CLOSED as a network error does, so postgres.js rejects
 * the query it connects for and closes the connection with its backoff, and the caller hears that
 * the database cannot be reached (src/db/wait.ts `databaseNotReady`: a 503, or a start that waits
 * and tries again). A refusal and a real try then take turns; a session that becomes ready ends
 * the run, as does a pool left idle for longer than the bound.
 */
import net from "node:net";
import { EventEmitter } from "node:events";

/** What postgres.js hands its `socket` option (its parsed options). */
export interface SocketTarget {
  host: string[];
  port: number[];
  path?: string | false;
  ssl?: unknown;
  /** Seconds (postgres.js's `connect_timeout`). */
  connect_timeout?: number;
}

/**
 * The pause before a socket made during a run of closes: 25 ms doubling to 250 ms. Short, so that
 * a cut is waited out as soon as it ends (a longer pause could skip the whole window in which a
 * flapping network answers); at most four connections a second for a connection in a long one.
 */
export function silentPauseMs(closes: number): number {
  return Math.min(25 * 2 ** Math.max(0, closes - 1), 250);
}

/** A new `socket` option for one pool: its state is the pool's. */
export function poolSockets(
  now: () => number = () => performance.now(),
): (o: SocketTarget) => Promise<net.Socket | RefusedSocket> {
  /** The pool's run of sockets closed before their session was ready: how many, first, last. */
  let closes = 0;
  let since = 0;
  let last = 0;
  /** Whether the socket made after the last close was refused (the next one is a real try). */
  let refusedLast = false;
  let next = 0;
  return async (o) => {
    const i = next % o.port.length;
    const host = o.host[i] ?? o.host[0];
    const port = o.port[i] ?? o.port[0];
    next = (i + 1) % o.port.length;
    const limitMs = (o.connect_timeout ?? 30) * 1000;
    // A run whose last close is older than the bound is over (the pool was idle since): the
    // database gets a real try again, at once.
    if (closes > 0 && now() - last >= limitMs) closes = 0;
    if (closes > 0) {
      if (!refusedLast && now() - since >= limitMs) {
        refusedLast = true;
        return new RefusedSocket(host, port, o.path || undefined);
      }
      refusedLast = false;
      await new Promise((r) => setTimeout(r, silentPauseMs(closes)));
    }
    const socket = o.path ? net.connect(o.path) : net.connect(port, host);
    // postgres.js names the host in its errors and in TLS's server name from these.
    Object.assign(socket, { host, port });
    const closedEarly = () => {
      last = now();
      if (closes++ === 0) since = last;
    };
    let ended = false;
    socket.once("end", () => ended = true);
    // Under TLS the bytes are not PostgreSQL's until postgres.js has wrapped the socket, and it
    // drops every listener of the plain one once the server answered its TLS request. So a close
    // before that answer counts (the proxy's case), and the answer itself ends the run: a
    // PostgreSQL server is there (a session's readiness is not seen).
    if (o.ssl && o.ssl !== "disable") {
      socket.once("data", () => closes = 0);
      socket.once("close", () => {
        if (ended && socket.bytesRead === 0) closedEarly();
      });
      return socket;
    }
    const start = new StartupReader();
    // Read beside postgres.js (it adds its own listener before any byte can arrive), until the
    // session is ready or the server said why not.
    const read = (chunk: Uint8Array) => {
      if (start.read(chunk) === "starting") return;
      socket.removeListener("data", read);
      if (start.state === "ready") closes = 0;
    };
    socket.on("data", read);
    socket.once("close", () => {
      if (ended && (start.state === "starting" || start.state === "garbled")) closedEarly();
    });
    return socket;
  };
}

/** The error a refused socket fails with: the code postgres.js gives a closed connection. */
export class ClosedBeforeAnswering extends Error {
  readonly code = "CONNECTION_CLOSED";
  readonly errno = "CONNECTION_CLOSED";
  readonly address: string;
  readonly port?: number;

  constructor(host: string, port: number, path?: string) {
    super(
      `the database at ${path ?? `${host}:${port}`} closed the connection before answering, ` +
        "again and again",
    );
    this.name = "ClosedBeforeAnswering";
    this.address = path ?? host;
    if (!path) this.port = port;
  }
}

/**
 * Follows the server's first messages on a connection: "ready" at its ReadyForQuery, "refused"
 * at an ErrorResponse (the server said why, and postgres.js fails the query with it), "garbled"
 * at bytes that are not PostgreSQL's protocol (a proxy's own answer), "starting" until then.
 */
export class StartupReader {
  state: "starting" | "ready" | "refused" | "garbled" = "starting";
  #buffered = new Uint8Array(0);

  read(chunk: Uint8Array): StartupReader["state"] {
    if (this.state !== "starting") return this.state;
    let buf = concat(this.#buffered, chunk);
    while (buf.length >= 5) {
      const type = buf[0];
      const length = ((buf[1] << 24) | (buf[2] << 16) | (buf[3] << 8) | buf[4]) >>> 0;
      // The start-up's messages are small; a length past this is not PostgreSQL speaking.
      if (length < 4 || length > 1 << 20) return this.state = "garbled";
      if (buf.length < 1 + length) break;
      if (type === 0x5a) return this.state = "ready"; // 'Z' ReadyForQuery
      if (type === 0x45) return this.state = "refused"; // 'E' ErrorResponse
      buf = buf.subarray(1 + length);
    }
    this.#buffered = buf.slice();
    return this.state;
  }
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  if (!a.length) return b;
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

/**
 * A socket that fails on the next turn of the event loop (after postgres.js has attached its
 * listeners and written its start-up message, which is dropped): `error`, then `close`.
 */
export class RefusedSocket extends EventEmitter {
  destroyed = false;
  readonly bytesRead = 0;
  readonly readyState = "closed";
  #timer: ReturnType<typeof setTimeout>;

  constructor(readonly host: string, readonly port: number, path?: string) {
    super();
    this.#timer = setTimeout(() => this.destroy(new ClosedBeforeAnswering(host, port, path)), 0);
  }

  write(_chunk: unknown, cb?: unknown): boolean {
    if (typeof cb === "function") queueMicrotask(() => cb());
    return true;
  }

  end(): this {
    return this.destroy();
  }

  destroy(error?: Error): this {
    if (this.destroyed) return this;
    this.destroyed = true;
    clearTimeout(this.#timer);
    if (error) this.emit("error", error);
    this.emit("close", !!error);
    return this;
  }

  setKeepAlive(): this {
    return this;
  }

  setNoDelay(): this {
    return this;
  }
}
