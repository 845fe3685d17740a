/**
 * Session cookies carry a JWT (jose, HS256 with JWT_SECRET, algorithm pinned). The `typ` claim
 * keeps a consumer token from ever passing as a merchant token and vice versa. Time comes from
 * the injected clock so expiry is testable.
 */
import { jwtVerify, SignJWT } from "jose";
import type { Context } from "hono";
import { deleteCookie, setCookie } from "hono/cookie";
import type { Config } from "../config.ts";

export type TokenType = "merchant" | "consumer";
const ISSUER = "settlement";

export interface TokenClaims {
  sub: string;
  sid?: string;
}

// The HMAC key imported once per secret (jose would import the raw bytes on every verify).
const imported = new Map<string, Promise<CryptoKey>>();

function key(config: Config): Promise<CryptoKey> {
  const secret = config.JWT_SECRET!;
  let k = imported.get(secret);
  if (!k) {
    k = crypto.subtle.importKey(
      "raw",
      new TextEncoder().encode(secret),
      { name: "HMAC", hash: "SHA-256" },
      false,
      ["sign", "verify"],
    );
    imported.set(secret, k);
  }
  return k;
}

export async function signToken(
  config: Config,
  typ: TokenType,
  claims: TokenClaims,
  now: Date,
  ttlSeconds: number,
): Promise<string> {
  const iat = Math.floor(now.getTime() / 1000);
  const jwt = new SignJWT({ typ, ...(claims.sid ? { sid: claims.sid } : {}) })
    .setProtectedHeader({ alg: "HS256", typ: "JWT" })
    .setSubject(claims.sub)
    .setIssuer(ISSUER)
    .setAudience(typ)
    .setIssuedAt(iat)
    .setExpirationTime(iat + ttlSeconds);
  return await jwt.sign(await key(config));
}

/** The claims of a valid token of this type, or null (bad signature, expired, wrong type, ...). */
export async function verifyToken(
  config: Config,
  typ: TokenType,
  token: string,
  now: Date,
): Promise<TokenClaims | null> {
  try {
    const { payload } = await jwtVerify(token, await key(config), {
      algorithms: ["HS256"],
      issuer: ISSUER,
      audience: typ,
      currentDate: now,
    });
    if (payload.typ !== typ || typeof payload.sub !== "string") return null;
    return { sub: payload.sub, sid: typeof payload.sid === "string" ? payload.sid : undefined };
  } catch {
    return null;
  }
}

/** HttpOnly, SameSite=Lax, Secure outside local development. */
export function cookieOptions(config: Config, maxAgeSeconds: number, path = "/") {
  return {
    httpOnly: true,
    sameSite: "Lax" as const,
    secure: config.APP_ENV !== "development",
    path,
    maxAge: maxAgeSeconds,
  };
}

export function setSessionCookie(
  c: Context,
  config: Config,
  name: string,
  value: string,
  maxAgeSeconds: number,
  path = "/",
) {
  setCookie(c, name, value, cookieOptions(config, maxAgeSeconds, path));
}

export function clearCookie(c: Context, config: Config, name: string, path = "/") {
  deleteCookie(c, name, {
    path,
    secure: config.APP_ENV !== "development",
    httpOnly: true,
    sameSite: "Lax",
  });
}

export const MERCHANT_COOKIE = "merchant_token";
export const CONSUMER_COOKIE = "consumer_token";
export const WALLET_NONCE_COOKIE = "wallet_connect_nonce";
export const MERCHANT_SESSION_SECONDS = 7 * 24 * 3600;
export const CONSUMER_SESSION_SECONDS = 30 * 24 * 3600;
export const WALLET_NONCE_SECONDS = 5 * 60;
