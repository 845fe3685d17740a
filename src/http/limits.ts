/**
 * The edge: what any client, authenticated or not, may send before a route sees the request.
 *
 *   path, query   every segment and parameter passes the text rule (text-rules.ts) → else 400
 *   size          a declared Content-Length over the route's limit → 413 before any byte is read;
 *                 a body without one (chunked) is counted while it streams and stopped at the limit
 *   media type    JSON routes (/api/, /rpc/, /checkout/) take application/json only → else 415
 *   time          the whole body must arrive within BODY_READ_TIMEOUT_MS → else 408; the
 *                 request is dropped there (no route runs, the partial body is freed)
 *   text          JSON bodies are measured for depth as they arrive (before JSON.parse) and walked
 *                 for NUL and lone surrogates; form and text bodies are checked too → 400 naming
 *                 the field
 *
 * The body is read with the stream reader (Request.text() and .arrayBuffer() allocate the declared
 * Content-Length up front) and handed on through Hono's body cache, so every later reader
 * (idempotency, CSRF, handlers) sees the same bytes. A route that needs a larger body or another
 * media type (a payroll CSV upload) declares a BodyRule in its module.
 *
 * Not bounded here: how long a connection stays open. Deno.serve (2.9) has no header-read
 * timeout and gives a handler no way to close its connection; one whose body read is still in
 * flight stays open after the 408 until the client closes it (a socket and about 200 KB inside
 * Deno each, measured). A reverse proxy in front bounds both; see docs/decisions.md.
 */
import type { Context, MiddlewareHandler } from "hono";
import { matchedRoutes } from "hono/route";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { Config } from "../config.ts";
import { M, MF } from "./messages.ts";
import {
  acceptableText,
  findTextFault,
  JsonDepthScanner,
  MAX_JSON_DEPTH,
  nameField,
} from "./text-rules.ts";

export interface BodyRule {
  /** Upper-case HTTP method. */
  method: string;
  /** The route's path as Hono writes it: `/api/payroll/upload`, `/api/things/:id/file`. */
  path: string;
  /** A larger (or smaller) body limit than MAX_BODY_BYTES. */
  maxBytes?: number;
  /** Media types taken instead of application/json, e.g. `["text/csv"]`. */
  contentTypes?: string[];
  /** A longer body-read deadline than BODY_READ_TIMEOUT_MS, for large uploads. */
  timeoutMs?: number;
}

/** Routes under these prefixes are JSON endpoints: their bodies must be application/json. */
const JSON_PREFIXES = ["/api/", "/rpc/", "/checkout/"];
const JSON_TYPES: readonly string[] = ["application/json"];
const NO_BODY = new Set(["GET", "HEAD", "OPTIONS"]);
/** Set on a request to a route whose refusals are the spec's `{ error }` only (declared bare). */
const BARE = "bareRefusals";

/** The parsed JSON body, when the edge parsed it (readJsonObject reuses it). */
export const EDGE_JSON = "edgeJson";
export type EdgeJson = { value: unknown };

