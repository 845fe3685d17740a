/**
 * One declaration per `/api/` endpoint. `defineRoute({ method, path, auth, idempotent, body,
 * query, responses, handler })` is the whole of a route: a module's array of them gives
 *
 * - the mounted Hono routes (`mountRoutes`): the guard built from `auth` (credential kinds, the
 *   spec's auth texts, `{ error }`-only bodies), `Idempotency-Key` when `idempotent`, the ordered
 *   `checks` a spec puts before validation, the body and query parsed with the module's zod
 *   schemas (the first failing field's catalog text, as everywhere), and the merchant and the
 *   credential's environment (`merchant`, `profile`) handed to the handler;
 * - the response: the handler returns the fields, the success status's schema picks and orders
 *   them (`{ success: true, … }` when the schema has `success`), so no handler copies a list of
 *   fields the schema already has;
 * - the OpenAPI entry (`docOf` → RouteDoc, src/http/openapi.ts), hence the "documented = mounted"
 *   check, and the hostile-input fuzz list (`fuzz`, tests/integration/hostile-input.test.ts).
 */
import type { Context, Hono, MiddlewareHandler } from "hono";
import { Hono as HonoApp } from "hono";
import { z } from "zod";
import type { Deps } from "../deps.ts";
import type { ProfileName } from "../chain/profiles.ts";
import type { MerchantRow } from "../modules/merchants/merchants.types.ts";
import { type AuthEnv, guard, type GuardOptions, merchantOf, profileOf } from "./auth.ts";
import { type ParseOptions, parseWith, presentQuery, readJsonObject } from "./body.ts";
import {
  bareErrorBody,
  type Credential,
  errorBody,
  parseOrThrow,
  type ResponseDoc,
  type RouteDoc,
} from "./contract.ts";
import { idempotent, type ReplayHook, type ScopeOf } from "./idempotency.ts";

export type Method = RouteDoc["method"];

/** Who may call: the guard's options, plus what the document shows for a consumer session. */
export interface RouteAuth extends GuardOptions {
  /** The handler reads the consumer_token cookie itself (documented as `consumerCookie`). */
  consumer?: boolean;
  /**
   * A request this holds for needs no credential (limited per client address, like an open
   * route); any other gets the guard (agents: a bare `scaAddress` lookup is public).
   */
  openWhen?: (c: Context) => boolean;
}

/** What a handler gets: parsed input, and the caller as the guard established it. */
export interface RouteRequest<B, Q> {
  c: Context<AuthEnv>;
  deps: Deps;
  body: B;
  query: Q;
  /** The path's parameters as sent (`:id` → `params.id`). */
  params: Record<string, string>;
  /** The JSON body as read, before validation (what `checks` look at); read once. */
  json: () => Promise<Record<string, unknown>>;
  /** What a route's `checks` hand on to its handler. */
  locals: Record<string, unknown>;
  /** The `Idempotency-Key` header, when sent. */
  idempotencyKey: string | undefined;
  /**
   * This request re-runs an Idempotency-Key whose first run died in progress (a crash): what
   * that run sent may already have happened, and is this request's answer.
   */
  readonly resumed: boolean;
  /** The authenticated merchant (routes whose guard takes credentials). */
  readonly merchant: MerchantRow;
  /** The chain of the credential's environment: a key's prefix, a session's mode. */
  readonly profile: ProfileName;
}

/** An answer with a status other than the route's first success status. */
export class Reply {
  constructor(readonly status: number, readonly value: Record<string, unknown>) {}
}
export const reply = (status: number, value: Record<string, unknown>) => new Reply(status, value);

/** Hostile-input fuzzing of the route (tests/integration/hostile-input.test.ts). */
export interface FuzzSpec {
  /**
   * A well-formed body whose fields the fuzz keeps, replaces and drops. Strings `$wallet`,
   * `$email` and `$dead` stand for the test merchant's wallet, its email, and 0x…dEaD.
   */
  sample?: Record<string, unknown>;
  /** Which credential the fuzz sends (default: the first the route accepts, a key first). */
  as?: "cookie" | "key" | "bearer" | "none";
  /** A fraction of the usual runs (the route sends transactions when the input is good). */
  runsDivisor?: number;
  /** Documented fields an error body may carry besides success, error, hint and status. */
  extra?: string[];
  /** The route documents a hint object, not only text. */
  hintObject?: boolean;
  /** Fuzz the query and path parameters (default: when the route has a query or params). */
  params?: boolean;
  /** Fuzz the body (default: when the route has a body). */
  bodies?: boolean;
  /** Put before a fuzzed path parameter, so an empty one still reaches the route (`/jobs/j…`). */
  paramPrefix?: string;
  /**
   * Parameter fuzz runs, each with its credential and the query parameters it sends (default:
   * one run, `as`, every parameter of `query`).
   */
  variants?: { as?: FuzzSpec["as"]; keys?: string[] }[];
  /**
   * Body fuzz runs, each with its credential, sample and share of the runs (default: one run,
   * `as`, `sample`, `runsDivisor`); x402's payers: a wallet with a bearer key, an agent with
   * x-api-key.
   */
  bodyVariants?: { as?: FuzzSpec["as"]; sample: Record<string, unknown>; runsDivisor?: number }[];
}

