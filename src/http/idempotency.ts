/**
 * `Idempotency-Key` (Stripe semantics) for POST routes that move money or create resources:
 * one line per route, `app.post(path, guard(...), idempotent(deps), handler)`.
 *
 * - The key is scoped to the caller (`idempotencyScope`): a merchant's API keys of one kind and
 *   environment, a merchant session in its mode, a consumer session's account (the route's
 *   `ScopeOf`), or a client address.
 * - Same key and same request (method, path, body) → the stored status and body again, with
 *   `Idempotent-Replayed: true`. Same key, other request → 400. Still running → 409. A JSON body
 *   is compared by its parameters, not its bytes: other spacing or key order is the same request
 *   (src/http/canonical-json.ts).
 * - A response is stored only once the handler ran, and kept 24 hours. 400, 5xx, 408, 409 and
 *   429 answers are not stored: the request may be retried with the same key (a 400 is refused
 *   input, and a refusal writes nothing, so the corrected request may take the key, as with
 *   Stripe; a 409 refuses for now: another request acting on the resource, or a crashed one's
 *   claim not lapsed yet, after which the retry must run and find what was done).
 * - Stored bodies are sealed (AES-256-GCM) with a key derived from the server secret and the
 *   Idempotency-Key itself, which is stored only as a hash: a response that carries an API key
 *   is unreadable from the database alone.
 * - Only the status and body are stored, never headers. A route whose answer also sets a session
 *   cookie gives `onReplay`, which sets a fresh one on the replay from the stored body (the
 *   consumer session: a new token for the recorded account), so no live token is kept.
 * - The request that runs holds the key's claim (src/db/claims.ts), a lease its process extends
 *   while it works. A request that finds the key in progress while the claim is held answers 409;
 *   one that finds it in progress with the claim lapsed (its owner died: kill -9, a crash) takes
 *   the key over and runs the handler again. Every handler that moves money derives its chain
 *   intent from the Idempotency-Key, so the re-run finds the dead owner's work and answers its
 *   reference instead of doing it twice; the answer is then stored as usual.
 */
import type { Context, MiddlewareHandler } from "hono";
import { createHash, createHmac } from "node:crypto";
import type { Deps } from "../deps.ts";
import { ApiError } from "./errors.ts";
import { M } from "./messages.ts";
import type { Auth, AuthEnv } from "./auth.ts";
import { clientAddress } from "./rate-limit.ts";
import * as repo from "./idempotency.repo.ts";
import { withClaim } from "../db/claims.ts";
import { DomainError } from "../errors.ts";
import { canonicalBody } from "./canonical-json.ts";

const TTL_MS = 24 * 3600 * 1000;
/**
 * How long a key's claim outlives its owner: a retry after a crash waits this long (409) before it
 * takes the key over. The owner extends it every third of this while its handler runs.
 */
export const IDEMPOTENCY_LEASE_MS = 15_000;
const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

/**
 * What a replay adds that the stored body cannot carry (a session cookie), set on `c` from the
 * stored status and body; runs under the key's claim, before the stored answer is sent.
 */
export type ReplayHook = (
  x: { c: Context<AuthEnv>; deps: Deps; status: number; body: unknown },
) => void | Promise<void>;

/** A route's own caller, for keys the guard's caller does not scope (a consumer session). */
export type ScopeOf = (c: Context<AuthEnv>, deps: Deps) => Promise<string | undefined>;

export function idempotent(
  deps: Deps,
  onReplay?: ReplayHook,
  scopeOf?: ScopeOf,
): MiddlewareHandler<AuthEnv> {
  return async (c, next) => {
    const key = c.req.header("idempotency-key");
    if (key === undefined) return await next();
    if (!KEY_PATTERN.test(key)) throw new ApiError(400, M.idempotencyKeyInvalid);
    const scope = (await scopeOf?.(c, deps)) ?? idempotencyScope(c.get("auth")) ??
      `ip:${clientAddress(c, deps.config)}`;
    const keyHash = sha256(key);
    const url = new URL(c.req.url);
    const head = `${c.req.method}\n${url.pathname}${url.search}\n`;
    const body = await c.req.text();
    const k: Keyed = {
      scope,
      key,
      keyHash,
      requestHash: sha256(head + canonicalBody(body)),
      // What a key stored before 2026-12-01 recorded: the body's bytes.
      bytesHash: sha256(head + body),
    };

    let replay: Response | "run";
    let claimed = false;
    try {
      // One request at a time per key, in every process; the claim is not waited for.
      replay = await withClaim(
        deps.sql,
        `idempotency:${scope}:${keyHash}`,
        () => {
          claimed = true;
          return runClaimed(deps, k, next, c, onReplay);
        },
        { ttlMs: IDEMPOTENCY_LEASE_MS, waitMs: 0 },
      );
    } catch (e) {
      if (claimed || !(e instanceof DomainError) || e.code !== "resource_busy") throw e;
      // Another live request holds the key: a retry replaying the stored answer, or the first
      // request still at work.
      const prior = await repo.find(deps.sql, scope, keyHash);
      if (prior && !sameRequest(prior.requestHash, k)) throw mismatch();
      // Finished: every identical retry gets the answer, however many arrive at once (they got
      // 409 "still in progress" while another retry held the key to replay it: an audit).
      if (prior && prior.status !== "in_progress" && prior.responseSealed) {
        return await replayStored(deps, k, prior, c, onReplay);
      }
      throw new ApiError(409, M.idempotencyInFlight, { hint: M.idempotencyInFlightHint });
    }
    if (replay instanceof Response) return replay;
  };
}

