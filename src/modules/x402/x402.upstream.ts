/**
 * One call to a listing's upstream API, through the same outbound-target guard as webhook
 * deliveries: under the `public` policy (always in production) only https URLs whose every
 * address is public, checked in the socket's own DNS lookup at connect time; redirects are not
 * followed (a 3xx is the upstream's answer, a failure); a hard timeout; at most 1 MiB read.
 * Connections are kept alive and reused (a new TCP connection, or TLS session, per paid call cost
 * more than the rest of the call); one pool per policy, so a socket opened without the public
 * guard's lookup is never reused under it.
 */
import http from "node:http";
import https from "node:https";
import {
  guardedLookup,
  isPublicAddress,
  literalAddress,
  type TargetPolicy,
  TargetRefused,
} from "../webhooks/webhooks.targets.ts";
import { DomainError } from "../../errors.ts";

export const UPSTREAM_MAX_BYTES = 1_048_576;

/** Idle upstream connections are closed after this long. */
const IDLE_MS = 2_000;
const pools = new Map<string, http.Agent>();

function agentFor(protocol: string, policy: TargetPolicy): http.Agent {
  const key = `${protocol}${policy}`;
  let agent = pools.get(key);
  if (!agent) {
    const opts = { keepAlive: true, keepAliveMsecs: IDLE_MS, timeout: IDLE_MS, maxSockets: 256 };
    agent = protocol === "https:" ? new https.Agent(opts) : new http.Agent(opts);
    pools.set(key, agent);
  }
  return agent;
}

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
  opts: { timeoutMs: number; policy: TargetPolicy },
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
  const client = url.protocol === "https:" ? https : http;
  const headers: Record<string, string> = {
    accept: "application/json, */*;q=0.5",
    ...req.headers,
  };
  if (req.body !== undefined) {
    headers["content-type"] ??= "application/json";
    headers["content-length"] = String(new TextEncoder().encode(req.body).length);
  }
  return new Promise((resolve) => {
    let settled = false;
    const finish = (r: UpstreamResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(r);
    };
    const request = client.request(url, {
      method: req.method,
      agent: agentFor(url.protocol, opts.policy),
      headers,
      ...(opts.policy === "public" ? { lookup: guardedLookup } : {}),
    }, (res) => {
      const status = res.statusCode ?? 0;
      const chunks: Uint8Array[] = [];
      let read = 0;
      res.on("data", (chunk: Uint8Array) => {
        read += chunk.length;
        if (read > UPSTREAM_MAX_BYTES) {
          res.destroy();
          finish({ ok: false, status, error: "upstream body larger than 1 MiB" });
          return;
        }
        chunks.push(chunk);
      });
      res.on("end", () => {
        if (status < 200 || status > 299) {
          return finish({ ok: false, status, error: `upstream answered ${status}` });
        }
        const body = new Uint8Array(read);
        let at = 0;
        for (const c of chunks) {
          body.set(c, at);
          at += c.length;
        }
        const ct = res.headers["content-type"];
        finish({ ok: true, status, contentType: typeof ct === "string" ? ct : null, body });
      });
      res.on("error", (e: Error) => finish({ ok: false, status, error: e.message }));
    });
    const timer = setTimeout(() => {
      const e = `timed out after ${opts.timeoutMs} ms`;
      request.destroy(new Error(e));
      finish({ ok: false, error: e });
    }, opts.timeoutMs);
    request.on("error", (e: Error & { code?: string }) => {
      if (e instanceof TargetRefused || e.code === "ETARGETREFUSED") {
        finish({ ok: false, refused: true, error: `refused: ${e.message}` });
      } else finish({ ok: false, error: e.message.slice(0, 300) });
    });
    request.end(req.body);
  });
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
