/**
 * Response drift: a real response of a documented `/api/` route must match the schema the
 * OpenAPI document shows for its status, no field missing, mistyped or undocumented.
 * `api(svc)` (accounts.ts) checks every response it gets through here.
 */
import assert from "node:assert/strict";
import type { z } from "zod";
import type { RouteDoc } from "../../src/http/contract.ts";
import { apiRoutes } from "../../src/modules/index.ts";

interface Compiled {
  route: RouteDoc;
  pattern: RegExp;
}

let compiled: Compiled[] | undefined;

function routes(): Compiled[] {
  compiled ??= apiRoutes().map((route) => ({
    route,
    pattern: new RegExp(`^${route.path.replace(/:[A-Za-z0-9_]+/g, "[^/]+")}$`),
  }));
  return compiled;
}

/** The documented route answering `method path`, if any. */
export function documentedRoute(method: string, path: string): RouteDoc | undefined {
  const pathname = new URL(path, "http://x").pathname;
  const m = method.toLowerCase();
  return routes().find((r) => r.route.method === m && r.pattern.test(pathname))?.route;
}

/**
 * Fails on drift: an undocumented status of a documented route, or a JSON body the status's
 * schema refuses, or one with fields the schema does not name. Routes outside the document
 * (pages, probes of unknown paths) are not checked here.
 */
export function assertDocumented(
  method: string,
  path: string,
  status: number,
  contentType: string | null,
  body: string,
): void {
  const route = documentedRoute(method, path);
  if (!route) return;
  const doc = route.responses[status];
  assert.ok(doc, `${method} ${path} answered ${status}, which its documentation does not list`);
  if (!(contentType ?? "").includes("application/json")) return;
  const json = JSON.parse(body);
  const r = (doc.schema as z.ZodType).safeParse(json);
  assert.ok(
    r.success,
    `${method} ${path} ${status}: the body does not match its documented schema: ` +
      `${r.success ? "" : JSON.stringify(r.error.issues.slice(0, 3))}\n${body.slice(0, 500)}`,
  );
  // zod drops keys it does not know: what is left is the documented part of the body.
  assert.deepEqual(
    r.data,
    json,
    `${method} ${path} ${status}: the body has fields its documentation does not show`,
  );
}
