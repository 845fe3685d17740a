/**
 * `Idempotency-Key` (Stripe semantics) for POST routes that move money or create resources:
 * one line per route, `app.post(path, guard(...), idempotent(deps), handler)`.
 *
 * - The key is scoped to the credential (API key, merchant session, or client address).
 * - Same key and same request (method, path, body) → the stored status and body again, with
 *   `Idempotent-Replayed: true`. Same key, other request → 400. Still running → 409.
 * - A response is stored only once the handler ran, and kept 24 hours. 400, 5xx, 408 and 429
 *   answers are not stored: the request may be retried with the same key (a 400 is refused input,
 *   and a refusal writes nothing, so the corrected request may take the key, as with Stripe).
 * - Stored bodies are sealed (AES-256-GCM) with a key derived from the server secret and the
 *   Idempotency-Key itself, which is stored only as a hash: a response that carries an API key
 *   is unreadable from the database alone.
 */
import type { MiddlewareHandler } from "hono";
import { createHash, createHmac } from "node:crypto";
import type { Deps } from "../deps.ts";
import { ApiError } from "./errors.ts";
import { M } from "./messages.ts";
import type { AuthEnv } from "./auth.ts";
import { clientAddress } from "./rate-limit.ts";
import * as repo from "./idempotency.repo.ts";

const TTL_MS = 24 * 3600 * 1000;
/** An in-progress record older than this is taken to be from a crashed process. */
const ABANDONED_MS = 5 * 60 * 1000;
const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

export function idempotent(deps: Deps): MiddlewareHandler<AuthEnv> {
  return async (c, next) => {
    const key = c.req.header("idempotency-key");
    if (key === undefined) return await next();
    if (!KEY_PATTERN.test(key)) throw new ApiError(400, M.idempotencyKeyInvalid);
    const scope = c.get("auth")?.subject ?? `ip:${clientAddress(c, deps.config)}`;
    const keyHash = sha256(key);
    const url = new URL(c.req.url);
    const requestHash = sha256(
      `${c.req.method}\n${url.pathname}${url.search}\n${await c.req.text()}`,
    );

    for (let round = 0;; round++) {
      const now = deps.clock.now();
      if (
        await repo.claim(deps.sql, {
          scope,
          keyHash,
          requestHash,
          now,
          expiresAt: new Date(now.getTime() + TTL_MS),
        })
      ) {
        break;
      }
      const prior = await repo.find(deps.sql, scope, keyHash);
      if (!prior) continue; // released in between; claim again
      const stale = prior.expiresAt <= now ||
        (prior.status === "in_progress" &&
          now.getTime() - prior.createdAt.getTime() > ABANDONED_MS);
      if (stale && round < 2) {
        await repo.release(deps.sql, scope, keyHash, prior.createdAt);
        continue;
      }
      if (prior.requestHash !== requestHash) {
        throw new ApiError(400, M.idempotencyMismatch, { hint: M.idempotencyMismatchHint });
      }
      if (prior.status === "in_progress") {
        throw new ApiError(409, M.idempotencyInFlight, { hint: M.idempotencyInFlightHint });
      }
      const body = await unseal(deps, scope, key, prior.responseSealed!, prior.responseIv!);
      return new Response(body, {
        status: prior.responseStatus!,
        headers: {
          "content-type": "application/json; charset=UTF-8",
          "idempotent-replayed": "true",
        },
      });
    }

    try {
      await next();
    } catch (e) {
      await repo.release(deps.sql, scope, keyHash);
      throw e;
    }
    const status = c.res.status;
    if (status >= 500 || status === 400 || status === 408 || status === 429) {
      await repo.release(deps.sql, scope, keyHash);
      return;
    }
    const { sealed, iv } = await seal(deps, scope, key, await c.res.clone().text());
    await repo.complete(deps.sql, { scope, keyHash, status, sealed, iv, now: deps.clock.now() });
  };
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
