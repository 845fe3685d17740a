/** Pure rules for merchant accounts: passwords (scrypt), verification codes, hints. */
import { sha256 } from "../../codec.ts";
import { scrypt, timingSafeEqual } from "node:crypto";
import { Buffer } from "node:buffer";

const SCRYPT = { N: 16384, r: 8, p: 1, keylen: 32 };

/** Signup's bounds. A login beyond them cannot match an account, so it is refused unhashed. */
export const PASSWORD_MIN_LENGTH = 8;
export const PASSWORD_MAX_LENGTH = 200;
export const EMAIL_MAX_LENGTH = 254;

function derive(password: string, salt: Buffer, p = SCRYPT): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scrypt(
      password,
      salt,
      p.keylen,
      { N: p.N, r: p.r, p: p.p, maxmem: 64 * 1024 * 1024 },
      (e, k) => e ? reject(e) : resolve(k),
    )
  );
}

/** `scrypt$N$r$p$salt$hash`, base64 parts, a random 16-byte salt per password. */
export async function hashPassword(password: string): Promise<string> {
  const salt = Buffer.from(crypto.getRandomValues(new Uint8Array(16)));
  const key = await derive(password, salt);
  return `scrypt$${SCRYPT.N}$${SCRYPT.r}$${SCRYPT.p}$${salt.toString("base64")}$${
    key.toString("base64")
  }`;
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parts = stored.split("$");
  if (parts.length !== 6 || parts[0] !== "scrypt") return false;
  const [N, r, p] = parts.slice(1, 4).map(Number);
  const salt = Buffer.from(parts[4], "base64");
  const expected = Buffer.from(parts[5], "base64");
  const key = await derive(password, salt, { N, r, p, keylen: expected.length });
  return timingSafeEqual(key, expected);
}

/** A password check with the same cost for an unknown email, so timing does not reveal accounts. */
export const DUMMY_PASSWORD_HASH =
  "scrypt$16384$8$1$AAAAAAAAAAAAAAAAAAAAAA==$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";

const CODE_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
export const CODE_TTL_MS = 10 * 60 * 1000;
export const MAX_CODE_ATTEMPTS = 5;

/** Six characters from A–Z and 0–9, uniformly (rejection sampling on random bytes). */
export function newVerificationCode(): string {
  let out = "";
  while (out.length < 6) {
    for (const b of crypto.getRandomValues(new Uint8Array(12))) {
      if (b < 252 && out.length < 6) out += CODE_ALPHABET[b % 36];
    }
  }
  return out;
}

export function hashCode(merchantKeyMaterial: string, code: string): string {
  return sha256(`${merchantKeyMaterial}:${code.toUpperCase()}`);
}

export function sameCodeHash(a: string, b: string): boolean {
  const x = Buffer.from(a, "hex");
  const y = Buffer.from(b, "hex");
  return x.length === y.length && timingSafeEqual(x, y);
}

export type CodeCheck = "ok" | "wrong" | "expired" | "locked" | "none";

/** The outcome of presenting `code`; the order matters: a dead code stays dead. */
export function checkCode(
  m: {
    verificationCodeHash: string | null;
    verificationExpiresAt: Date | null;
    verificationAttempts: number;
    email: string;
  },
  code: string,
  now: Date,
): CodeCheck {
  if (!m.verificationCodeHash || !m.verificationExpiresAt) return "none";
  if (m.verificationAttempts >= MAX_CODE_ATTEMPTS) return "locked";
  if (now.getTime() > m.verificationExpiresAt.getTime()) return "expired";
  return sameCodeHash(hashCode(m.email, code), m.verificationCodeHash) ? "ok" : "wrong";
}

/**
 * Whether a registration's code can still verify it (not expired, not killed by wrong tries):
 * while it can, a new signup for the email is refused (the repo's conditional upsert says the same).
 */
export function codeLive(
  m: {
    verificationCodeHash: string | null;
    verificationExpiresAt: Date | null;
    verificationAttempts: number;
  },
  now: Date,
): boolean {
  return m.verificationCodeHash !== null && m.verificationExpiresAt !== null &&
    m.verificationAttempts < MAX_CODE_ATTEMPTS &&
    now.getTime() <= m.verificationExpiresAt.getTime();
}

/**
 * Whether a registration's code has run out its time (or there is none). A code killed by wrong
 * tries before then is dead but not expired: until it would have expired, only its own registrant
 * (the same password) may sign up again, or anyone could kill a stranger's code with five wrong
 * guesses and put their own password on the registration the stranger then verifies.
 */
export function codeExpired(
  m: { verificationCodeHash: string | null; verificationExpiresAt: Date | null },
  now: Date,
): boolean {
  return m.verificationCodeHash === null || m.verificationExpiresAt === null ||
    now.getTime() > m.verificationExpiresAt.getTime();
}

export function normaliseEmail(email: string): string {
  return email.trim().toLowerCase();
}