/** A check the spec orders before validation (bridge: session, then fields, then chains). */
export type RouteCheck = (x: RouteRequest<unknown, unknown>) => void | Promise<void>;

export interface RouteSpec<B extends z.ZodType, Q extends z.ZodType, I = z.output<B>> {
  method: Method;
  /** Hono form: `/api/keys/:id`. */
  path: string;
  summary: string;
  tag: string;
  auth: RouteAuth;
  idempotent?: boolean;
  /** An idempotent route's replay: what its stored body cannot carry (a session cookie). */
  onReplay?: ReplayHook;
  /**
   * Whose Idempotency-Keys these are, for a route whose caller the guard does not establish (a
   * consumer session read by the route itself); undefined falls back to the guard's caller.
   */
  idempotencyScope?: ScopeOf;
  /** The body schema (the document's; `bodyFor` when the live one depends on configuration). */
  body?: B;
  bodyFor?: (deps: Deps) => B;
  bodyExample?: unknown;
  /** A body the schema documents but a function of the module checks (payroll's recipients). */
  parseBody?: (raw: Record<string, unknown>, deps: Deps) => I;
  /** Hints per field for a refused body (beside each issue's own `params.hint`). */
  hints?: Record<string, string>;
  query?: Q;
  /** The handler reads the query as sent; `query` only documents it (Circle's API shape). */
  rawQuery?: boolean;
  /** The query's refusal text as `parseQuery` gives it (default: the field's catalog text). */
  queryErrors?: ParseOptions;
  params?: z.ZodObject;
  /** Run in order, after the guard and before the body is validated. */
  checks?: RouteCheck[];
  responses: Record<number, ResponseDoc>;
  handler: (
    x: RouteRequest<I, z.output<Q>>,
  ) =>
    | Promise<Record<string, unknown> | Reply | Response>
    | Record<string, unknown>
    | Reply
    | Response;
  fuzz?: FuzzSpec;
}

/** A declared route, its types erased (a module's table holds routes of many shapes). */
export interface ApiRoute extends Omit<RouteSpec<z.ZodType, z.ZodType>, "handler"> {
  // deno-lint-ignore no-explicit-any
  handler: (x: RouteRequest<any, any>) => unknown;
}

export function defineRoute<
  B extends z.ZodType = z.ZodUndefined,
  Q extends z.ZodType = z.ZodUndefined,
  I = z.output<B>,
>(spec: RouteSpec<B, Q, I>): ApiRoute {
  return spec as unknown as ApiRoute;
}

/** The document's credentials of a route, from what its guard accepts. */
export function credentialsOf(auth: RouteAuth): Credential[] {
  if (auth.consumer) return ["consumerCookie"];
  return auth.accept.map((a) => a === "cookie" ? "merchantCookie" : a);
}

/** The route's OpenAPI entry (src/http/openapi.ts). */
export function docOf(r: ApiRoute): RouteDoc {
  return {
    method: r.method,
    path: r.path,
    summary: r.summary,
    tag: r.tag,
    auth: credentialsOf(r.auth),
    ...(r.idempotent ? { idempotent: true } : {}),
    ...(r.params ? { params: r.params } : {}),
    ...(r.query ? { query: r.query as z.ZodObject } : {}),
    ...(r.body ? { body: r.body } : {}),
    ...(r.bodyExample !== undefined ? { bodyExample: r.bodyExample } : {}),
    responses: withCrossSite(r),
  };
}

/**
 * A route that takes the merchant's session cookie on an unsafe method may answer 403 to a
 * request from another site's page (auth.ts, csrf.ts `crossSite`): listed when its own table
 * does not list a 403.
 */
