/**
 * The chain side of x402: GatewayVault balances and EIP-712 payment authorizations, and the
 * standard x402 `exact` scheme's EIP-3009 TransferWithAuthorization on our USDC. Signatures are
 * checked the way the contract will (viem's verifyTypedData: ECDSA for an EOA, an
 * `isValidSignature` call for an ERC-1271 smart account), so a refusal here is one the chain
 * would give, found before anything is broadcast. The operations are named functions in
 * gateway-authorization.ts, gateway-settle.ts, gateway-balance.ts and gateway-withdrawals.ts; `gatewayOps` binds them.
 */
import type { Hex, LocalAccount } from "viem";
import { TRANSFER_WITH_AUTHORIZATION_TYPES } from "./eip3009.ts";
import type { ProfileName } from "./profiles.ts";
import type { Signer, TxRequest } from "./sender.ts";
import type { TxRow } from "./transactions.repo.ts";
import type { ChainRuntime } from "./runtime.ts";
import {
  authorizationNonceUsed,
  type AuthorizationTarget,
  gatewayDomain,
  gatewayVault,
  paidWithNonce,
  signAuthorization,
  type TransferAuthorization,
  transferSignedBy,
  transferSigner,
} from "./gateway-authorization.ts";
import { settleAuthorization, settleAuthorizations } from "./gateway-settle.ts";
import {
  availableAt,
  depositFromAccount,
  depositFromWallet,
  gatewayBalance,
  initiateWithdrawal,
  relaySignedDeposit,
  settlersMissing,
  type SignedDeposit,
  signedDepositValid,
  totalBalance,
  withdrawableAt,
  withdrawalDelay,
  withdrawFromAccount,
  withdrawFromVault,
  withdrawnBy,
} from "./gateway-balance.ts";
import {
  relaySignedWithdrawal,
  type SignedWithdrawal,
  signedWithdrawalValid,
  withdrawalNonceUsed,
} from "./gateway-withdrawals.ts";

export { TRANSFER_WITH_AUTHORIZATION_TYPES };
export {
  type AuthorizationTarget,
  BATCHED_DOMAIN_NAME,
  BATCHED_DOMAIN_VERSION,
  GATEWAY_DOMAIN_NAME,
  GATEWAY_DOMAIN_VERSION,
  type TransferAuthorization,
} from "./gateway-authorization.ts";

export interface GatewayBalance {
  available: bigint;
  withdrawing: bigint;
  withdrawable: bigint;
}

/** What the gateway operations need from the chain module (a slice of `Chain`). */
export interface GatewayChain {
  runtime(profile: ProfileName): ChainRuntime;
  contract(profile: ProfileName, name: "GatewayVault" | "TestUSDC"): `0x${string}`;
  send(req: TxRequest, wait?: { timeoutMs?: number }): Promise<TxRow>;
  walletAccount(walletId: string): Promise<LocalAccount>;
}

/** The gateway operations a `Chain` offers, each bound to it. */
export function gatewayOps(chain: GatewayChain) {
  return {
    vaultAddress: (p: ProfileName) => gatewayVault(chain, p),
    /** The EIP-712 domain payers sign over (GatewayVault's, or the token's for `exact`). */
    domain: (p: ProfileName, target: AuthorizationTarget) => gatewayDomain(chain, p, target),
    signedBy: (
      p: ProfileName,
      target: AuthorizationTarget,
      a: TransferAuthorization,
      signature: Hex,
    ) => transferSignedBy(chain, p, target, a, signature),
    signer: (
      p: ProfileName,
      target: AuthorizationTarget,
      a: TransferAuthorization,
      signature: Hex,
    ) => transferSigner(chain, p, target, a, signature),
    nonceUsed: (p: ProfileName, target: AuthorizationTarget, from: `0x${string}`, nonce: Hex) =>
      authorizationNonceUsed(chain, p, target, from, nonce),
    paidWithNonce: (
      p: ProfileName,
      target: AuthorizationTarget,
      pay: { from: `0x${string}`; to: `0x${string}`; value: bigint; nonce: Hex },
    ) => paidWithNonce(chain, p, target, pay),
    total: (p: ProfileName, account: `0x${string}`) => totalBalance(chain, p, account),
    balance: (p: ProfileName, account: `0x${string}`) => gatewayBalance(chain, p, account),
    availableAt: (p: ProfileName, account: `0x${string}`) => availableAt(chain, p, account),
    withdrawalDelay: (p: ProfileName) => withdrawalDelay(chain, p),
    settlersMissing: (p: ProfileName) => settlersMissing(chain, p),
    settle: (
      p: ProfileName,
      target: AuthorizationTarget,
      req: Parameters<typeof settleAuthorization>[3],
    ) => settleAuthorization(chain, p, target, req),
    settleBatch: (p: ProfileName, req: Parameters<typeof settleAuthorizations>[2]) =>
      settleAuthorizations(chain, p, req),
    depositFromWallet: (p: ProfileName, req: Parameters<typeof depositFromWallet>[2]) =>
      depositFromWallet(chain, p, req),
    signedDepositValid: (p: ProfileName, d: SignedDeposit) => signedDepositValid(chain, p, d),
    relaySignedDeposit: (p: ProfileName, d: SignedDeposit, intentKey: string) =>
      relaySignedDeposit(chain, p, d, intentKey),
    signAuthorization: (p: ProfileName, req: Parameters<typeof signAuthorization>[2]) =>
      signAuthorization(chain, p, req),
    depositFromAccount: (p: ProfileName, req: Parameters<typeof depositFromAccount>[2]) =>
      depositFromAccount(chain, p, req),
    withdrawFromAccount: (p: ProfileName, req: Parameters<typeof withdrawFromAccount>[2]) =>
      withdrawFromAccount(chain, p, req),
    withdrawnBy: (
      p: ProfileName,
      tx: { fromAddress: string; toAddress: string | null; data: string },
      account: `0x${string}`,
    ): bigint => withdrawnBy(chain, p, tx, account),
    initiateWithdrawal: (p: ProfileName, req: Parameters<typeof initiateWithdrawal>[2]) =>
      initiateWithdrawal(chain, p, req),
    withdrawableAt: (p: ProfileName, account: `0x${string}`) => withdrawableAt(chain, p, account),
    signedWithdrawalValid: (p: ProfileName, w: SignedWithdrawal) =>
      signedWithdrawalValid(chain, p, w),
    withdrawalNonceUsed: (p: ProfileName, account: `0x${string}`, nonce: Hex) =>
      withdrawalNonceUsed(chain, p, account, nonce),
    relaySignedWithdrawal: (p: ProfileName, w: SignedWithdrawal, intentKey: string) =>
      relaySignedWithdrawal(chain, p, w, intentKey),
    withdraw: (
      p: ProfileName,
      req: { from: Signer; amount: bigint; to: `0x${string}`; intentKey: string },
    ): Promise<TxRow> => withdrawFromVault(chain, p, req),
  };
}
