/**
 * A fast local check of an EOA's EIP-712 `TransferWithAuthorization` signature, for paid calls
 * that are verified on the request path: the digest is built directly (the domain separator
 * cached per domain) rather than through viem's generic typed-data encoder, and hashed with the
 * `keccak` package's native binding where it loads (tx-signing.ts): a few µs. Then
 * the signer is recovered with libsecp256k1 (the `secp256k1` package's prebuilt Node-API binding,
 * ~50 µs) — or, where that binding cannot load (a platform without a prebuilt binary), with
 * noble's secp256k1: for a payer seen recently its signature verified against its known key with
 * a precomputed table (~0.25 ms), else recovered (~0.5 ms). Same answer as viem's
 * recoverTypedDataAddress for an EOA's low-s signature (the only kind the vault accepts); anything
 * else (an ERC-1271 account) answers false here and is asked of the chain.
 */
import { secp256k1 } from "@noble/curves/secp256k1";
import { encodeAbiParameters, type Hex, keccak256, parseSignature, stringToHex, toHex } from "viem";
import { publicKeyToAddress } from "viem/accounts";
import { invert, mod } from "@noble/curves/abstract/modular";
import { keccak256Bytes } from "./tx-signing.ts";
import { addressWord, bytes32Word, uintWord } from "./abi-words.ts";

/** The part of the `secp256k1` package's binding used here. */
interface NativeSecp256k1 {
  ecdsaRecover(sig: Uint8Array, recid: number, msg32: Uint8Array, compressed?: boolean): Uint8Array;
}

/**
 * libsecp256k1, when its prebuilt binding loads on this platform (linux x64 glibc and musl,
 * darwin arm64, win32 x64); null elsewhere, and the noble path answers.
 */
const native: NativeSecp256k1 | null = await import("secp256k1/bindings.js")
  .then((m) => (m.default ?? m) as NativeSecp256k1)
  .then((b) => (typeof b.ecdsaRecover === "function" ? b : null))
  .catch(() => null);

/** Whether signatures are recovered by libsecp256k1 (else by noble, slower: worker threads). */
export const nativeRecovery = native !== null;

const DOMAIN_TYPEHASH = keccak256(
  stringToHex(
    "EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)",
  ),
);
const TRANSFER_TYPEHASH = keccak256(
  stringToHex(
    "TransferWithAuthorization(address from,address to,uint256 value,uint256 validAfter," +
      "uint256 validBefore,bytes32 nonce)",
  ),
);

export interface Domain {
  name: string;
  version: string;
  chainId: number;
  verifyingContract: `0x${string}`;
}

export interface Authorization {
  from: `0x${string}`;
  to: `0x${string}`;
  value: bigint;
  validAfter: bigint;
  validBefore: bigint;
  nonce: Hex;
}

const separators = new Map<string, Hex>();

function separator(d: Domain): Hex {
  const k = `${d.name}\n${d.version}\n${d.chainId}\n${d.verifyingContract.toLowerCase()}`;
  let s = separators.get(k);
  if (!s) {
    s = keccak256(encodeAbiParameters(
      [{ type: "bytes32" }, { type: "bytes32" }, { type: "bytes32" }, { type: "uint256" }, {
        type: "address",
      }],
      [
        DOMAIN_TYPEHASH,
        keccak256(stringToHex(d.name)),
        keccak256(stringToHex(d.version)),
        BigInt(d.chainId),
        d.verifyingContract,
      ],
    ));
    separators.set(k, s);
  }
  return s;
}

const TRANSFER_TYPEHASH_BYTES = Uint8Array.fromHex(TRANSFER_TYPEHASH.slice(2));
/** Each domain's `0x1901 ‖ separator`, the first 34 bytes of every digest's preimage under it. */
const prefixes = new Map<string, Uint8Array>();

/**
 * The EIP-712 digest of the authorization under `domain`, as bytes: the struct's words written
 * directly into one buffer (each checked as viem's encoder would, abi-words.ts) and hashed
 * natively where the `keccak` binding loads (tx-signing.ts). The same bytes as viem's
 * `hashTypedData` (tests/unit/authorization-check.test.ts), in a few microseconds.
 */
export function authorizationDigestBytes(d: Domain, a: Authorization): Uint8Array {
  const struct = new Uint8Array(224);
  struct.set(TRANSFER_TYPEHASH_BYTES, 0);
  const words = [
    addressWord(a.from),
    addressWord(a.to),
    uintWord(a.value),
    uintWord(a.validAfter),
    uintWord(a.validBefore),
    bytes32Word(a.nonce),
  ];
  for (let i = 0; i < 6; i++) struct.subarray(32 * (i + 1), 32 * (i + 2)).setFromHex(words[i]);
  const sep = separator(d);
  let prefix = prefixes.get(sep);
  if (!prefix) {
    prefix = new Uint8Array(34);
    prefix[0] = 0x19;
    prefix[1] = 0x01;
    prefix.set(Uint8Array.fromHex(sep.slice(2)), 2);
    prefixes.set(sep, prefix);
  }
  const message = new Uint8Array(66);
  message.set(prefix, 0);
  message.set(keccak256Bytes(struct), 34);
  return keccak256Bytes(message);
}

/** The EIP-712 digest of the authorization under `domain`. */
export function authorizationDigest(d: Domain, a: Authorization): Hex {
  return `0x${authorizationDigestBytes(d, a).toHex()}`;
}

