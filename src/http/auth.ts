/**
 * Authentication and rate limiting per route, as the spec's table says: each route names the
 * credentials it accepts, and a credential of another kind is refused even when it is valid
 * elsewhere.
 *
 *   guard(deps, { accept: ["cookie"] })                       merchant session only
 *   guard(deps, { accept: ["apiKey"], keyKinds: ["merchant"] }) x-api-key, merchant key only
 *   guard(deps, { accept: ["bearer"], write: true, group: "escrow" })
 *   guard(deps, { accept: [] })                               none; limited per client address
 *
 * Rules 1–4: missing or malformed → 401 "Authentication required. …" (naming `x-api-key` on
 * routes that read only that header); a well-formed key that
 * matches no active key (unknown, revoked) → 401 "Invalid API key"; a key of the wrong kind, a
 * publishable key on a write, or a scope the key lacks → 403 "Insufficient permissions". A key in
 * a form the route does not read (a bearer on an x-api-key route) counts as no credential, unless
 * the route refuses that key in every form: then it is 403 too.
 * Endpoints with their own texts (merchant/me: "Not authenticated.", "Invalid session.") pass them.
 */
import type { Context, MiddlewareHandler } from "hono";
import { getCookie } from "hono/cookie";
import type { Deps } from "../deps.ts";
import { ApiError } from "./errors.ts";
import { M } from "./messages.ts";
import { MERCHANT_COOKIE, verifyToken } from "./session-token.ts";
import { crossSite } from "./csrf.ts";
import { clientAddress, enforce, type RateBucket } from "./rate-limit.ts";
import { isUuid, resolveKey } from "../modules/keys/keys.service.ts";
import { type KeyEnvironment, type KeyKind, keyProfile } from "../modules/keys/keys.rules.ts";
import { sessionMerchant } from "../modules/merchants/merchants.service.ts";
import type { MerchantRow } from "../modules/merchants/merchants.types.ts";
import type { ProfileName } from "../chain/profiles.ts";

export type Credential = "cookie" | "apiKey" | "bearer";

export interface AuthKey {
  id: string;
  kind: KeyKind;
  environment: KeyEnvironment;
  profile: ProfileName;
  scopes: string[] | null;
  /** The key as presented (the dashboard echoes it back). Never logged. */
  raw: string;
}

export interface Auth {
  via: Credential | "none";
  merchant?: MerchantRow;
  key?: AuthKey;
  sessionId?: string;
  /**
   * The credential's environment (DESIGN §11): a key's prefix, or a merchant session's mode
   * (`live` unless switched). Every chain record is looked up by merchant and this environment.
   */
  environment?: KeyEnvironment;
  /** The chain of that environment: `test` → testnet, `live` → production. */
  profile?: ProfileName;
  /** Who the rate limits count: a key, a merchant session, or a client address. */
  subject: string;
}

export type AuthEnv = {
  Variables: {
    auth: Auth;
    requestId: string;
    /** Set by a handler whose answer is not counted (x402's paid calls and offers): `countAnswered`. */
    uncounted?: boolean;
    /** Set by the idempotency layer: this request re-runs a key whose first run died in progress. */
    idempotencyResumed?: boolean;
  };
};

export interface GuardOptions {
  accept: Credential[];
  /** Key kinds this route takes (default all three). */
  keyKinds?: KeyKind[];
  /** The route changes something: publishable keys are refused. */
  write?: boolean;
  /** A scope a limited secret key must have. */
  scope?: string;
  /** An extra rate-limit group on top of the default bucket. */
  group?: RateBucket;
  /**
   * An open route counted once answered, unless its handler marked the answer `uncounted` (x402:
   * a charged call is its own limit, and so is the 402 offer before it). An answer counted over
   * the limit is replaced by the 429; a client refused in a window is refused at once for the
   * rest of it, whatever it sends.
   */
  countAnswered?: boolean;
  /** Endpoint-specific texts. */
  messages?: {
    missing?: string;
    invalidSession?: string;
    merchantMissing?: string;
    invalidKey?: string;
    forbidden?: string;
  };
  /** `{ error }`-only bodies (the merchant dashboard). */
  bare?: boolean;
  /** `{ error }`-only bodies for these statuses only (the job endpoints' 403 and 404). */
  bareStatuses?: number[];
  /** Status for a well-formed key that matches no active key (default 401; the dashboard's is 404). */
  invalidKeyStatus?: 401 | 404;
}

const SAFE_METHOD = /^(GET|HEAD|OPTIONS)$/;

export function guard(deps: Deps, opts: GuardOptions): MiddlewareHandler<AuthEnv> {
  const kinds = opts.keyKinds ?? ["merchant", "secret", "publishable"];
  const msg = {
    missing: opts.messages?.missing ?? missingText(opts.accept),
    invalidSession: opts.messages?.invalidSession ?? M.invalidSession,
    merchantMissing: opts.messages?.merchantMissing ?? M.merchantNotFound,
    invalidKey: opts.messages?.invalidKey ?? M.invalidApiKey,
    forbidden: opts.messages?.forbidden ?? M.insufficientPermissions,
  };
  const fail = (status: 401 | 403 | 404, text: string) =>
    new ApiError(status, text, { bare: opts.bare || opts.bareStatuses?.includes(status) });

  if (opts.countAnswered) {
    return async (c, next) => {
      const auth = await authenticate(c, deps, opts, kinds, msg, fail);
      c.set("auth", auth);
      const spent = deps.limiter.refused("anonymous", auth.subject);
      if (spent) enforce(c, [spent], { bare: opts.bare });
      let thrown: { error: unknown } | undefined;
      try {
        await next();
      } catch (error) {
        thrown = { error };
      }
      if (!thrown && c.get("uncounted") && !c.error) return;
      // Answered and not marked (a refused payment, an upstream failure): counted now; over the
      // limit, the answer is the 429.
      enforce(c, await deps.limiter.hitAll(["anonymous"], auth.subject), { bare: opts.bare });
      if (thrown) throw thrown.error;
    };
  }
  return async (c, next) => {
    const auth = await authenticate(c, deps, opts, kinds, msg, fail);
    c.set("auth", auth);
    const general: RateBucket = auth.via === "none" ? "anonymous" : "default";
    // Both buckets in one statement: one round trip per request for rate counting.
    const decisions = await deps.limiter.hitAll(
      opts.group ? [general, opts.group] : [general],
      auth.subject,
      { merchantId: auth.merchant?.id },
    );
    enforce(c, decisions, { bare: opts.bare });
    await next();
  };
}

