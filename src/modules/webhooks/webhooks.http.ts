/**
 * One HTTP POST of a webhook: node:http(s) so the socket's DNS lookup can be guarded, no
 * redirects followed (a 3xx is a failure), a hard timeout until the response's status arrives;
 * the response body is not read.
 */
import http from "node:http";
import https from "node:https";
import {
  guardedLookup,
  isPublicAddress,
  literalAddress,
  type TargetPolicy,
  TargetRefused,
} from "./webhooks.targets.ts";

export interface PostResult {
  /** The receiver's status code, when it answered. */
  status?: number;
  error?: string;
  /** True when the target was refused before any connection (never retried). */
  refused?: boolean;
  durationMs: number;
}

export function postWebhook(
  url: URL,
  body: string,
  headers: Record<string, string>,
  opts: { timeoutMs: number; policy: TargetPolicy },
): Promise<PostResult> {
  const started = performance.now();
  const done = (r: Omit<PostResult, "durationMs">): PostResult => ({
    ...r,
    durationMs: Math.round(performance.now() - started),
  });
  if (opts.policy === "public") {
    if (url.protocol !== "https:") {
      return Promise.resolve(done({ refused: true, error: "refused: not https" }));
    }
    const literal = literalAddress(url);
    if (literal && !isPublicAddress(literal)) {
      return Promise.resolve(
        done({ refused: true, error: `refused: non-public address ${literal}` }),
      );
    }
  }
  const client = url.protocol === "https:" ? https : http;
  return new Promise((resolve) => {
    let settled = false;
    const finish = (r: Omit<PostResult, "durationMs">) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(done(r));
    };
    const req = client.request(url, {
      method: "POST",
      // A fresh connection per attempt: the DNS guard runs on every connect, and a timeout can
      // always tear the request down (a pooled socket was not reliably aborted under Deno).
      agent: false,
      headers: { ...headers, "content-length": String(new TextEncoder().encode(body).length) },
      ...(opts.policy === "public" ? { lookup: guardedLookup } : {}),
    }, (res) => {
      // The status decides the attempt (a response, 2xx or not, within the timeout): a receiver
      // that answered 200 and then sent its body slowly was recorded "timed out" and sent the
      // event again, four times (an outside audit, 2026-11-30). The body is not read.
      finish({ status: res.statusCode ?? 0 });
      res.destroy();
    });
    const timer = setTimeout(() => {
      const e = `timed out after ${opts.timeoutMs} ms`;
      req.destroy(new Error(e));
      finish({ error: e }); // bounded even if the socket does not close at once
    }, opts.timeoutMs);
    req.on("error", (e: Error & { code?: string }) => {
      if (e instanceof TargetRefused || e.code === "ETARGETREFUSED") {
        finish({ refused: true, error: `refused: ${e.message}` });
      } else finish({ error: e.message.slice(0, 300) });
    });
    req.end(body);
  });
}