function withCrossSite(r: ApiRoute): ApiRoute["responses"] {
  if (!r.auth.accept.includes("cookie") || /^(get|head|options)$/i.test(r.method)) {
    return r.responses;
  }
  if (r.responses[403]) return r.responses;
  return {
    ...r.responses,
    403: {
      description: "A request with the session cookie from another site's page",
      schema: r.auth.bare || r.auth.bareStatuses?.includes(403) ? bareErrorBody : errorBody,
    },
  };
}

/** The status a plain handler result answers with: the route's first 2xx. */
function successStatus(r: ApiRoute): number {
  const s = Object.keys(r.responses).map(Number).filter((n) => n >= 200 && n < 300).sort();
  return s[0] ?? 200;
}

/**
 * The body the schema documents, in its order: each field of the schema's object the value has
 * (`success: true` filled in). A schema that is not an object, or takes any key, gets the value.
 */
export function shape(schema: z.ZodType | undefined, value: Record<string, unknown>): unknown {
  const full: Record<string, unknown> = { success: true, ...value };
  if (schema instanceof z.ZodUnion) {
    // The first alternative that names every field of the value.
    const fits = (schema.options as z.ZodType[]).find((o) =>
      o instanceof z.ZodObject && Object.keys(value).every((k) => k in o.shape)
    );
    return fits ? shape(fits, value) : value;
  }
  if (!(schema instanceof z.ZodObject)) return value;
  const catchall = schema._zod.def.catchall;
  if (catchall && !(catchall instanceof z.ZodNever)) return full;
  // `success` leads, as the spec's bodies show it, wherever a schema lists it.
  const out: Record<string, unknown> = "success" in schema.shape ? { success: full.success } : {};
  for (const key of Object.keys(schema.shape)) {
    if (key in full && full[key] !== undefined) out[key] = full[key];
  }
  return out;
}

function handle(deps: Deps, r: ApiRoute): MiddlewareHandler<AuthEnv> {
  const bodySchema = r.bodyFor ? r.bodyFor(deps) : r.body;
  const status = successStatus(r);
  return async (c) => {
    const x = {
      c,
      deps,
      body: undefined,
      query: undefined,
      params: c.req.param() as Record<string, string>,
      json: () => readJsonObject(c),
      locals: {},
      idempotencyKey: c.req.header("idempotency-key"),
      get resumed() {
        return c.get("idempotencyResumed") === true;
      },
      get merchant() {
        return merchantOf(c);
      },
      get profile() {
        return profileOf(c);
      },
    } as RouteRequest<unknown, unknown>;
    for (const check of r.checks ?? []) await check(x);
    if (r.parseBody) x.body = r.parseBody(await readJsonObject(c), deps);
    else if (bodySchema) x.body = parseOrThrow(bodySchema, await readJsonObject(c), r.hints);
    if (r.query && !r.rawQuery) {
      x.query = r.queryErrors
        ? parseWith(r.query, presentQuery(c), r.queryErrors)
        : parseOrThrow(r.query, presentQuery(c), r.hints);
    }
    const out = await r.handler(x);
    if (out instanceof Response) return out;
    const answer = out instanceof Reply ? out : new Reply(status, out as Record<string, unknown>);
    return c.json(
      shape(r.responses[answer.status]?.schema, answer.value) as never,
      answer.status as never,
    );
  };
}

function guardOf(deps: Deps, auth: RouteAuth): MiddlewareHandler<AuthEnv> {
  const strict = guard(deps, auth);
  const openWhen = auth.openWhen;
  if (!openWhen) return strict;
  const anyone = guard(deps, { accept: [] });
  return (c, next) => openWhen(c) ? anyone(c, next) : strict(c, next);
}

/** The Hono routes of a table: guard, idempotency, parsing, handler, shaped answer. */
export function mountRoutes(deps: Deps, routes: ApiRoute[]): Hono<AuthEnv> {
  const app = new HonoApp<AuthEnv>();
  const once = idempotent(deps);
  for (const r of routes) {
    const chain: MiddlewareHandler<AuthEnv>[] = [guardOf(deps, r.auth)];
    if (r.idempotent) {
      chain.push(
        r.onReplay || r.idempotencyScope ? idempotent(deps, r.onReplay, r.idempotencyScope) : once,
      );
    }
    chain.push(handle(deps, r));
    app.on(r.method.toUpperCase(), [r.path], ...chain);
  }
  return app;
}
