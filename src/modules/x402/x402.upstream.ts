/**
 * One call to a listing's upstream API, through the same outbound-target guard as webhook
 * deliveries: under the `public` policy (always in production) only https URLs whose every
 * address is public, resolved and checked when the connection is opened, which then goes to the
 * address checked (no second lookup to rebind); redirects are not followed (a 3xx is the
 * upstream's answer, a failure); a hard timeout; at most 1 MiB read. Header names and values are
 * checked before anything is sent (no CR, LF or NUL). Connections are kept alive and reused (a
 * new TCP connection, or TLS session, per paid call cost more than the rest of the call), by
 * x402.upstream.http1.ts; one pool per origin and policy, so a socket opened without the public
 * guard is never reused under it.
 */
import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import {
  guardedLookup,
  isPublicAddress,
  literalAddress,
  type TargetPolicy,
  TargetRefused,
} from "../webhooks/webhooks.targets.ts";
import { DomainError } from "../../errors.ts";
import { exchange } from "./x402.upstream.http1.ts";

export const UPSTREAM_MAX_BYTES = 1_048_576;

export type UpstreamResult =
  | { ok: true; status: number; contentType: string | null; body: Uint8Array }
  | { ok: false; status?: number; refused?: boolean; error: string };

/**
 * The refusal for an upstream call that failed (nothing is charged): the upstream's status
 * (`Upstream API returned 503`), or why it was not reached.
 */
export function upstreamRefusal(up: Extract<UpstreamResult, { ok: false }>): DomainError {
  // A success status whose answer failed (a body over the cap) is not "returned 200".
  return up.status !== undefined && (up.status < 200 || up.status > 299)
    ? new DomainError("x402_upstream_failed", { upstreamStatus: up.status })
    : new DomainError("x402_upstream_unreachable", { hint: up.error });
}

export function callUpstream(
  url: URL,
  req: { method: string; body?: string; headers?: Record<string, string> },
  opts: {
    timeoutMs: number;
    policy: TargetPolicy;
    /** Roots trusted besides the system's, for https upstreams (tests: a local certificate). */
    caCerts?: string[];
  },
): Promise<UpstreamResult> {
  if (opts.policy === "public") {
    if (url.protocol !== "https:") {
      return Promise.resolve({ ok: false, refused: true, error: "refused: not https" });
    }
    const literal = literalAddress(url);
    if (literal && !isPublicAddress(literal)) {
      return Promise.resolve({
        ok: false,
        refused: true,
        error: `refused: non-public address ${literal}`,
      });
    }
  }
  const https = url.protocol === "https:";
  let head = `${req.method} ${url.pathname}${url.search} HTTP/1.1\r\nhost: ${url.host}\r\n`;
  const headers: Record<string, string> = { accept: "application/json, */*;q=0.5", ...req.headers };
  if (req.body !== undefined) headers["content-type"] ??= "application/json";
  for (const [name, value] of Object.entries(headers)) {
    if (!TOKEN.test(name) || !FIELD_VALUE.test(value) || name.toLowerCase() === "host") {
      return Promise.resolve({
        ok: false,
        error: `invalid request header ${JSON.stringify(name)}`,
      });
    }
    head += `${name}: ${value}\r\n`;
  }
  let refused: Error | undefined;
  const open = async (signal: AbortSignal): Promise<Deno.Conn> => {
    const host = url.hostname.replace(/^\[(.*)\]$/, "$1");
    try {
      const port = Number(url.port || (https ? 443 : 80));
      const tcp = await connectFirst(await addressesOf(host, opts.policy), port, { signal });
      if (!https) return tcp;
      return await Deno.startTls(tcp, {
        hostname: host,
        alpnProtocols: ["http/1.1"],
        ...(opts.caCerts ? { caCerts: opts.caCerts } : {}),
      });
    } catch (e) {
      if (e instanceof TargetRefused || (e as { code?: string }).code === "ETARGETREFUSED") {
        refused = e as Error;
      }
      throw e;
    }
  };
  return exchange({
    pool: `${url.protocol}//${url.host} ${opts.policy}${opts.caCerts ? " own roots" : ""}`,
    open,
    method: req.method,
    head,
    body: req.body === undefined ? undefined : new TextEncoder().encode(req.body),
    maxBodyBytes: UPSTREAM_MAX_BYTES,
  }, opts.timeoutMs).then((r): UpstreamResult =>
    refused ? { ok: false, refused: true, error: `refused: ${refused.message}` } : r
  );
}

/** An RFC 9110 header name, and a field value without CR, LF or NUL. */
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const FIELD_VALUE = /^[^\r\n\0]*$/;

/**
 * Every address of the hostname, in the resolver's order (the system's, /etc/hosts included): an
 * address literal as it is; under the `public` policy only when every address is public
 * (guardedLookup, the webhooks' rule), else TargetRefused.
 */
