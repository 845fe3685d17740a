/**
 * Sign-In with Ethereum (EIP-4361) for linking an external wallet, on viem/siwe. Verification
 * always passes the domain, nonce, address and time; viem's verifier also accepts smart-account
 * signatures (ERC-1271/6492) through the chain's RPC.
 */
import { type Hex, type PublicClient } from "viem";
import { createSiweMessage, parseSiweMessage, verifySiweMessage } from "viem/siwe";

export interface SiweRequest {
  domain: string;
  uri: string;
  address: `0x${string}`;
  chainId: number;
  nonce: string;
  issuedAt: Date;
  expirationTime: Date;
  statement: string;
}

const NONCE_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
/** 32 base62 characters: about 190 bits. */
const NONCE_LENGTH = 32;

/**
 * A nonce from the CSPRNG, alphanumeric as EIP-4361 requires. Not viem's `generateSiweNonce`:
 * it draws from `Math.random` and each nonce is the previous one shifted by a character.
 * Rejection sampling (bytes below 248 = 4 × 62) keeps every character equally likely.
 */
export function newSiweNonce(): string {
  let out = "";
  while (out.length < NONCE_LENGTH) {
    for (const b of crypto.getRandomValues(new Uint8Array(NONCE_LENGTH + 8))) {
      if (b < 248 && out.length < NONCE_LENGTH) out += NONCE_ALPHABET[b % 62];
    }
  }
  return out;
}

export function buildSiweMessage(r: SiweRequest): string {
  return createSiweMessage({
    domain: r.domain,
    uri: r.uri,
    address: r.address,
    chainId: r.chainId,
    nonce: r.nonce,
    issuedAt: r.issuedAt,
    expirationTime: r.expirationTime,
    statement: r.statement,
    version: "1",
  });
}

export interface SiweCheck {
  message: string;
  signature: string;
  domain: string;
  nonce: string;
  address: `0x${string}`;
  time: Date;
}

/** True only for a well-formed message for this domain, nonce and address, valid now, signed by that address. */
export async function verifySiwe(client: PublicClient, check: SiweCheck): Promise<boolean> {
  if (!/^0x[0-9a-fA-F]+$/.test(check.signature)) return false;
  const parsed = parseSiweMessage(check.message);
  if (!parsed.address || parsed.version !== "1") return false;
  try {
    return await verifySiweMessage(client, {
      message: check.message,
      signature: check.signature as Hex,
      domain: check.domain,
      nonce: check.nonce,
      address: check.address,
      time: check.time,
    });
  } catch {
    return false;
  }
}
