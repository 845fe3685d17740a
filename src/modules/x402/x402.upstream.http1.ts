/**
 * The upstream's HTTP/1.1 exchange on Deno's own sockets: a request written in one piece, a
 * response read into one buffer and parsed there (status line, headers, a body by length, by
 * chunks or to the end of the connection), and the connection kept for the next call. It
 * replaces `node:http`, whose compatibility layer cost the event loop ~200 µs per paid call
 * against ~75 here (docs/decisions.md, "The upstream's own HTTP/1.1 client on Deno's sockets").
 *
 * Connections are pooled per origin and policy, at most MAX_PER_POOL at once (more calls wait
 * their turn), idle ones closed once idle for IDLE_MS (by one sweeping timer). An idle
 * connection keeps one read waiting on it: if the upstream closes it meanwhile, the read says so
 * and the connection is dropped before anyone writes to it; otherwise that read becomes the
 * first read of the next response. A reused connection that still fails before the response's
 * first byte (the upstream closed it as the request went out) is retried once on a new
 * connection for GET and HEAD only: any other method may have reached the upstream, and is the
 * upstream's failure.
 */

/** What a call needs from the connection: where to, how to open one, what to send. */
export interface Http1Request {
  /** Pool key: origin and policy (a socket opened without the public guard is never reused). */
  pool: string;
  /**
   * Opens a new connection (the guarded lookup, TLS); throws what the call then answers.
   * `signal` is aborted at the call's deadline: attempts still connecting give up.
   */
  open: (signal: AbortSignal) => Promise<Deno.Conn>;
  method: string;
  /** The request head up to, not including, the blank line (no content-length: added here). */
  head: string;
  body?: Uint8Array;
  maxBodyBytes: number;
}

export type Http1Response =
  | { ok: true; status: number; contentType: string | null; body: Uint8Array }
  | { ok: false; status?: number; error: string };

/** Idle connections are closed after this long (below common servers' keep-alive timeouts). */
export const IDLE_MS = 2_000;
/** Connections open at once per pool; further calls wait for one to be released. */
export const MAX_PER_POOL = 256;
/** A response head larger than this is refused. */
const MAX_HEAD_BYTES = 64 * 1024;
const FIRST_BUFFER = 16 * 1024;

/** An upstream that broke the protocol, or closed early: the call's failure, never reused. */
class ProtocolError extends Error {}
/** The body passed the cap: the call's failure, with the upstream's status. */
class TooLarge extends Error {
  constructor(readonly status: number) {
    super("upstream body larger than 1 MiB");
  }
}

interface Link {
  conn: Deno.Conn;
  buf: Uint8Array;
  /** The read in flight into `buf` from offset 0, started while the link was idle. */
  pending: Promise<number | null> | null;
  idle: boolean;
  dead: boolean;
  /** When it was parked (Date.now()). */
  since: number;
}

/**
 * A pool's connections and its calls: `active` counts the calls holding a place (at most
 * MAX_PER_POOL; a call takes an idle link before it opens one, so the open connections never
 * exceed the places either); `waiting`, the calls queued for a place.
 */
interface Pool {
  idle: Link[];
  active: number;
  waiting: (() => void)[];
}

const pools = new Map<string, Pool>();
const encoder = new TextEncoder();
const latin1 = new TextDecoder("latin1");

function poolFor(key: string): Pool {
  let p = pools.get(key);
  if (!p) {
    p = { idle: [], active: 0, waiting: [] };
    pools.set(key, p);
  }
  return p;
}

/** A call's place given up: handed to the next waiter, or freed. */
function release(key: string, p: Pool): void {
  const next = p.waiting.shift();
  if (next) return next();
  p.active--;
  forget(key, p);
}

function forget(key: string, p: Pool): void {
  if (p.active === 0 && p.idle.length === 0 && pools.get(key) === p) pools.delete(key);
}

function close(link: Link): void {
  if (link.dead) return;
  link.dead = true;
  try {
    link.conn.close();
  } catch { /* already closed */ }
}

/** Drops an idle link (closed by the upstream, idle too long, or a service stopping). */
function retire(key: string, p: Pool, link: Link): void {
  const at = p.idle.indexOf(link);
  if (at < 0) return;
  p.idle.splice(at, 1);
  close(link);
  forget(key, p);
}

function park(key: string, p: Pool, link: Link): void {
  link.idle = true;
  link.pending = link.conn.read(link.buf);
  // Anything arriving on an idle connection (its close, or bytes nobody asked for) ends it.
  const end = () => link.idle && retire(key, p, link);
  link.pending.then(end, end);
  link.conn.unref();
  link.since = Date.now();
  p.idle.push(link);
  sweeper ??= startSweeper();
}