export function requestLimits(
  config: Pick<Config, "MAX_BODY_BYTES" | "BODY_READ_TIMEOUT_MS">,
  rules: BodyRule[] = [],
  /** Paths whose answers are `{ error }` only (the route table's `auth.bare` routes). */
  barePaths: string[] = [],
): MiddlewareHandler {
  const bare = new Set(barePaths);
  const compiled = rules.map((r) => ({
    ...r,
    method: r.method.toUpperCase(),
    re: pattern(r.path),
  }));
  return async (c, next) => {
    if (bare.has(c.req.path)) c.set(BARE as never, true as never);
    const started = performance.now();
    const url = new URL(c.req.url);
    const textFault = pathFault(c, url.pathname) ?? queryFault(url.searchParams);
    if (textFault) return refuse(c, 400, MF.textNotAllowed(textFault), M.textNotAllowedHint);

    const method = c.req.method.toUpperCase();
    const raw = c.req.raw;
    if (NO_BODY.has(method)) return await next();

    const rule = compiled.find((r) => r.method === method && r.re.test(url.pathname));
    const maxBytes = rule?.maxBytes ?? config.MAX_BODY_BYTES;
    const declared = c.req.header("content-length");
    if (declared !== undefined && !(Number(declared) <= maxBytes)) {
      return refuse(c, 413, M.bodyTooLarge, MF.bodyTooLargeHint(maxBytes));
    }

    const type = mediaType(c.req.header("content-type"));
    const accepted = rule?.contentTypes?.map((t) => t.toLowerCase()) ??
      (JSON_PREFIXES.some((p) => url.pathname.startsWith(p)) ? JSON_TYPES : undefined);
    // Deno gives every request a body stream; HTTP/1.1 has one only with these headers (an
    // HTTP/2 body without Content-Length is caught after reading, below).
    const announced = Number(declared ?? 0) > 0 || c.req.header("transfer-encoding") !== undefined;
    if (accepted && (type ? !accepted.includes(type) : announced)) {
      return refuse(c, 415, MF.unsupportedMediaType(accepted), M.malformedJsonHint);
    }
    if (raw.body === null) return await next();

    const timeoutMs = (rule?.timeoutMs ?? config.BODY_READ_TIMEOUT_MS) -
      (performance.now() - started);
    // JSON depth is measured as the bytes arrive: a too-deep body is refused before it is read.
    const depth = type === "application/json" ? new JsonDepthScanner(MAX_JSON_DEPTH) : undefined;
    const read = await readLimited(raw.body, maxBytes, timeoutMs, depth);
    if (read.outcome === "too-large") {
      return refuse(c, 413, M.bodyTooLarge, MF.bodyTooLargeHint(maxBytes));
    }
    if (depth && !depth.result.ok) {
      return refuse(
        c,
        400,
        MF.jsonTooDeep(depth.result.field ?? "The request body"),
        M.jsonTooDeepHint,
      );
    }
    if (read.outcome !== "ok") return refuse(c, 408, M.bodyTimeout, M.bodyTimeoutHint);
    if (accepted && !type && read.bytes.byteLength > 0) {
      return refuse(c, 415, MF.unsupportedMediaType(accepted), M.malformedJsonHint);
    }

    const fault = await bodyFault(c, type, read.bytes);
    if (fault) return refuse(c, 400, fault.message, fault.hint);
    // Later readers go through Hono's body cache (c.req.text(), .json(), .parseBody()), so the
    // bytes are handed on without another copy into a new Request.
    (c.req.bodyCache as Record<string, unknown>).arrayBuffer = Promise.resolve(
      ownBuffer(read.bytes),
    );
    await next();
  };
}

// ---------------------------------------------------------------------------------------------
// Text rules on the path, the query and the body

function pathFault(c: Context, pathname: string): string | undefined {
  const segments = pathname.split("/");
  const bad = segments.findIndex((s) => !acceptableText(decode(s)));
  if (bad < 0) return undefined;
  // Name the route's parameter at that position when a route matched (`/deliveries/:id/replay`).
  for (const route of matchedRoutes(c).toReversed()) {
    const seg = route.path.split("/")[bad];
    if (seg?.startsWith(":")) return nameField([seg.slice(1).replace(/[{?].*$/, "")], "");
  }
  return "The request path";
}

function queryFault(params: URLSearchParams): string | undefined {
  for (const [k, v] of params) {
    if (!acceptableText(k)) return "The query string";
    if (!acceptableText(v)) return nameField([k], "The query string");
  }
  return undefined;
}

async function bodyFault(
  c: Context,
  type: string | undefined,
  bytes: Uint8Array,
): Promise<{ message: string; hint: string } | undefined> {
  const bad = (field: string) => ({
    message: MF.textNotAllowed(field),
    hint: M.textNotAllowedHint,
  });
  if (type === "application/json") {
    const text = new TextDecoder().decode(bytes);
    if (text.trim() === "") return undefined;
    (c.req.bodyCache as Record<string, unknown>).text = Promise.resolve(text);
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      return undefined; // malformed: the route answers in its own form
    }
    const f = findTextFault(value);
    if (f) return bad(nameField(f.path, "The request body"));
    c.set(EDGE_JSON as never, { value } satisfies EdgeJson as never);
  } else if (type === "application/x-www-form-urlencoded") {
    const field = queryFault(new URLSearchParams(new TextDecoder().decode(bytes)));
    if (field) return bad(field === "The query string" ? "A form field" : field);
  } else if (type === "multipart/form-data") {
    let form: FormData;
    try {
      form = await new Response(bytes as BodyInit, { headers: c.req.raw.headers }).formData();
    } catch {
      return undefined; // malformed: the route decides
    }
    for (const [k, v] of form) {
      if (!acceptableText(k)) return bad("A form field");
      const text = typeof v === "string" ? v : v.name;
      if (!acceptableText(text)) return bad(nameField([k], "A form field"));
    }
  } else if (type?.startsWith("text/")) {
    if (!acceptableText(new TextDecoder().decode(bytes))) return bad("The request body");
  }
  return undefined;
}

