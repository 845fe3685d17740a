/**
 * Signature forms a hostile client can send: `highS` is the malleated twin of a 65-byte ECDSA
 * signature (s → n − s, v flipped), which recovers the same signer, and which OpenZeppelin's
 * ECDSA (and USDC's ECRecover) refuse.
 */
import type { Hex } from "viem";
import { secp256k1 } from "@noble/curves/secp256k1";

export function highS(signature: Hex): Hex {
  if (signature.length !== 132) throw new Error("highS: a 65-byte signature");
  const sig = secp256k1.Signature.fromCompact(signature.slice(2, 130));
  const flipped = new secp256k1.Signature(sig.r, secp256k1.CURVE.n - sig.s);
  const v = Number.parseInt(signature.slice(130), 16);
  const w = v === 27 ? 28 : v === 28 ? 27 : v === 0 ? 1 : 0;
  return `0x${flipped.toCompactHex()}${w.toString(16).padStart(2, "0")}`;
}
