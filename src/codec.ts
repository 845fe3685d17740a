/**
 * Hashes and JSON every module shares: SHA-256 as hex (request digests, stored key hashes,
 * challenge hashes) and JSON with bigint money as decimal strings (digests, typed data for pages).
 */
import { createHash } from "node:crypto";

/** SHA-256 of a UTF-8 text, as 64 lowercase hex characters. */
export function sha256(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

/** JSON text of a value whose bigints become decimal strings (`JSON.stringify` refuses them). */
export function bigintJson(value: unknown): string {
  return JSON.stringify(value, (_k, v) => typeof v === "bigint" ? v.toString() : v);
}

/** A plain JSON value: bigints as decimal strings, ready to hand to a page or a response. */
export function jsonSafe(value: unknown) {
  return JSON.parse(bigintJson(value));
}