function decode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment; // malformed escapes stay as they are, as the router leaves them
  }
}

// ---------------------------------------------------------------------------------------------
// Reading the body

type Read =
  | { outcome: "ok"; bytes: Uint8Array }
  | { outcome: "too-large" | "timeout" | "aborted" | "rejected" };

async function readLimited(
  body: ReadableStream<Uint8Array>,
  maxBytes: number,
  timeoutMs: number,
  /** Sees each chunk; false stops the read (the caller answers from its own state). */
  inspector?: { push(chunk: Uint8Array): boolean },
): Promise<Read> {
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<"timeout">((resolve) => {
    timer = setTimeout(() => resolve("timeout"), Math.max(0, timeoutMs));
  });
  const stop = () => reader.cancel().catch(() => {});
  try {
    for (;;) {
      const r = await Promise.race([reader.read(), deadline]);
      if (r === "timeout") {
        stop();
        return { outcome: "timeout" };
      }
      if (r.done) break;
      total += r.value.byteLength;
      if (total > maxBytes) {
        stop();
        return { outcome: "too-large" };
      }
      chunks.push(r.value);
      if (inspector && !inspector.push(r.value)) {
        stop();
        return { outcome: "rejected" };
      }
    }
  } catch {
    stop();
    return { outcome: "aborted" };
  } finally {
    clearTimeout(timer);
  }
  if (chunks.length === 1) return { outcome: "ok", bytes: chunks[0] };
  const bytes = new Uint8Array(total);
  let at = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, at);
    at += chunk.byteLength;
  }
  return { outcome: "ok", bytes };
}

/** The bytes as an ArrayBuffer of their own (a chunk may be a view into a larger one). */
function ownBuffer(bytes: Uint8Array): ArrayBuffer {
  const whole = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength;
  return (whole ? bytes.buffer : bytes.slice().buffer) as ArrayBuffer;
}

// ---------------------------------------------------------------------------------------------
// Answers

function refuse(c: Context, status: ContentfulStatusCode, error: string, hint?: string) {
  const { body, type } = refusalBody(c, error, hint);
  return c.body(body, status, { "content-type": type });
}

function refusalBody(c: Context, error: string, hint?: string) {
  const path = c.req.path;
  if (path === "/dashboard" || path.startsWith("/dashboard/")) {
    return { body: error, type: "text/plain; charset=UTF-8" };
  }
  const body = c.get(BARE as never)
    ? { error }
    : { success: false, error, ...(hint === undefined ? {} : { hint }) };
  return { body: JSON.stringify(body), type: "application/json; charset=UTF-8" };
}

/** `type/subtype` in lower case, without parameters; undefined when absent or empty. */
function mediaType(header: string | undefined): string | undefined {
  const t = header?.split(";")[0].trim().toLowerCase();
  return t ? t : undefined;
}

/** A Hono route path as a RegExp over the request path (`:name` is one segment). */
function pattern(path: string): RegExp {
  const source = path.split("/").map((seg) =>
    seg.startsWith(":") ? "[^/]+" : seg === "*" ? ".*" : seg.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")
  ).join("/");
  return new RegExp(`^${source}/?$`);
}
