/**
 * ABI words written as hex (64 digits, no 0x), for the encoders that build their bytes directly
 * on hot paths (the paid call's EIP-712 digest, a settlement batch's call data). Each checks its
 * value as viem's encoder would refuse it: a uint256 out of range, an address or a bytes32 that is
 * not that many bytes of hex.
 */
const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const BYTES32 = /^0x[0-9a-fA-F]{64}$/;
const HEX_BYTES = /^0x([0-9a-fA-F]{2})*$/;
const MAX_UINT = 2n ** 256n - 1n;

export function uintWord(n: bigint | number): string {
  const v = BigInt(n);
  if (v < 0n || v > MAX_UINT) throw new RangeError("a uint256 field is out of range");
  return v.toString(16).padStart(64, "0");
}

export function addressWord(a: string): string {
  if (!ADDRESS.test(a)) throw new TypeError("an address field is not 20 bytes of hex");
  return a.slice(2).toLowerCase().padStart(64, "0");
}

export function bytes32Word(h: string): string {
  if (!BYTES32.test(h)) throw new TypeError("a bytes32 field is not 32 bytes of hex");
  return h.slice(2).toLowerCase();
}

/** A `bytes` value's tail: its length word, then its bytes padded to whole words. */
export function bytesTail(h: string): string {
  if (!HEX_BYTES.test(h)) throw new TypeError("a bytes field is not hex");
  const body = h.slice(2).toLowerCase();
  const len = body.length / 2;
  return uintWord(len) + body.padEnd(Math.ceil(len / 32) * 64, "0");
}