function addressesOf(hostname: string, policy: TargetPolicy): Promise<string[]> {
  if (literalAddress(new URL(`http://${hostname.includes(":") ? `[${hostname}]` : hostname}`))) {
    return Promise.resolve([hostname]);
  }
  return new Promise((resolve, reject) => {
    const done = (e: Error | null, list: string | LookupAddress[]) =>
      e ? reject(e) : resolve((list as LookupAddress[]).map((a) => a.address));
    if (policy === "public") guardedLookup(hostname, { all: true }, done);
    else dnsLookup(hostname, { all: true, family: 0 }, done);
  });
}

/**
 * How long an attempt to one address may go unanswered before the next address is tried beside
 * it (RFC 8305's "Connection Attempt Delay", its recommended 250 ms; also Deno's and Node's).
 */
export const ATTEMPT_DELAY_MS = 250;

/** One connection attempt to one address; `signal` aborts it. */
export type ConnectAttempt = (
  o: { hostname: string; port: number; signal: AbortSignal },
) => Promise<Deno.TcpConn>;

const connectTcp: ConnectAttempt = (o) => Deno.connect({ ...o, autoSelectFamily: false });

/**
 * A TCP connection to one of the addresses, raced as RFC 8305 ("Happy Eyeballs") races them:
 * the addresses in the resolver's order with the families interleaved, one attempt started, and
 * the next started when it fails or when ATTEMPT_DELAY_MS pass without an answer; the first to
 * connect wins and every other attempt is aborted (a later winner's connection is closed). So an
 * address that drops connection attempts (a broken IPv6 route, a firewall) costs a call 250 ms,
 * not its whole deadline, and a name that resolves to ::1 while the upstream listens on
 * 127.0.0.1 only still connects. When every attempt fails, the last error; `signal` (the call's
 * deadline) aborts them all.
 */
export function connectFirst(
  addresses: string[],
  port: number,
  opts: { signal?: AbortSignal; connect?: ConnectAttempt; attemptDelayMs?: number } = {},
): Promise<Deno.TcpConn> {
  const { promise, resolve, reject } = Promise.withResolvers<Deno.TcpConn>();
  const order = interleaveFamilies(addresses);
  const connect = opts.connect ?? connectTcp;
  const delay = opts.attemptDelayMs ?? ATTEMPT_DELAY_MS;
  const attempts = new Set<AbortController>();
  let next = 0;
  let done = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const finish = () => {
    done = true;
    clearTimeout(timer);
    opts.signal?.removeEventListener("abort", aborted);
    for (const a of attempts) a.abort();
    attempts.clear();
  };
  const aborted = () => {
    if (done) return;
    finish();
    reject(opts.signal?.reason ?? new Error("connect aborted"));
  };
  const start = () => {
    clearTimeout(timer);
    if (done || next >= order.length) return;
    const hostname = order[next++];
    const attempt = new AbortController();
    attempts.add(attempt);
    connect({ hostname, port, signal: attempt.signal }).then((conn) => {
      attempts.delete(attempt);
      if (done) return conn.close();
      finish();
      conn.setNoDelay(true);
      resolve(conn);
    }, (e) => {
      attempts.delete(attempt);
      if (done) return;
      if (next < order.length) return start();
      if (attempts.size === 0) {
        finish();
        reject(e);
      }
    });
    if (next < order.length) timer = setTimeout(start, delay);
  };
  if (!order.length) reject(new Error("no address to connect to"));
  else if (opts.signal?.aborted) reject(opts.signal.reason ?? new Error("connect aborted"));
  else {
    opts.signal?.addEventListener("abort", aborted, { once: true });
    start();
  }
  return promise;
}

/**
 * The addresses with their families interleaved (RFC 8305 §4): the first address's family first,
 * then the other's, and so on, each family in the resolver's order.
 */
export function interleaveFamilies(addresses: string[]): string[] {
  const v6 = addresses.filter((a) => a.includes(":"));
  const v4 = addresses.filter((a) => !a.includes(":"));
  const [first, second] = addresses[0]?.includes(":") ? [v6, v4] : [v4, v6];
  const out: string[] = [];
  for (let i = 0; i < Math.max(first.length, second.length); i++) {
    if (i < first.length) out.push(first[i]);
    if (i < second.length) out.push(second[i]);
  }
  return out;
}

/** The upstream body as the response's `data`: parsed JSON when it is JSON, else the text. */
export function upstreamData(r: { contentType: string | null; body: Uint8Array }): unknown {
  const text = new TextDecoder().decode(r.body);
  if (/\bjson\b/i.test(r.contentType ?? "") || /^\s*[[{]/.test(text)) {
    try {
      return JSON.parse(text);
    } catch { /* not JSON after all */ }
  }
  return text;
}