async function authenticate(
  c: Context,
  deps: Deps,
  opts: GuardOptions,
  kinds: KeyKind[],
  msg: Required<NonNullable<GuardOptions["messages"]>>,
  fail: (status: 401 | 403 | 404, text: string) => ApiError,
): Promise<Auth> {
  if (opts.accept.length === 0) {
    return { via: "none", subject: `ip:${clientAddress(c, deps.config)}` };
  }
  const now = deps.clock.now();
  const cookie = opts.accept.includes("cookie") ? getCookie(c, MERCHANT_COOKIE) : undefined;
  const header = opts.accept.includes("apiKey") ? c.req.header("x-api-key")?.trim() : undefined;
  const bearerKey = bearerOf(c.req.header("authorization"));
  const bearer = opts.accept.includes("bearer") ? bearerKey : undefined;
  const rawKey = header || bearer;

  if (cookie) {
    const claims = await verifyToken(deps.config, "merchant", cookie, now);
    const session = claims?.sid && isUuid(claims.sid) && isUuid(claims.sub)
      ? await sessionMerchant(deps, claims.sid, claims.sub, now)
      : null;
    if (session?.live) {
      // The cookie rides along on another site's requests: an unsafe API one is refused
      // (csrf.ts `crossSite`); the dashboard's forms have their own two checks (csrf.ts).
      if (
        !SAFE_METHOD.test(c.req.method) && c.req.path.startsWith("/api/") &&
        crossSite(c, deps.config)
      ) {
        throw fail(403, M.crossSiteRefused);
      }
      const merchant = session.merchant;
      if (!merchant) throw fail(404, msg.merchantMissing);
      return {
        via: "cookie",
        merchant,
        sessionId: claims!.sid,
        environment: session.mode,
        profile: keyProfile(session.mode),
        subject: `merchant:${merchant.id}`,
      };
    }
  }

  if (!rawKey) {
    // A key in a form this route does not read (a bearer on an x-api-key route) is no credential
    // here, but a key this route refuses in every form is refused as such (rule 3: 403).
    if (bearerKey && opts.accept.includes("apiKey")) {
      const stray = await resolveKey(deps, bearerKey);
      if (stray.status === "ok" && refusedKind(opts, kinds, stray.row.kind)) {
        throw fail(403, msg.forbidden);
      }
    }
    throw fail(401, cookie ? msg.invalidSession : msg.missing);
  }
  const found = await resolveKey(deps, rawKey);
  if (found.status === "malformed") throw fail(401, msg.missing);
  if (found.status === "unknown") throw fail(opts.invalidKeyStatus ?? 401, msg.invalidKey);
  const row = found.row;
  if (refusedKind(opts, kinds, row.kind)) throw fail(403, msg.forbidden);
  if (opts.scope && row.scopes && !row.scopes.includes(opts.scope)) throw fail(403, msg.forbidden);
  const merchant = found.merchant;
  return {
    via: header ? "apiKey" : "bearer",
    merchant,
    key: {
      id: row.id,
      kind: row.kind,
      environment: row.environment,
      profile: keyProfile(row.environment),
      scopes: row.scopes,
      raw: rawKey,
    },
    environment: row.environment,
    profile: keyProfile(row.environment),
    subject: `key:${row.id}`,
  };
}

/**
 * What a request without a usable credential is told: a session-only route says so; a route that
 * reads the key only from `x-api-key` names that header (a caller who put the key in
 * Authorization learns where it goes); every other route keeps the spec's text.
 */
function missingText(accept: Credential[]): string {
  if (accept.length === 1 && accept[0] === "cookie") return M.notAuthenticated;
  if (accept.length === 1 && accept[0] === "apiKey") return M.authRequiredApiKey;
  return M.authRequired;
}

/** The key of an `Authorization: Bearer <key>` header; "" for another Authorization value. */
function bearerOf(authz: string | undefined): string | undefined {
  if (authz === undefined) return undefined;
  return /^Bearer\s+(\S+)\s*$/i.exec(authz)?.[1] ?? "";
}

/** A key of a kind this route never takes: another kind, or a publishable key on a write. */
function refusedKind(opts: GuardOptions, kinds: KeyKind[], kind: KeyKind): boolean {
  return !kinds.includes(kind) || (opts.write === true && kind === "publishable");
}

/**
 * The chain of the request's environment (a key's prefix, a session's mode): the only chain whose
 * records the request may see or act on. Routes behind a guard that accepts credentials.
 */
export function profileOf(c: Context<AuthEnv>): ProfileName {
  const p = c.get("auth").profile;
  if (!p) throw new ApiError(401, M.authRequired);
  return p;
}

/** The authenticated merchant (routes behind a guard that accepts credentials). */
export function merchantOf(c: Context<AuthEnv>): MerchantRow {
  const m = c.get("auth").merchant;
  if (!m) throw new ApiError(401, M.authRequired);
  return m;
}
