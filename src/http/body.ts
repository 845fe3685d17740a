/**
 * Reading request bodies: malformed JSON is a 400 with a clear message, never a 500, and zod
 * failures become the endpoint's own error text from the catalog.
 */
import type { Context } from "hono";
import type { z } from "zod";
import { ApiError } from "./errors.ts";
import { M } from "./messages.ts";
import { EDGE_JSON, type EdgeJson } from "./limits.ts";

/** Parses the body as a JSON object. An empty body is `{}`. */
export async function readJsonObject(c: Context): Promise<Record<string, unknown>> {
  const cached = c.get("jsonBody" as never) as Record<string, unknown> | undefined;
  if (cached) return cached;
  // The edge (limits.ts) already parsed and checked a JSON body; an empty one is `{}`.
  const edge = c.get(EDGE_JSON as never) as EdgeJson | undefined;
  const text = edge ? "" : await c.req.text();
  let value: unknown = edge ? edge.value : {};
  if (text.trim() !== "") {
    try {
      value = JSON.parse(text);
    } catch {
      throw new ApiError(400, M.malformedJson, { hint: M.malformedJsonHint });
    }
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new ApiError(400, M.bodyNotObject, { hint: M.malformedJsonHint });
  }
  c.set("jsonBody" as never, value as never);
  return value as Record<string, unknown>;
}

export interface ParseOptions {
  /** The error text for any validation failure; default names the first problem. */
  message?: string | ((issues: z.core.$ZodIssue[]) => string);
  hint?: string;
  extra?: Record<string, unknown>;
  status?: 400 | 422;
}

export function parseWith<S extends z.ZodType>(
  schema: S,
  value: unknown,
  opts: ParseOptions = {},
): z.infer<S> {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  const issues = r.error.issues;
  const message = typeof opts.message === "function"
    ? opts.message(issues)
    : opts.message ?? describeIssue(issues[0]);
  throw new ApiError(opts.status ?? 400, message, { hint: opts.hint, extra: opts.extra });
}

export async function parseBody<S extends z.ZodType>(
  c: Context,
  schema: S,
  opts: ParseOptions = {},
): Promise<z.infer<S>> {
  return parseWith(schema, await readJsonObject(c), opts);
}

export function parseQuery<S extends z.ZodType>(
  c: Context,
  schema: S,
  opts: ParseOptions = {},
): z.infer<S> {
  return parseWith(schema, presentQuery(c), opts);
}

/**
 * The query's parameters that carry a value: `?status=&limit=20` means no status (a form left
 * blank, a template filled in part). What a route decides from its query (which guard, which
 * filters) reads this, so the decision and the parse agree.
 */
export function presentQuery(c: Context): Record<string, string> {
  return Object.fromEntries(Object.entries(c.req.query()).filter(([, v]) => v !== ""));
}

/**
 * One issue as text, naming its field once: a catalog text that already names the field
 * ("agentId is required: …") as it is; a generic one ("Too big: …") after `field: `.
 */
export function describeIssue(issue: z.core.$ZodIssue | undefined): string {
  if (!issue) return "Invalid request.";
  const path = issue.path.map(String).join(".");
  if (!path) return issue.message;
  const field = String(issue.path[issue.path.length - 1]);
  return namesField(issue.message, field) ? issue.message : `${path}: ${issue.message}`;
}

function namesField(message: string, field: string): boolean {
  const escaped = field.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  return new RegExp(`(^|[^A-Za-z0-9_])${escaped}([^A-Za-z0-9_]|$)`).test(message);
}
