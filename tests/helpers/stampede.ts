/**
 * "50 identical requests at once" (DESIGN §11): fires one request many times concurrently while a
 * watcher keeps asking `/readyz` and a bystander (another merchant's read) is served, and reports
 * what came back. The caller asserts that exactly one answer moved money and the rest are clean
 * 4xx; this helper asserts what holds for every money-moving endpoint: every answer arrived within
 * the bound, none was a 5xx, `/readyz` never failed and the bystander was never refused or stuck.
 */
import assert from "node:assert/strict";
import type { TestService } from "./service.ts";

export interface StampedeRequest {
  method: string;
  path: string;
  body?: unknown;
  headers?: Record<string, string>;
}

export interface StampedeAnswer {
  status: number;
  json: Record<string, unknown>;
  text: string;
  ms: number;
}

export interface StampedeResult {
  answers: StampedeAnswer[];
  /** How many answers had each status. */
  byStatus: Record<number, number>;
  /** `/readyz` answers seen while the stampede ran (all 200, asserted). */
  readyChecks: number;
  /** Bystander requests served while the stampede ran (all 2xx, asserted). */
  bystanderServed: number;
}

export interface StampedeOptions {
  /** Concurrent copies (default 50). */
  copies?: number;
  /** Every answer must arrive within this bound (default 60 s). */
  boundMs?: number;
  /** Another merchant's request that must keep being served (e.g. GET /api/wallets). */
  bystander?: StampedeRequest;
  /** Statuses allowed besides 2xx (default: any 4xx). */
  allowed?: (status: number) => boolean;
}

async function call(svc: TestService, r: StampedeRequest, signal: AbortSignal) {
  const headers: Record<string, string> = { ...r.headers };
  if (r.body !== undefined) headers["content-type"] = "application/json";
  const started = performance.now();
  const res = await fetch(`${svc.baseUrl}${r.path}`, {
    method: r.method,
    headers,
    body: r.body === undefined ? undefined : JSON.stringify(r.body),
    signal,
  });
  const text = await res.text();
  let json: Record<string, unknown> = {};
  try {
    json = JSON.parse(text);
  } catch { /* not JSON */ }
  return { status: res.status, json, text, ms: Math.round(performance.now() - started) };
}

export async function stampede(
  svc: TestService,
  request: StampedeRequest | ((i: number) => StampedeRequest),
  opts: StampedeOptions = {},
): Promise<StampedeResult> {
  const copies = opts.copies ?? 50;
  const bound = opts.boundMs ?? 60_000;
  const allowed = opts.allowed ?? ((s: number) => s >= 400 && s < 500);
  const signal = AbortSignal.timeout(bound);
  const of = typeof request === "function" ? request : () => request;

  let running = true;
  let readyChecks = 0;
  let bystanderServed = 0;
  const failures: string[] = [];
  // The watchers ask one at a time, each with the same bound: a wedged pool shows as a timeout.
  const watch = async (label: string, r: StampedeRequest, count: () => void) => {
    while (running) {
      try {
        const a = await call(svc, r, AbortSignal.timeout(bound));
        if (a.status < 200 || a.status >= 300) {
          failures.push(`${label} answered ${a.status}: ${a.text.slice(0, 200)}`);
        } else count();
      } catch (e) {
        failures.push(`${label} failed: ${e}`);
        return;
      }
    }
  };
  const watchers = [
    watch("/readyz", { method: "GET", path: "/readyz" }, () => readyChecks++),
    ...(opts.bystander ? [watch("bystander", opts.bystander, () => bystanderServed++)] : []),
  ];

  let answers: StampedeAnswer[];
  try {
    answers = await Promise.all(
      Array.from({ length: copies }, (_, i) => call(svc, of(i), signal)),
    );
  } finally {
    running = false;
    await Promise.all(watchers);
  }
  // One more of each after the stampede: the service is still whole.
  const after = await call(svc, { method: "GET", path: "/readyz" }, AbortSignal.timeout(bound));
  assert.equal(after.status, 200, `/readyz after the stampede: ${after.text}`);

  const byStatus: Record<number, number> = {};
  for (const a of answers) byStatus[a.status] = (byStatus[a.status] ?? 0) + 1;
  const bad = answers.filter((a) => !(a.status >= 200 && a.status < 300) && !allowed(a.status));
  assert.deepEqual(
    bad.map((a) => `${a.status} ${a.text.slice(0, 200)}`),
    [],
    `answers outside 2xx and the allowed 4xx (${JSON.stringify(byStatus)})`,
  );
  assert.deepEqual(failures, [], "readiness and the bystander were served throughout");
  assert.ok(readyChecks >= 1, "/readyz was asked at least once during the stampede");
  if (opts.bystander) assert.ok(bystanderServed >= 1, "the bystander was served at least once");
  return { answers, byStatus, readyChecks, bystanderServed };
}

/** The answers with a 2xx status. */
export function succeeded(r: StampedeResult): StampedeAnswer[] {
  return r.answers.filter((a) => a.status >= 200 && a.status < 300);
}