type Point = InstanceType<typeof secp256k1.ProjectivePoint>;
const N = secp256k1.CURVE.n;
/** n / 2, as 64 lowercase hex digits: an s above it is "high". */
const HALF_N = (N >> 1n).toString(16).padStart(64, "0");
/** Recent payers' public keys, with a small multiplication table each (~100 kB): an LRU. */
const keys = new Map<string, Point>();
const MAX_KEYS = 256;

/**
 * ECDSA verification of (r, s, yParity) against a known key, with the key's table: R = u1·G +
 * u2·Q must be the point whose x is r and whose y has the signature's parity (what ecrecover,
 * given v, would need to find Q again).
 */
function verifyWith(q: Point, digest: Uint8Array, r: bigint, s: bigint, yParity: number) {
  const h = mod(BigInt(toHex(digest)), N);
  const is = invert(s, N);
  const u1 = mod(h * is, N);
  const u2 = mod(r * is, N);
  if (u1 === 0n || u2 === 0n) return false;
  const point = secp256k1.ProjectivePoint.BASE.multiply(u1).add(q.multiply(u2)).toAffine();
  return point.x === r && Number(point.y & 1n) === yParity;
}

/**
 * Whether a 65-byte ECDSA signature has a high s: it recovers the same signer as its low-s twin,
 * but OpenZeppelin's ECDSA (our contracts' SignatureChecker) and USDC's ECRecover refuse it.
 */
export function hasHighS(signature: Hex): boolean {
  return signature.length === 132 && signature.slice(66, 130).toLowerCase() > HALF_N;
}

/** One native recovery to do: the digest, r ‖ s, the y parity, and the address it must give. */
export interface RecoveryJob {
  digest: Uint8Array;
  /** r ‖ s, 64 bytes. */
  rs: Uint8Array;
  yParity: number;
  /** The expected signer, 20 bytes. */
  from: Uint8Array;
}

/**
 * The checks before a native recovery, or null when the signature is refused without one:
 * r ‖ s ‖ v read as they are (the binding refuses an r or s of 0 or out of range); the contract
 * (OpenZeppelin ECDSA) refuses a high s, so do we (both 64 lowercase digits, so their order as
 * text is their order as numbers); v is 27/28, or 0/1. `signature` is 132 characters.
 */
export function recoveryJob(digest: Uint8Array, signature: Hex, from: string): RecoveryJob | null {
  if (hasHighS(signature)) return null;
  const bytes = Uint8Array.fromHex(signature.slice(2));
  const v = bytes[64];
  const yParity = v === 27 || v === 0 ? 0 : v === 28 || v === 1 ? 1 : -1;
  if (yParity < 0) return null;
  return { digest, rs: bytes.subarray(0, 64), yParity, from: Uint8Array.fromHex(from.slice(2)) };
}

/** Whether libsecp256k1 recovers `job.from` (false where the binding is missing or refuses). */
export function recoversTo(job: RecoveryJob): boolean {
  if (!native) return false;
  try {
    const key = native.ecdsaRecover(job.rs, job.yParity, job.digest, false);
    const address = keccak256Bytes(key.subarray(1)).subarray(12);
    for (let i = 0; i < 20; i++) if (address[i] !== job.from[i]) return false;
    return true;
  } catch {
    return false;
  }
}

/**
 * The native recovery a check of `signature` needs, or null when it is refused without one (or
 * the authorization is malformed).
 */
export function authorizationRecoveryJob(
  d: Domain,
  a: Authorization,
  signature: Hex,
): RecoveryJob | null {
  try {
    if (signature.length !== 132) return null;
    return recoveryJob(authorizationDigestBytes(d, a), signature, a.from.toLowerCase());
  } catch {
    return null;
  }
}

/** Whether `signature` is an ECDSA signature of the authorization by the EOA `a.from`. */
export function signedByEoa(
  d: Domain,
  a: Authorization,
  signature: Hex,
  engine: "native" | "noble" = native ? "native" : "noble",
): boolean {
  try {
    if (signature.length !== 132) return false;
    const digest = authorizationDigestBytes(d, a);
    const from = a.from.toLowerCase();
    if (engine === "native" && native) {
      const job = recoveryJob(digest, signature, from);
      return job !== null && recoversTo(job);
    }
    const p = parseSignature(signature);
    const sig = new secp256k1.Signature(BigInt(p.r), BigInt(p.s));
    // The contract (OpenZeppelin ECDSA) refuses high-s signatures: so do we.
    if (sig.hasHighS()) return false;
    const yParity = p.yParity ?? (p.v === 28n ? 1 : 0);
    const known = keys.get(from);
    if (known) {
      keys.delete(from);
      keys.set(from, known);
      if (verifyWith(known, digest, sig.r, sig.s, yParity)) return true;
    }
    const recovered = sig.addRecoveryBit(yParity).recoverPublicKey(digest);
    if (publicKeyToAddress(toHex(recovered.toRawBytes(false))).toLowerCase() !== from) {
      return false;
    }
    const point = secp256k1.ProjectivePoint.fromAffine(recovered.toAffine());
    point._setWindowSize(4);
    keys.set(from, point);
    if (keys.size > MAX_KEYS) keys.delete(keys.keys().next().value!);
    return true;
  } catch {
    return false;
  }
}
