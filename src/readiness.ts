/**
 * A readiness check, as `/readyz` (src/http/health.ts) runs it. Here, not in src/http/, because
 * the chain module provides one and src/chain/ never imports src/http/.
 */
export interface CheckResult {
  ok: boolean;
  detail?: unknown;
}
export type ReadinessCheck = { name: string; run: () => Promise<CheckResult> };
