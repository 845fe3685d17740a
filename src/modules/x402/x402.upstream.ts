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
  return up.status !== undefined
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
  const open = async (): Promise<Deno.Conn> => {
    const host = url.hostname.replace(/^\[(.*)\]$/, "$1");
    try {
      const port = Number(url.port || (https ? 443 : 80));
      const tcp = await connectFirst(await addressesOf(host, opts.policy), port);
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
 * A TCP connection to the first of the addresses that accepts one, tried in order (a name may
 * resolve to ::1 before 127.0.0.1 while the upstream listens on one of them only); the last
 * address's error when none does.
 */
export async function connectFirst(addresses: string[], port: number): Promise<Deno.TcpConn> {
  let last: unknown = new Error("no address to connect to");
  for (const hostname of addresses) {
    try {
      const conn = await Deno.connect({ hostname, port });
      conn.setNoDelay(true);
      return conn;
    } catch (e) {
      last = e;
    }
  }
  throw last;
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
