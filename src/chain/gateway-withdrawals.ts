/**
 * Signed withdrawals from GatewayVault: an account (an outside payer, whose key we never see)
 * signs `InitiateWithdrawal` or `Withdraw` under the vault's own EIP-712 domain, and one of our
 * relayers submits it (`initiateWithdrawalWithAuthorization`, `withdrawWithAuthorization`),
 * paying the gas. Checked here the way the vault will (its `_signedBy`: the account's own low-s
 * ECDSA key, or, for an account with code, its ERC-1271 answer), so a refusal is found before
 * anything is sent.
 */
import {
  ContractFunctionExecutionError,
  encodeFunctionData,
  hashTypedData,
  type Hex,
  recoverAddress,
} from "viem";
import { GatewayVault } from "./contracts/artifacts/index.ts";
import type { ProfileName } from "./profiles.ts";
import type { TxRow } from "./transactions.repo.ts";
import type { GatewayChain } from "./gateway.ts";
import {
  codeAccepts,
  gatewayClient,
  gatewayDomain,
  gatewayVault,
  hasCode,
} from "./gateway-authorization.ts";
import { hasHighS } from "./authorization-check.ts";
import { DomainError } from "../errors.ts";

const START_FIELDS = [
  { name: "account", type: "address" },
  { name: "value", type: "uint256" },
  { name: "validBefore", type: "uint256" },
  { name: "nonce", type: "bytes32" },
] as const;

/** The EIP-712 types of the two signed withdrawals (the vault's typehashes). */
export const SIGNED_WITHDRAWAL_TYPES = {
  InitiateWithdrawal: START_FIELDS,
  Withdraw: [
    { name: "account", type: "address" },
    { name: "to", type: "address" },
    { name: "value", type: "uint256" },
    { name: "validBefore", type: "uint256" },
    { name: "nonce", type: "bytes32" },
  ],
} as const;

/** A withdrawal as its account signed it: a start (on a vault with a delay) or a payment out. */
export type SignedWithdrawal =
  & { account: `0x${string}`; value: bigint; validBefore: bigint; nonce: Hex; signature: Hex }
  & ({ kind: "start" } | { kind: "withdraw"; to: `0x${string}` });

/** The EIP-712 digest the vault checks `w`'s signature against. */
function digestOf(chain: GatewayChain, p: ProfileName, w: SignedWithdrawal): Hex {
  const domain = gatewayDomain(chain, p, "gateway");
  const base = { account: w.account, value: w.value, validBefore: w.validBefore, nonce: w.nonce };
  return w.kind === "start"
    ? hashTypedData({
      domain,
      types: { InitiateWithdrawal: SIGNED_WITHDRAWAL_TYPES.InitiateWithdrawal },
      primaryType: "InitiateWithdrawal",
      message: base,
    })
    : hashTypedData({
      domain,
      types: { Withdraw: SIGNED_WITHDRAWAL_TYPES.Withdraw },
      primaryType: "Withdraw",
      message: { ...base, to: w.to },
    });
}

/**
 * Whether the vault will take `w`'s signature: `w.account`'s key (65 bytes, low s: no RPC), or,
 * when the account has code, its ERC-1271 `isValidSignature` (one `eth_call`).
 */
export async function signedWithdrawalValid(
  chain: GatewayChain,
  p: ProfileName,
  w: SignedWithdrawal,
): Promise<boolean> {
  const hash = digestOf(chain, p, w);
  if (w.signature.length === 132 && !hasHighS(w.signature)) {
    try {
      const signer = await recoverAddress({ hash, signature: w.signature });
      if (signer.toLowerCase() === w.account.toLowerCase()) return true;
    } catch {
      // not a signature of this shape: the account's code may still accept it
    }
  }
  return await accountAccepts(chain, p, w.account, hash, w.signature);
}

/**
 * Whether `account` has code and that code accepts `signature` for `hash` (ERC-1271's
 * `isValidSignature`: one `eth_call`), as OpenZeppelin's SignatureChecker asks an account with code.
 */
async function accountAccepts(
  chain: GatewayChain,
  p: ProfileName,
  account: `0x${string}`,
  hash: Hex,
  signature: Hex,
): Promise<boolean> {
  const withCode = await hasCode(chain, p, account).catch(() => false);
  return withCode && await codeAccepts(chain, p, account, hash, signature);
}

/**
 * Whether `account` already used `nonce` for a signed withdrawal. A vault deployed before
 * signed withdrawals has no such function: `x402_relay_unsupported`.
 */
export async function withdrawalNonceUsed(
  chain: GatewayChain,
  p: ProfileName,
  account: `0x${string}`,
  nonce: Hex,
): Promise<boolean> {
  try {
    return await gatewayClient(chain, p).readContract({
      address: gatewayVault(chain, p),
      abi: GatewayVault.abi,
      functionName: "withdrawalAuthorizationState",
      args: [account, nonce],
    });
  } catch (e) {
    if (e instanceof ContractFunctionExecutionError) {
      throw new DomainError("x402_relay_unsupported");
    }
    throw e;
  }
}

/** Sends `w` from one of the relayer pool, once per `intentKey`. Waits for the receipt. */
export async function relaySignedWithdrawal(
  chain: GatewayChain,
  p: ProfileName,
  w: SignedWithdrawal,
  intentKey: string,
): Promise<TxRow> {
  return await chain.send({
    profile: p,
    from: "relayer",
    to: gatewayVault(chain, p),
    data: w.kind === "start"
      ? encodeFunctionData({
        abi: GatewayVault.abi,
        functionName: "initiateWithdrawalWithAuthorization",
        args: [w.account, w.value, w.validBefore, w.nonce, w.signature],
      })
      : encodeFunctionData({
        abi: GatewayVault.abi,
        functionName: "withdrawWithAuthorization",
        args: [w.account, w.to, w.value, w.validBefore, w.nonce, w.signature],
      }),
    intentKey,
  });
}
