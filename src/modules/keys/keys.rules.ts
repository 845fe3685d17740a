/**
 * API key formats and hashing: pure functions. A key is a prefix naming its kind and
 * environment, then 48 random hex characters. Only its SHA-256 is stored; the first 16 random
 * characters are a lookup handle (indexed), the hash is compared in constant time.
 */
import { sha256 } from "../../codec.ts";
import { timingSafeEqual } from "node:crypto";
import { Buffer } from "node:buffer";
import type { ProfileName } from "../../chain/profiles.ts";

/** `operator`: the service operator's credential (`deno task operator:key`), no merchant's. */
export type KeyKind = "merchant" | "secret" | "publishable" | "operator";
export type KeyEnvironment = "test" | "live";

const PREFIXES: Record<string, { kind: KeyKind; environment: KeyEnvironment }> = {
  svc_live_: { kind: "merchant", environment: "live" },
  svc_sec_test_: { kind: "secret", environment: "test" },
  svc_sec_: { kind: "secret", environment: "live" },
  svc_pub_test_: { kind: "publishable", environment: "test" },
  svc_pub_: { kind: "publishable", environment: "live" },
  svc_op_: { kind: "operator", environment: "live" },
};

const KEY_PATTERN =
  /^(svc_live_|svc_sec_test_|svc_pub_test_|svc_sec_|svc_pub_|svc_op_)([0-9a-f]{48})$/;

export function prefixFor(kind: KeyKind, environment: KeyEnvironment): string {
  if (kind === "merchant") return "svc_live_";
  if (kind === "operator") return "svc_op_";
  const base = kind === "secret" ? "svc_sec_" : "svc_pub_";
  return environment === "test" ? `${base}test_` : base;
}

export interface ParsedKey {
  kind: KeyKind;
  environment: KeyEnvironment;
  lookup: string;
}

/** The kind, environment and lookup handle of a well-formed key; null for anything else. */
export function parseKey(raw: string): ParsedKey | null {
  const m = KEY_PATTERN.exec(raw);
  if (!m) return null;
  return { ...PREFIXES[m[1]], lookup: m[2].slice(0, 16) };
}

export function generateKey(kind: KeyKind, environment: KeyEnvironment): string {
  const bytes = crypto.getRandomValues(new Uint8Array(24));
  return prefixFor(kind, environment) +
    Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

export function hashKey(raw: string): string {
  return sha256(raw);
}

export function sameHash(a: string, b: string): boolean {
  const x = Buffer.from(a, "hex");
  const y = Buffer.from(b, "hex");
  return x.length === y.length && timingSafeEqual(x, y);
}

/** The spec's hint: the first 16 characters followed by `...`. */
export function keyHint(raw: string): string {
  return `${raw.slice(0, 16)}...`;
}

/** Test keys act on the testnet; live and merchant keys on production. */
export function keyProfile(environment: KeyEnvironment): ProfileName {
  return environment === "test" ? "testnet" : "production";
}

/** Scopes a secret key may be limited to; none given means all. */
export const KEY_SCOPES = [
  "payments",
  "escrow",
  "streams",
  "payroll",
  "x402",
  "agents",
  "jobs",
  "bridge",
] as const;
export type KeyScope = typeof KEY_SCOPES[number];