let sweeper: ReturnType<typeof setInterval> | null = null;

/**
 * One timer for every idle link, not one per call: every IDLE_MS / 2 it closes the links idle for
 * IDLE_MS or more (so each is closed 2–3 s after its last use), and stops when none is left.
 */
function startSweeper(): ReturnType<typeof setInterval> {
  const timer = setInterval(() => {
    const now = Date.now();
    let left = 0;
    for (const [key, p] of pools) {
      for (const link of [...p.idle]) {
        if (now - link.since >= IDLE_MS) retire(key, p, link);
      }
      left += p.idle.length;
    }
    if (left === 0) {
      clearInterval(timer);
      sweeper = null;
    }
  }, IDLE_MS / 2);
  Deno.unrefTimer(timer);
  return timer;
}

function take(p: Pool): Link | undefined {
  const link = p.idle.pop();
  if (!link) return undefined;
  link.idle = false;
  link.conn.ref();
  return link;
}

/** Closes every idle upstream connection (a service stopping; tests). Calls in flight go on. */
export function closeIdleUpstreams(): void {
  for (const [key, p] of pools) {
    for (const link of [...p.idle]) retire(key, p, link);
  }
  if (sweeper !== null) clearInterval(sweeper);
  sweeper = null;
}

/** How many idle connections the pools hold (tests). */
export function idleUpstreams(): number {
  let n = 0;
  for (const p of pools.values()) n += p.idle.length;
  return n;
}

/** One exchange; never throws: a failure is the answer's `error`. */
export async function exchange(req: Http1Request, timeoutMs: number): Promise<Http1Response> {
  const key = req.pool;
  const p = poolFor(key);
  const timeoutError = { ok: false as const, error: `timed out after ${timeoutMs} ms` };
  let current: Link | undefined;
  const expired = Promise.withResolvers<"expired">();
  let timedOut = false;
  const deadline = new AbortController();
  const timer = setTimeout(() => {
    timedOut = true;
    if (current) close(current);
    deadline.abort(new Error(`timed out after ${timeoutMs} ms`));
    expired.resolve("expired");
  }, timeoutMs);
  if (p.active < MAX_PER_POOL) p.active++;
  else {
    let handed = false;
    const turn = Promise.withResolvers<"turn">();
    const wake = () => {
      handed = true;
      turn.resolve("turn");
    };
    p.waiting.push(wake);
    if ((await Promise.race([turn.promise, expired.promise])) === "expired" && !handed) {
      p.waiting.splice(p.waiting.indexOf(wake), 1);
      return timeoutError;
    }
  }
  // From here this call holds a place, given up in `finally`.
  let keep = false;
  try {
    if (timedOut) return timeoutError;
    const bytes = requestBytes(req);
    for (let attempt = 0;; attempt++) {
      let link = take(p);
      const reused = link !== undefined;
      if (!link) {
        const opening = req.open(deadline.signal);
        const opened = await Promise.race([opening, expired.promise]);
        if (opened === "expired") {
          opening.then((c) => c.close(), () => {});
          return timeoutError;
        }
        link = {
          conn: opened,
          buf: new Uint8Array(FIRST_BUFFER),
          pending: null,
          idle: false,
          dead: false,
          since: 0,
        };
      }
      current = link;
      if (timedOut) {
        close(link);
        return timeoutError;
      }
      const sent = await send(link, bytes, req);
      if (timedOut) {
        close(link);
        return timeoutError;
      }
      if (sent.kind === "done") {
        keep = sent.reusable;
        if (!keep) close(link);
        return sent.response;
      }
      close(link);
      // Closed before the response began: a stale pooled connection, retried for GET and HEAD.
      if (reused && attempt === 0 && (req.method === "GET" || req.method === "HEAD")) continue;
      return { ok: false, error: sent.error };
    }
  } catch (e) {
    if (current) close(current);
    if (timedOut) return timeoutError;
    return { ok: false, error: message(e) };
  } finally {
    clearTimeout(timer);
    if (keep && current) park(key, p, current);
    release(key, p);
  }
}

function message(e: unknown): string {
  return (e instanceof Error ? e.message : String(e)).slice(0, 300);
}

function requestBytes(req: Http1Request): Uint8Array {
  const length = req.body ? `content-length: ${req.body.length}\r\n` : "";
  const head = encoder.encode(`${req.head}${length}\r\n`);
  if (!req.body?.length) return head;
  const out = new Uint8Array(head.length + req.body.length);
  out.set(head);
  out.set(req.body, head.length);
  return out;
}

