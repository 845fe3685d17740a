/**
 * `/healthz` answers while the process is alive; `/readyz` only when the database answers, every
 * migration on disk is applied, and every other registered check (chains, ...) passes.
 */
import { Hono } from "hono";
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

export function healthRoutes(checks: ReadinessCheck[], timeoutMs = 3000): Hono {
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
    return c.json(
      { success: ok, status: ok ? "ready" : "not ready", checks: results },
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
