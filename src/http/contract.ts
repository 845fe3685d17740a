/**
 * The documented contract of an `/api/` route: method, path, credentials, request schemas and
 * the response body per status. A module declares each route once in its table
 * (`defineRoute`, src/http/route.ts, in `<name>.api.ts`), whose `docOf` gives this; x402 still
 * lists RouteDocs in `x402.schemas.ts`. Every module's list feeds `/api/openapi.json`
 * (src/http/openapi.ts) and the tests' response-drift check, and a test compares it with the
 * routes the app really mounts (no drift either way).
 *
 * Request schemas carry the catalog text of each field in their issues, so one parse gives both
 * the API's answer (the first failing field's text) and a form's per-field errors.
 */
import { z } from "zod";
import { ApiError } from "./errors.ts";

/** The credentials of the spec's authentication table, as OpenAPI security schemes. */
export type Credential = "bearer" | "apiKey" | "merchantCookie" | "consumerCookie";

export interface ResponseDoc {
  description: string;
  schema: z.ZodType;
  example?: unknown;
  /** Default application/json. */
  contentType?: string;
}

export interface RouteDoc {
  method: "get" | "post" | "put" | "patch" | "delete";
  /** Hono form: `/api/keys/:id`. */
  path: string;
  summary: string;
  tag: string;
  /** Any one of these is accepted; empty = no credential. */
  auth: Credential[];
  /** Takes an `Idempotency-Key` header (src/http/idempotency.ts). */
  idempotent?: boolean;
  params?: z.ZodObject;
  query?: z.ZodObject;
  body?: z.ZodType;
  bodyExample?: unknown;
  responses: Record<number, ResponseDoc>;
}

/** `{ success: false, error, hint? }`: the spec's error body. */
export const errorBody = z.object({
  success: z.literal(false),
  error: z.string(),
  hint: z.string().optional(),
}).meta({ id: "Error" });

/**
 * A chain action's 408 (no receipt in time) and 502 (reverted): the error body, and the
 * transaction's hash when one was sent (src/http/error-map.ts).
 */
export const chainErrorBody = errorBody.extend({ txHash: z.string().optional() })
  .meta({ id: "ChainError" });

/** `{ error }` only: the spec's exceptions (the merchant dashboard JSON). */
export const bareErrorBody = z.object({ error: z.string() }).meta({ id: "BareError" });

/**
 * The error responses every route shares, plus its own. Any route that reaches the database may
 * answer 503 (a pool backstop cut the request off, src/db/client.ts): always listed.
 */
export function errors(
  statuses: number[],
  schema: z.ZodType = errorBody,
): Record<number, ResponseDoc> {
  const out: Record<number, ResponseDoc> = {};
  for (const s of statuses) {
    const chain = schema === errorBody && (s === 408 || s === 502);
    out[s] = { description: ERROR_TEXT[s] ?? "Error", schema: chain ? chainErrorBody : schema };
  }
  out[503] = { description: ERROR_TEXT[503], schema: errorBody };
  return out;
}

const ERROR_TEXT: Record<number, string> = {
  400: "Missing or malformed parameters",
  401: "Missing or invalid credential",
  403: "Insufficient permissions",
  404: "Not found",
  409: "Conflict (an Idempotency-Key request still in progress, or a duplicate)",
  429: "Rate limit exceeded; see Retry-After",
  500: "Internal error",
  503: "Busy: the request waited too long for the database and was stopped (nothing was done); " +
    "retry after Retry-After",
};

export type FieldResult<T> =
  | { ok: true; data: T }
  | { ok: false; errors: Record<string, string>; first: { field: string; message: string } };

/**
 * Parses `value`; on failure every top-level field's first issue text (a form shows each beside
 * its field) and the first failing field overall (the API's answer).
 */
export function parseFields<S extends z.ZodType>(
  schema: S,
  value: unknown,
): FieldResult<z.output<S>> {
  const r = schema.safeParse(value);
  if (r.success) return { ok: true, data: r.data };
  const errors: Record<string, string> = {};
  for (const issue of r.error.issues) {
    const field = String(issue.path[0] ?? "");
    errors[field] ??= issue.message;
  }
  const firstIssue = r.error.issues[0];
  return {
    ok: false,
    errors,
    first: { field: String(firstIssue.path[0] ?? ""), message: firstIssue.message },
  };
}

/**
 * The API's edge: typed input, or a 400 with the first failing field's catalog text. A field's
 * hint comes from `hints`, or from the issue itself (`params.hint`, e.g. why a URL was refused).
 */
export function parseOrThrow<S extends z.ZodType>(
  schema: S,
  value: unknown,
  hints: Record<string, string> = {},
): z.output<S> {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  const issue = r.error.issues[0];
  const field = String(issue.path[0] ?? "");
  const own = (issue as { params?: { hint?: unknown } }).params?.hint;
  const hint = typeof own === "string" ? own : hints[field];
  throw new ApiError(400, issue.message, { hint });
}
