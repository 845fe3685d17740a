/**
 * Signing the sender's transactions (EIP-1559) without hashing them in JavaScript: a 500-payment
 * settlement batch carries ~384 kB of call data, and viem's `signTransaction` hashes the
 * serialized transaction with a JavaScript keccak (~25 ms for that size), then the sender hashes
 * the signed bytes again for the transaction's hash. Here both hashes are the `keccak` package's
 * prebuilt Node-API binding (the XKCP implementation, ~1 ms), the serialization writes the bytes
 * once, and the account only signs the 32-byte digest. Where the binding does not load, viem's
 * keccak answers: the same bytes, slower. tests/unit/tx-signing.test.ts compares both with viem's
 * `signTransaction`, byte for byte.
 */
import { Buffer } from "node:buffer";
import { type Hex, keccak256 as jsKeccak256, type LocalAccount } from "viem";

interface KeccakState {
  initialize(rate: number, capacity: number): void;
  absorb(data: Uint8Array): void;
  squeeze(length: number): Uint8Array;
}

/**
 * The binding's sponge, taken from the package's own constructor (its streaming wrapper costs
 * more than a small hash). Null where the binding does not load, or answers wrongly.
 */
const nativeState: KeccakState | null = await import("keccak/bindings.js")
  .then((m) => {
    const create = (m.default ?? m) as (algorithm: string) => { _state?: KeccakState };
    const State = create("keccak256")._state?.constructor as (new () => KeccakState) | undefined;
    if (!State) return null;
    const state = new State();
    // keccak256("") : a binding that loads but hashes otherwise is not used.
    state.initialize(1088, 512);
    state.absorb(Buffer.alloc(0));
    const empty = toHex(state.squeeze(32));
    return empty === "0xc5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470"
      ? state
      : null;
  })
  .catch(() => null);

/** Whether keccak runs natively here (else in JavaScript, slower). */
export const nativeKeccak = nativeState !== null;

/** keccak256 of bytes. */
export function keccak256Bytes(data: Uint8Array): Uint8Array {
  if (!nativeState) return fromHex(jsKeccak256(data));
  nativeState.initialize(1088, 512);
  nativeState.absorb(Buffer.from(data.buffer, data.byteOffset, data.byteLength));
  return new Uint8Array(nativeState.squeeze(32));
}

/** keccak256 of bytes or of hex, as hex. */
export function keccak256Hex(data: Uint8Array | Hex): Hex {
  return toHex(keccak256Bytes(typeof data === "string" ? fromHex(data) : data));
}

export interface Eip1559Tx {
  chainId: number;
  nonce: number | bigint;
  maxPriorityFeePerGas: bigint;
  maxFeePerGas: bigint;
  gas: bigint;
  to?: string | null;
  value?: bigint;
  data?: Hex;
}

/**
 * Signs an EIP-1559 transaction: its raw bytes and hash. The account signs the digest only
 * (`sign`); an account that cannot (none of ours today) signs the whole transaction itself.
 */
export async function signEip1559(
  account: LocalAccount,
  tx: Eip1559Tx,
): Promise<{ raw: Hex; txHash: Hex }> {
  if (!account.sign) {
    const raw = await account.signTransaction({
      chainId: tx.chainId,
      type: "eip1559",
      nonce: Number(tx.nonce),
      to: (tx.to ?? undefined) as Hex | undefined,
      data: tx.data,
      value: tx.value ?? 0n,
      gas: tx.gas,
      maxFeePerGas: tx.maxFeePerGas,
      maxPriorityFeePerGas: tx.maxPriorityFeePerGas,
    });
    return { raw, txHash: keccak256Hex(raw) };
  }
  const digest = keccak256Bytes(serializeEip1559(tx));
  const sig = fromHex(await account.sign({ hash: toHex(digest) }));
  if (sig.length !== 65) throw new Error("the account's signature is not 65 bytes");
  const v = sig[64];
  const yParity = v === 27 || v === 0 ? 0 : v === 28 || v === 1 ? 1 : -1;
  if (yParity < 0) throw new Error(`the account's signature has v ${v}`);
  const signed = serializeEip1559(tx, { yParity, r: sig.subarray(0, 32), s: sig.subarray(32, 64) });
  return { raw: toHex(signed), txHash: toHex(keccak256Bytes(signed)) };
}

/** `0x02 || rlp([chainId, nonce, tip, maxFee, gas, to, value, data, [], (yParity, r, s)])`. */
export function serializeEip1559(
  tx: Eip1559Tx,
  sig?: { yParity: number; r: Uint8Array; s: Uint8Array },
): Uint8Array {
  const fields: Uint8Array[] = [
    integer(BigInt(tx.chainId)),
    integer(BigInt(tx.nonce)),
    integer(tx.maxPriorityFeePerGas),
    integer(tx.maxFeePerGas),
    integer(tx.gas),
    tx.to ? fromHex(tx.to) : new Uint8Array(0),
    integer(tx.value ?? 0n),
    fromHex(tx.data ?? "0x"),
  ];
  const items: Uint8Array[] = fields.map(rlpString);
  items.push(Uint8Array.of(0xc0)); // the access list: empty
  if (sig) {
    items.push(rlpString(integer(BigInt(sig.yParity))));
    items.push(rlpString(trim(sig.r)));
    items.push(rlpString(trim(sig.s)));
  }
  const body = items.reduce((n, x) => n + x.length, 0);
  const head = lengthPrefix(body, 0xc0);
  const out = new Uint8Array(1 + head.length + body);
  out[0] = 0x02;
  out.set(head, 1);
  let at = 1 + head.length;
  for (const x of items) {
    out.set(x, at);
    at += x.length;
  }
  return out;
}

function rlpString(b: Uint8Array): Uint8Array {
  if (b.length === 1 && b[0] < 0x80) return b;
  const head = lengthPrefix(b.length, 0x80);
  const out = new Uint8Array(head.length + b.length);
  out.set(head);
  out.set(b, head.length);
  return out;
}

/** RLP's length prefix: `offset + length` up to 55, else `offset + 55 + bytes(length)` and them. */
function lengthPrefix(length: number, offset: number): Uint8Array {
  if (length <= 55) return Uint8Array.of(offset + length);
  const len = integer(BigInt(length));
  return Uint8Array.of(offset + 55 + len.length, ...len);
}

/** A non-negative integer's big-endian bytes, no leading zeros (zero is empty). */
function integer(n: bigint): Uint8Array {
  if (n < 0n) throw new RangeError("a transaction field is negative");
  if (n === 0n) return new Uint8Array(0);
  const h = n.toString(16);
  return fromHex(`0x${h.length % 2 ? "0" : ""}${h}`);
}

function trim(b: Uint8Array): Uint8Array {
  let i = 0;
  while (i < b.length && b[i] === 0) i++;
  return b.subarray(i);
}

function fromHex(h: string): Uint8Array {
  return Uint8Array.fromHex(h.startsWith("0x") ? h.slice(2) : h);
}

function toHex(b: Uint8Array): Hex {
  return `0x${b.toHex()}`;
}