type Sent =
  | { kind: "done"; response: Http1Response; reusable: boolean }
  /** The connection ended before a byte of the response: nothing was answered. */
  | { kind: "closed"; error: string };

async function writeAll(conn: Deno.Conn, bytes: Uint8Array): Promise<void> {
  let at = 0;
  while (at < bytes.length) at += await conn.write(bytes.subarray(at));
}

/**
 * Writes the request and reads the whole response on one link: "closed" when the connection
 * ended before the response's first byte, else the response or why it failed.
 */
async function send(link: Link, bytes: Uint8Array, req: Http1Request): Promise<Sent> {
  const reader = new Reader(link);
  try {
    await writeAll(link.conn, bytes);
    // An answer may already be in (read while idle) or still come: the first read decides.
    if (!(await reader.fill())) return { kind: "closed", error: "upstream closed the connection" };
  } catch (e) {
    return { kind: "closed", error: message(e) };
  }
  try {
    return await readResponse(reader, req);
  } catch (e) {
    const response: Http1Response = e instanceof TooLarge
      ? { ok: false, status: e.status, error: e.message }
      : { ok: false, error: message(e) };
    return { kind: "done", response, reusable: false };
  }
}

/** The link's buffer as a queue: bytes [start, end) are read and not yet consumed. */
class Reader {
  start = 0;
  end = 0;
  constructor(readonly link: Link) {}

  get bytes(): Uint8Array {
    return this.link.buf.subarray(this.start, this.end);
  }

  /** Reads more (making room first); false at the end of the connection. */
  async fill(): Promise<boolean> {
    const l = this.link;
    let n: number | null;
    if (l.pending) {
      n = await l.pending;
      l.pending = null;
    } else {
      if (this.end === l.buf.length) this.makeRoom();
      n = await l.conn.read(l.buf.subarray(this.end));
    }
    if (n === null) return false;
    this.end += n;
    return true;
  }

  private makeRoom(): void {
    const l = this.link;
    const live = this.end - this.start;
    if (live * 2 > l.buf.length) {
      const next = new Uint8Array(l.buf.length * 2);
      next.set(l.buf.subarray(this.start, this.end));
      l.buf = next;
    } else l.buf.copyWithin(0, this.start, this.end);
    this.start = 0;
    this.end = live;
  }

  consume(n: number): void {
    this.start += n;
    if (this.start === this.end) this.start = this.end = 0;
  }

  /** Index (from start) just past the first CRLF CRLF, or -1. */
  headEnd(): number {
    const b = this.link.buf;
    for (let i = this.start + 3; i < this.end; i++) {
      if (b[i] === 10 && b[i - 1] === 13 && b[i - 2] === 10 && b[i - 3] === 13) {
        return i + 1 - this.start;
      }
    }
    return -1;
  }

  /** Index (from start) of the first CRLF, or -1. */
  lineEnd(): number {
    const b = this.link.buf;
    for (let i = this.start + 1; i < this.end; i++) {
      if (b[i] === 10 && b[i - 1] === 13) return i - 1 - this.start;
    }
    return -1;
  }
}

interface Head {
  status: number;
  http10: boolean;
  headers: Map<string, string[]>;
}

function parseHead(text: string): Head {
  const lines = text.split("\r\n");
  const m = /^HTTP\/1\.([01]) ([1-9][0-9]{2})(?: [^\r\n]*)?$/.exec(lines[0]);
  if (!m) throw new ProtocolError("malformed upstream response: status line");
  const headers = new Map<string, string[]>();
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i];
    const colon = line.indexOf(":");
    if (colon <= 0 || /[\s]/.test(line.slice(0, colon))) {
      throw new ProtocolError("malformed upstream response: header line");
    }
    const name = line.slice(0, colon).toLowerCase();
    const value = line.slice(colon + 1).trim();
    const list = headers.get(name);
    if (list) list.push(value);
    else headers.set(name, [value]);
  }
  return { status: Number(m[2]), http10: m[1] === "0", headers };
}

async function readHead(reader: Reader): Promise<Head> {
  for (;;) {
    const end = reader.headEnd();
    if (end >= 0) {
      const head = parseHead(latin1.decode(reader.bytes.subarray(0, end - 4)));
      reader.consume(end);
      if (head.status >= 200) return head;
      if (head.status === 101) throw new ProtocolError("upstream switched protocols");
      continue; // 100 Continue, 103 Early Hints: the final response follows
    }
    if (reader.end - reader.start > MAX_HEAD_BYTES) {
      throw new ProtocolError("upstream response headers too large");
    }
    if (!(await reader.fill())) throw new ProtocolError("upstream closed the connection");
  }
}