/**
 * Whose keys these are (an outside audit, 2026-11-30, found both gaps):
 * - a merchant session's, in its mode: a session switches between test and live, and without
 *   the mode a live-mode request replayed the answer a test-mode one got (a testnet payment link
 *   or withdrawal as the live result);
 * - an API key's, its merchant's keys of the same kind and environment, as Stripe scopes keys to
 *   the account: a retry under the key that replaced a rotated one (or under a second secret
 *   key) finds the first answer instead of making a second checkout session, link or wallet.
 */
export function idempotencyScope(auth: Auth | undefined): string | undefined {
  if (!auth) return undefined;
  if (auth.via === "cookie" && auth.environment) return `${auth.subject}:${auth.environment}`;
  if (auth.key && auth.merchant) {
    return `keys:${auth.merchant.id}:${auth.key.environment}:${auth.key.kind}`;
  }
  return auth.subject;
}

interface Keyed {
  scope: string;
  key: string;
  keyHash: string;
  /** Method, path and query, and the body as its meaning (src/http/canonical-json.ts). */
  requestHash: string;
  bytesHash: string;
}

/** The request a key was first used with is this one: the same parameters, however spaced. */
const sameRequest = (stored: string, k: Keyed) =>
  stored === k.requestHash || stored === k.bytesHash;

/**
 * Under the key's claim: replay a stored answer, or run the handler (a new key, or one whose
 * previous owner died in progress) and store its answer.
 */
async function runClaimed(
  deps: Deps,
  k: Keyed,
  next: () => Promise<void>,
  c: Context<AuthEnv>,
  onReplay: ReplayHook | undefined,
): Promise<Response | "run"> {
  for (let round = 0;; round++) {
    const now = deps.clock.now();
    const expiresAt = new Date(now.getTime() + TTL_MS);
    const fresh = {
      scope: k.scope,
      keyHash: k.keyHash,
      requestHash: k.requestHash,
      now,
      expiresAt,
    };
    if (await repo.claim(deps.sql, fresh)) break;
    const prior = await repo.find(deps.sql, k.scope, k.keyHash);
    if (!prior) continue; // released in between; claim again
    if (prior.expiresAt <= now && round < 2) {
      await repo.release(deps.sql, k.scope, k.keyHash, prior.createdAt);
      continue;
    }
    if (!sameRequest(prior.requestHash, k)) throw mismatch();
    if (prior.status === "in_progress") {
      // We hold the claim, so its owner is gone: this request finishes the work.
      deps.log.warn("idempotency key taken over from a request that died in progress", {
        startedAt: prior.createdAt.toISOString(),
      });
      await repo.restart(deps.sql, { ...fresh, createdAt: prior.createdAt });
      c.set("idempotencyResumed", true);
      break;
    }
    return await replayStored(deps, k, prior, c, onReplay);
  }

  try {
    await next();
  } catch (e) {
    await repo.release(deps.sql, k.scope, k.keyHash);
    throw e;
  }
  const status = c.res.status;
  if (status >= 500 || status === 400 || status === 408 || status === 409 || status === 429) {
    await repo.release(deps.sql, k.scope, k.keyHash);
    return "run";
  }
  const { sealed, iv } = await seal(deps, k.scope, k.key, await c.res.clone().text());
  await repo.complete(deps.sql, {
    scope: k.scope,
    keyHash: k.keyHash,
    status,
    sealed,
    iv,
    now: deps.clock.now(),
  });
  return "run";
}

function mismatch() {
  return new ApiError(400, M.idempotencyMismatch, { hint: M.idempotencyMismatchHint });
}

function sha256(s: string): string {
  return createHash("sha256").update(s).digest("hex");
}

async function sealingKey(deps: Deps, scope: string, key: string): Promise<CryptoKey> {
  const raw = createHmac("sha256", deps.config.JWT_SECRET!).update(`idempotency\n${scope}\n${key}`)
    .digest();
  return await crypto.subtle.importKey("raw", new Uint8Array(raw), "AES-GCM", false, [
    "encrypt",
    "decrypt",
  ]);
}

async function seal(deps: Deps, scope: string, key: string, body: string) {
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const k = await sealingKey(deps, scope, key);
  const sealed = new Uint8Array(
    await crypto.subtle.encrypt({ name: "AES-GCM", iv }, k, new TextEncoder().encode(body)),
  );
  return { sealed, iv };
}

async function unseal(deps: Deps, scope: string, key: string, sealed: Uint8Array, iv: Uint8Array) {
  const k = await sealingKey(deps, scope, key);
  const plain = await crypto.subtle.decrypt(
    { name: "AES-GCM", iv: new Uint8Array(iv) },
    k,
    new Uint8Array(sealed),
  );
  return new TextDecoder().decode(plain);
}

/** A key's stored answer, as the first request got it (`Idempotent-Replayed: true`). */
async function replayStored(
  deps: Deps,
  k: Keyed,
  prior: NonNullable<Awaited<ReturnType<typeof repo.find>>>,
  c: Context<AuthEnv>,
  onReplay: ReplayHook | undefined,
): Promise<Response> {
  const body = await unseal(deps, k.scope, k.key, prior.responseSealed!, prior.responseIv!);
  const status = prior.responseStatus!;
  if (onReplay) await onReplay({ c, deps, status, body: JSON.parse(body) });
  // Through `c`, so what the hook set (a cookie) goes with the stored answer.
  return c.body(body, status as never, {
    "content-type": "application/json; charset=UTF-8",
    "idempotent-replayed": "true",
  });
}
