/**
 * CCTP v2 through the sender: burn on a source chain (approve + depositForBurn[WithHook] from a
 * managed wallet, with the maxFee and finality the transfer chose), the local attester
 * (cctp-attester.ts), and receiveMessage on the destination. The same calls work against
 * Circle's deployed contracts: only the addresses (configuration) and the attestation source
 * differ. The message format and fee arithmetic are in cctp-message.ts; burning in cctp-burn.ts,
 * receiving in cctp-receive.ts, linking local messengers in cctp-link.ts.
 */
import type { Hex } from "viem";
import type { ContractName, ProfileName } from "./profiles.ts";
import type { TxRequest } from "./sender.ts";
import type { TxRow } from "./transactions.repo.ts";
import type { ChainRuntime } from "./runtime.ts";
import { type AttesterChain, attestLocal } from "./cctp-attester.ts";
import { checkoutBurnOps } from "./cctp-checkout.ts";
import type { AttestedMessage } from "./cctp-message.ts";
import { burnUsdc, cctpDomain, minBurnFee } from "./cctp-burn.ts";
import { messageNonceUsed, mintedBy, receivedBy, receiveMessage } from "./cctp-receive.ts";
import { linkMessengers } from "./cctp-link.ts";

export * from "./cctp-message.ts";
export {
  burnNonce,
  type BurnWindow,
  type CheckoutBurn,
  type ReportedBurn,
} from "./cctp-checkout.ts";

export interface CctpChain extends AttesterChain {
  runtime(profile: ProfileName): ChainRuntime;
  ensure(profile: ProfileName): Promise<ChainRuntime>;
  contract(profile: ProfileName, name: ContractName): `0x${string}`;
  send(req: TxRequest, wait?: { timeoutMs?: number }): Promise<TxRow>;
  intent(profile: ProfileName, intentKey: string): Promise<TxRow | null>;
}

/** The CCTP operations a `Chain` offers, each bound to it (the functions live in cctp-*.ts). */
export function cctpOps(chain: CctpChain) {
  return {
    domain: (p: ProfileName) => cctpDomain(chain, p),

    /** Cross-chain checkout from the shopper's own wallet (cctp-checkout.ts). */
    checkout: checkoutBurnOps(chain),

    burn: (p: ProfileName, req: Parameters<typeof burnUsdc>[2]) => burnUsdc(chain, p, req),

    /** The local attester's answer for a burn on `p` (cctp-attester.ts); null: no such burn. */
    attest: (p: ProfileName, txHash: Hex): Promise<AttestedMessage[] | null> =>
      attestLocal(chain, p, txHash),

    minFee: (p: ProfileName, amount: bigint) => minBurnFee(chain, p, amount),
    receive: (p: ProfileName, req: Parameters<typeof receiveMessage>[2]) =>
      receiveMessage(chain, p, req),
    nonceUsed: (p: ProfileName, nonce: Hex) => messageNonceUsed(chain, p, nonce),
    receivedBy: (p: ProfileName, nonce: Hex, since: Date, window?: bigint) =>
      receivedBy(chain, p, nonce, since, window),
    minted: (p: ProfileName, txHash: Hex) => mintedBy(chain, p, txHash),
    link: (a: ProfileName, b: ProfileName) => linkMessengers(chain, a, b),
  };
}