function contentLength(values: string[] | undefined): number | null {
  if (!values) return null;
  const all = values.flatMap((v) => v.split(",")).map((v) => v.trim());
  if (all.some((v) => !/^[0-9]{1,15}$/.test(v)) || new Set(all).size !== 1) {
    throw new ProtocolError("malformed upstream response: content-length");
  }
  return Number(all[0]);
}

async function readResponse(reader: Reader, req: Http1Request): Promise<Sent> {
  const head = await readHead(reader);
  const { status, headers } = head;
  const connection = (headers.get("connection") ?? []).join(",").toLowerCase();
  let reusable = !head.http10 && !/(^|[\s,])close($|[\s,])/.test(connection);
  const codings = (headers.get("transfer-encoding") ?? []).join(",").toLowerCase().split(",")
    .map((c) => c.trim()).filter((c) => c !== "");
  const length = codings.length ? null : contentLength(headers.get("content-length"));
  // Both framings at once (RFC 9112 §6.3): the coding is read, and the connection not trusted
  // again, whatever the length said.
  if (codings.length && headers.has("content-length")) reusable = false;
  const tooLarge = () => new TooLarge(status);
  let body: Uint8Array;
  if (req.method === "HEAD" || status === 204 || status === 304) {
    body = new Uint8Array(0);
  } else if (codings.length) {
    if (codings.at(-1) !== "chunked") {
      reusable = false;
      body = await readToEnd(reader, req.maxBodyBytes, tooLarge);
    } else {
      if (codings.length > 1) throw new ProtocolError("upstream body in an unsupported coding");
      body = await readChunked(reader, req.maxBodyBytes, tooLarge);
    }
  } else if (length !== null) {
    if (length > req.maxBodyBytes) throw tooLarge();
    while (reader.end - reader.start < length) {
      if (!(await reader.fill())) throw new ProtocolError("upstream closed the connection");
    }
    body = reader.bytes.slice(0, length);
    reader.consume(length);
  } else {
    reusable = false;
    body = await readToEnd(reader, req.maxBodyBytes, tooLarge);
  }
  // Bytes after the response that nobody asked for: the connection is not trusted again.
  if (reader.end !== reader.start) reusable = false;
  const ct = headers.get("content-type");
  const response: Http1Response = status >= 200 && status <= 299
    ? { ok: true, status, contentType: ct ? ct.join(", ") : null, body }
    : { ok: false, status, error: `upstream answered ${status}` };
  return { kind: "done", response, reusable };
}

async function readToEnd(
  reader: Reader,
  max: number,
  tooLarge: () => TooLarge,
): Promise<Uint8Array> {
  while (await reader.fill()) {
    if (reader.end - reader.start > max) throw tooLarge();
  }
  const body = reader.bytes.slice();
  reader.consume(body.length);
  return body;
}

async function readChunked(
  reader: Reader,
  max: number,
  tooLarge: () => TooLarge,
): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  let total = 0;
  const line = async (): Promise<string> => {
    for (;;) {
      const end = reader.lineEnd();
      if (end >= 0) {
        const text = latin1.decode(reader.bytes.subarray(0, end));
        reader.consume(end + 2);
        return text;
      }
      if (reader.end - reader.start > MAX_HEAD_BYTES) {
        throw new ProtocolError("malformed upstream response: chunk line");
      }
      if (!(await reader.fill())) throw new ProtocolError("upstream closed the connection");
    }
  };
  for (;;) {
    const m = /^([0-9a-fA-F]{1,8})[ \t]*(?:;.*)?$/.exec(await line());
    if (!m) throw new ProtocolError("malformed upstream response: chunk size");
    const size = parseInt(m[1], 16);
    if (size === 0) break;
    total += size;
    if (total > max) throw tooLarge();
    while (reader.end - reader.start < size + 2) {
      if (!(await reader.fill())) throw new ProtocolError("upstream closed the connection");
    }
    const b = reader.bytes;
    if (b[size] !== 13 || b[size + 1] !== 10) {
      throw new ProtocolError("malformed upstream response: chunk end");
    }
    parts.push(b.slice(0, size));
    reader.consume(size + 2);
  }
  // Trailers, up to the blank line: read and dropped.
  while ((await line()) !== "");
  const body = new Uint8Array(total);
  let at = 0;
  for (const part of parts) {
    body.set(part, at);
    at += part.length;
  }
  return body;
}
