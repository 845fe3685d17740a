/**
 * `/healthz` answers while the process is alive; `/readyz` only when the database answers, every
 * migration on disk is applied, and every other registered check (chains, ...) passes.
 */
import { type Context, Hono } from "hono";
import type { Sql } from "../db/client.ts";
import { appliedVersions } from "../db/migrate.ts";
import type { CheckResult, ReadinessCheck } from "../readiness.ts";

export function databaseCheck(sql: Sql, expectedVersions: number[]): ReadinessCheck {
  return {
    name: "database",
    run: async () => {
      const applied = new Set(await appliedVersions(sql));
      const pending = expectedVersions.filter((v) => !applied.has(v));
      return pending.length
        ? { ok: false, detail: { pendingMigrations: pending } }
        : { ok: true, detail: { migrations: expectedVersions.at(-1) ?? 0 } };
    },
  };
}

/**
 * `/readyz` answers its status to anyone (a probe needs only that); each check's detail (the
 * operator's address and balance, contract addresses, pending migrations) only to `detailed`
 * requests: in production, those with the metrics token, as `/metrics` (an outside audit found
 * a production deployment's operator balance and contracts readable by anyone).
 */
export function healthRoutes(
  checks: ReadinessCheck[],
  opts: { timeoutMs?: number; detailed?: (c: Context) => boolean } = {},
): Hono {
  const timeoutMs = opts.timeoutMs ?? 3000;
  const app = new Hono();
  app.get("/healthz", (c) => c.json({ success: true, status: "ok" }));
  app.get("/readyz", async (c) => {
    const results: Record<string, CheckResult> = {};
    await Promise.all(checks.map(async (check) => {
      results[check.name] = await withTimeout(check.run(), timeoutMs).catch((e) => ({
        ok: false,
        detail: e instanceof Error ? e.message : String(e),
      }));
    }));
    const ok = Object.values(results).every((r) => r.ok);
    const shown = opts.detailed === undefined || opts.detailed(c)
      ? results
      : Object.fromEntries(Object.entries(results).map(([k, r]) => [k, { ok: r.ok }]));
    return c.json(
      { success: ok, status: ok ? "ready" : "not ready", checks: shown },
      ok ? 200 : 503,
    );
  });
  return app;
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}
