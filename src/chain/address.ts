/** Address helpers for modules that must not import viem. */
import { getAddress, isAddress as viemIsAddress } from "viem";

/** A 0x-prefixed 20-byte hex address (any case; a mixed-case one must carry a valid checksum). */
export function isAddress(value: unknown): value is `0x${string}` {
  return typeof value === "string" && /^0x[0-9a-fA-F]{40}$/.test(value) &&
    viemIsAddress(value, { strict: true });
}

/** EIP-55 checksummed form. */
export function checksum(address: string): `0x${string}` {
  return getAddress(address);
}

export function lower(address: string): `0x${string}` {
  return address.toLowerCase() as `0x${string}`;
}

/** The zero address (any case): "none" where a term names an optional address. */
export function isZeroAddress(address: string): boolean {
  return /^0x0{40}$/i.test(address);
}
