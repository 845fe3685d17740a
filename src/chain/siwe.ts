/**
 * Sign-In with Ethereum (EIP-4361) for linking an external wallet, on viem/siwe. Verification
 * always passes the domain, nonce, address and time; viem's verifier also accepts smart-account
 * signatures (ERC-1271/6492) through the chain's RPC.
 */
import { type Hex, type PublicClient } from "viem";
import {
  createSiweMessage,
  generateSiweNonce,
  parseSiweMessage,
  verifySiweMessage,
} from "viem/siwe";

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

export function newSiweNonce(): string {
  return generateSiweNonce();
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
