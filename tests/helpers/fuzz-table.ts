/**
 * The hostile-input fuzz list, read from the route table (src/http/route.ts): every declared
 * route with a `fuzz` entry gives a body endpoint (its sample's fields kept, replaced, dropped)
 * and/or a parameter endpoint (each path parameter and each query parameter of its schema set to
 * the fuzzed text). Adding a route with `fuzz` adds it here with no other edit.
 */
import type { ApiRoute, FuzzSpec } from "../../src/http/route.ts";
import { type AppModule, modules } from "../../src/modules/index.ts";

export interface FuzzEndpoint {
  method: string;
  path: (param: string) => string;
  headers: Record<string, string>;
  sample?: Record<string, unknown>;
  bare?: boolean;
  rpc?: boolean;
  runs?: number;
  extra?: string[];
  hintObject?: boolean;
  bareStatuses?: number[];
}

export interface FuzzCredentials {
  cookie: Record<string, string>;
  key: Record<string, string>;
  bearer: Record<string, string>;
  /** What `$wallet`, `$email` and `$dead` in a sample stand for. */
  values: Record<string, unknown>;
}

function substitute(v: unknown, values: Record<string, unknown>): unknown {
  if (typeof v === "string" && v.startsWith("$") && v in values) return values[v];
  if (Array.isArray(v)) return v.map((x) => substitute(x, values));
  if (v && typeof v === "object") {
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, substitute(x, values)]));
  }
  return v;
}

/** The credential a route is fuzzed with: its own choice, else a key, bearer, cookie, none. */
function headersFor(r: ApiRoute, as: FuzzSpec["as"], creds: FuzzCredentials) {
  const a = r.auth.accept;
  const pick = as ??
    (a.includes("apiKey")
      ? "key"
      : a.includes("bearer")
      ? "bearer"
      : a.includes("cookie")
      ? "cookie"
      : "none");
  return pick === "none" ? {} : creds[pick];
}

export function tableEndpoints(
  creds: FuzzCredentials,
  runs: number,
  list: AppModule[] = modules,
): { bodies: FuzzEndpoint[]; params: FuzzEndpoint[] } {
  const bodies: FuzzEndpoint[] = [];
  const params: FuzzEndpoint[] = [];
  for (const r of list.flatMap((m) => m.table ?? [])) {
    const f = r.fuzz;
    if (!f) continue;
    const common = {
      method: r.method.toUpperCase(),
      bare: r.auth.bare,
      bareStatuses: r.auth.bareStatuses,
      extra: f.extra,
      hintObject: f.hintObject,
      runs: f.runsDivisor ? Math.ceil(runs / f.runsDivisor) : undefined,
    };
    const pathParams = /:[A-Za-z0-9_]+/.test(r.path);
    if (f.bodies ?? (r.body !== undefined && !pathParams)) {
      const one = { as: f.as, sample: f.sample ?? {}, runsDivisor: f.runsDivisor };
      for (const v of f.bodyVariants ?? [one]) {
        bodies.push({
          ...common,
          runs: v.runsDivisor ? Math.ceil(runs / v.runsDivisor) : undefined,
          path: () => r.path,
          headers: headersFor(r, v.as, creds),
          sample: substitute(v.sample, creds.values) as Record<string, unknown>,
        });
      }
    }
    if (f.params ?? (r.query !== undefined || pathParams)) {
      for (const v of f.variants ?? [{}]) {
        const keys = v.keys ??
          Object.keys((r.query as { shape?: object } | undefined)?.shape ?? {});
        const prefix = f.paramPrefix ?? "";
        params.push({
          ...common,
          path: (p) => {
            const path = r.path.replace(/:[A-Za-z0-9_]+/g, `${prefix}${p}`);
            if (keys.length === 0 && !pathParams) return `${path}?${p}=${p}`;
            return keys.length ? `${path}?${keys.map((k) => `${k}=${p}`).join("&")}` : path;
          },
          headers: headersFor(r, v.as ?? f.as, creds),
        });
      }
    }
  }
  return { bodies, params };
}
