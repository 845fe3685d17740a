/**
 * CCTP v2's message format (header and burn message body), the finality thresholds, the
 * attestation API's answer, the fee arithmetic in basis points, and the ABI fragments of
 * Circle's contracts that ours lack. Pure: no chain access.
 */
import { concat, type Hex, pad, parseAbi, size, slice, toHex } from "viem";

/** Standard transfer: attested once the source chain has finalized the burn. */
export const FINALITY_FINALIZED = 2000;
/** Fast transfer: attested at the source's soft finality, for a fee. */
export const FINALITY_FAST = 1000;

/** A CCTP v2 message, decoded (header and burn message body). */
export interface DecodedMessage {
  version: number;
  sourceDomain: number;
  destinationDomain: number;
  nonce: Hex;
  sender: Hex;
  recipient: Hex;
  destinationCaller: Hex;
  minFinalityThreshold: number;
  finalityThresholdExecuted: number;
  messageBody: Hex;
  decodedMessageBody: {
    burnToken: Hex;
    mintRecipient: Hex;
    amount: string;
    messageSender: Hex;
    maxFee: string;
    feeExecuted: string;
    expirationBlock: string;
    hookData: Hex;
  } | null;
}

/** One entry of the attestation API's `messages` (GET /v2/messages/{sourceDomain}). */
export interface AttestedMessage {
  message: Hex;
  eventNonce: Hex;
  attestation: Hex | "PENDING";
  decodedMessage: DecodedMessage | null;
  cctpVersion: 2;
  status: "complete" | "pending_confirmations";
}

/** One tier of the fee API (GET /v2/burn/USDC/fees/{src}/{dst}): `minimumFee` in bps. */
export interface FeeTier {
  finalityThreshold: number;
  minimumFee: number | string;
}

export const toBytes32 = (address: `0x${string}`): Hex => pad(address, { size: 32 });
export const fromBytes32 = (b: Hex): `0x${string}` => slice(b, 12, 32) as `0x${string}`;

const u32 = (m: Hex, at: number) => Number(BigInt(slice(m, at, at + 4)));

export function decodeMessage(message: Hex): DecodedMessage | null {
  if (size(message) < 148) return null;
  const body = size(message) > 148 ? slice(message, 148) : "0x";
  const b = body as Hex;
  const decodedMessageBody = size(b) >= 228
    ? {
      burnToken: slice(b, 4, 36),
      mintRecipient: slice(b, 36, 68),
      amount: BigInt(slice(b, 68, 100)).toString(),
      messageSender: slice(b, 100, 132),
      maxFee: BigInt(slice(b, 132, 164)).toString(),
      feeExecuted: BigInt(slice(b, 164, 196)).toString(),
      expirationBlock: BigInt(slice(b, 196, 228)).toString(),
      hookData: (size(b) > 228 ? slice(b, 228) : "0x") as Hex,
    }
    : null;
  return {
    version: u32(message, 0),
    sourceDomain: u32(message, 4),
    destinationDomain: u32(message, 8),
    nonce: slice(message, 12, 44),
    sender: slice(message, 44, 76),
    recipient: slice(message, 76, 108),
    destinationCaller: slice(message, 108, 140),
    minFinalityThreshold: u32(message, 140),
    finalityThresholdExecuted: u32(message, 144),
    messageBody: b,
    decodedMessageBody,
  };
}

/**
 * What an attester fills into a message the source emitted: the nonce, the finality it
 * attests at, and (for a burn) the fee it executes. Everything else is kept byte for byte.
 */
export function fillMessage(
  message: Hex,
  f: { nonce: Hex; finalityThresholdExecuted: number; feeExecuted: bigint },
): Hex {
  const body = size(message) > 148 ? slice(message, 148) : "0x";
  const filledBody = size(body) >= 228
    ? concat([slice(body, 0, 164), toHex(f.feeExecuted, { size: 32 }), slice(body, 196)])
    : body;
  return concat([
    slice(message, 0, 12),
    f.nonce,
    slice(message, 44, 144),
    toHex(f.finalityThresholdExecuted, { size: 4 }),
    filledBody,
  ]);
}

/** The payment reference a burn's hook data carries (UTF-8), if any. */
export function hookText(hookData: Hex): string | null {
  if (hookData === "0x") return null;
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(
      Uint8Array.from((hookData.slice(2).match(/../g) ?? []).map((h) => parseInt(h, 16))),
    );
  } catch {
    return null;
  }
}

/**
 * A fee in basis points (the fee API's `minimumFee`: a number or a decimal string such as
 * "1.3") as an exact fraction of 10,000, never a float. Null when it is not such a value.
 */
export function parseBps(value: number | string): { num: bigint; den: bigint } | null {
  const text = String(value).trim();
  const m = /^(\d{1,9})(?:\.(\d{1,9}))?$/.exec(text);
  if (!m) return null;
  const decimals = m[2] ?? "";
  return { num: BigInt(m[1] + decimals), den: 10_000n * 10n ** BigInt(decimals.length) };
}

/** `amount × bps`, rounded up (a fee rounded down would fall short of what is asked). */
export function bpsFee(amount: bigint, bps: { num: bigint; den: bigint }): bigint {
  return (amount * bps.num + bps.den - 1n) / bps.den;
}

/**
 * The smallest burn that still leaves `net` after its fee: `feeOf` is non-decreasing, so
 * raising the burn to `net + feeOf(burn)` converges in a step or two.
 */
export async function grossForNet(
  net: bigint,
  feeOf: (gross: bigint) => Promise<bigint>,
): Promise<{ gross: bigint; fee: bigint }> {
  let gross = net;
  for (let i = 0; i < 16; i++) {
    const fee = await feeOf(gross);
    if (gross - fee >= net) return { gross, fee };
    gross = net + fee;
  }
  throw new Error(`no burn amount covers ${net} and its fee`);
}

/**
 * Circle's functions our own contracts do not have (their fee switch, split minter and
 * attester set); reads of them on our contracts revert without data.
 */
export const CIRCLE_MESSENGER_ABI = parseAbi([
  "function getMinFeeAmount(uint256 amount) view returns (uint256)",
  "function minFee() view returns (uint256)",
  "function localMinter() view returns (address)",
  "function localMessageTransmitter() view returns (address)",
  "function remoteTokenMessengers(uint32 domain) view returns (bytes32)",
  "function remoteTokens(uint32 domain) view returns (bytes32)",
]);
export const CIRCLE_MINTER_ABI = parseAbi([
  "function getLocalToken(uint32 remoteDomain, bytes32 remoteToken) view returns (address)",
]);
export const TRANSMITTER_VIEW_ABI = parseAbi([
  "function localDomain() view returns (uint32)",
  "function signatureThreshold() view returns (uint256)",
  "function isEnabledAttester(address attester) view returns (bool)",
  "function usedNonces(bytes32 nonce) view returns (uint256)",
]);
