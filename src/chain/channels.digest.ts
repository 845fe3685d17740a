/**
 * The batch-settlement binding's EIP-712 digests on the paid path (a channel's id, a voucher's
 * digest), built directly: the struct's words written into one buffer (each checked as viem's
 * encoder would, abi-words.ts; a uint40 or uint128 out of range throws) and hashed with the
 * `keccak` binding where it loads (tx-signing.ts), the domain's separator computed once. viem's
 * `hashTypedData` took ~0.2–0.45 ms of the event loop for each, in JavaScript; this takes a few
 * µs. The same bytes as `hashTypedData` (tests/unit/channels-digest.test.ts).
 */
import { domainSeparator, type Hex, keccak256, stringToHex } from "viem";
import { keccak256Bytes } from "./tx-signing.ts";
import { addressWord, bytes32Word, uintWord } from "./abi-words.ts";
import type { ChannelConfig } from "./channels.defs.ts";

export interface ChannelDomain {
  name: string;
  version: string;
  chainId: number;
  verifyingContract: Hex;
}

const typeHash = (type: string) => keccak256(stringToHex(type)).slice(2);
const CHANNEL_CONFIG_TYPEHASH = typeHash(
  "ChannelConfig(address payer,address payerAuthorizer,address receiver," +
    "address receiverAuthorizer,address token,uint40 withdrawDelay,bytes32 salt)",
);
const VOUCHER_TYPEHASH = typeHash("Voucher(bytes32 channelId,uint128 maxClaimableAmount)");

/** Each domain's `0x1901 ‖ separator`, the first 34 bytes of every digest under it. */
const prefixes = new Map<string, Uint8Array>();

function prefix(d: ChannelDomain): Uint8Array {
  const key = `${d.name}\n${d.version}\n${d.chainId}\n${d.verifyingContract.toLowerCase()}`;
  let p = prefixes.get(key);
  if (!p) {
    p = new Uint8Array(34);
    p[0] = 0x19;
    p[1] = 0x01;
    p.set(Uint8Array.fromHex(domainSeparator({ domain: d }).slice(2)), 2);
    prefixes.set(key, p);
  }
  return p;
}

function digest(d: ChannelDomain, structWords: string): Uint8Array {
  const message = new Uint8Array(66);
  message.set(prefix(d), 0);
  message.set(keccak256Bytes(Uint8Array.fromHex(structWords)), 34);
  return keccak256Bytes(message);
}

function uintBits(v: bigint | number, bits: number): string {
  const n = BigInt(v);
  if (n < 0n || n >= 1n << BigInt(bits)) {
    throw new RangeError(`a uint${bits} field is out of range`);
  }
  return uintWord(n);
}

/** A channel's id: the EIP-712 hash of its ChannelConfig under the settlement's domain. */
export function channelIdOf(d: ChannelDomain, c: ChannelConfig): Hex {
  const words = CHANNEL_CONFIG_TYPEHASH + addressWord(c.payer) + addressWord(c.payerAuthorizer) +
    addressWord(c.receiver) + addressWord(c.receiverAuthorizer) + addressWord(c.token) +
    uintBits(c.withdrawDelay, 40) + bytes32Word(c.salt);
  return `0x${digest(d, words).toHex()}`;
}

/** The digest a voucher for `maxClaimable` on `channelId` signs. */
export function voucherDigest(d: ChannelDomain, channelId: Hex, maxClaimable: bigint): Uint8Array {
  return digest(d, VOUCHER_TYPEHASH + bytes32Word(channelId) + uintBits(maxClaimable, 128));
}
