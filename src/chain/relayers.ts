/**
 * The relayer pool: hot wallets that submit work anyone may submit (gasless checkout relays,
 * escrow funding with the depositor's authorization), so relayed throughput is not capped by
 * one nonce sequence. Their keys are derived from the operator key
 * (keccak256(operatorKey ‖ "settlement-relayer" ‖ i)), so every process of a deployment agrees on
 * the pool with nothing stored; they hold only gas, which the sender tops up from the operator
 * (the same floor and top-up as managed wallets) before a relayer below the floor signs.
 * A relay's relayer is chosen by its intent key, so retries of one intent land on one wallet.
 */
import { concat, type Hex, keccak256, type LocalAccount, toHex } from "viem";
import { privateKeyToAccount } from "viem/accounts";

export function deriveRelayers(operatorKey: Hex, count: number): LocalAccount[] {
  return Array.from({ length: count }, (_, i) =>
    privateKeyToAccount(
      keccak256(concat([operatorKey, toHex("settlement-relayer"), toHex(i, { size: 4 })])),
    ));
}

/** The pool index of an intent: a stable spread over the pool. */
export function relayerIndex(intentKey: string, count: number): number {
  const h = keccak256(toHex(intentKey));
  return Number(BigInt(h.slice(0, 18)) % BigInt(count));
}
