/**
 * GatewayVault balances: reading them, deposits (from a managed wallet by a relayed
 * ReceiveWithAuthorization, or from an agent's smart account) and withdrawals.
 */
import {
  BaseError,
  decodeFunctionData,
  encodeFunctionData,
  ExecutionRevertedError,
  hashTypedData,
  type Hex,
  keccak256,
  parseAbi,
  parseSignature,
  recoverAddress,
  stringToHex,
} from "viem";
import { AgentAccount, GatewayVault, TestUSDC } from "./contracts/artifacts/index.ts";
import { RECEIVE_WITH_AUTHORIZATION_TYPES, usdcDomain } from "./eip3009.ts";
import type { ProfileName } from "./profiles.ts";
import type { Signer } from "./sender.ts";
import type { TxRow } from "./transactions.repo.ts";
import type { GatewayBalance, GatewayChain } from "./gateway.ts";
import { codeAccepts, gatewayClient, gatewayVault, hasCode } from "./gateway-authorization.ts";
import { missingSettlers } from "./gateway-settlers.ts";
import { hasHighS } from "./authorization-check.ts";
import { DomainError } from "../errors.ts";

/**
 * `account`'s available vault balance and the block it was read at (what the gateway-balance
 * mirror of batched charges keeps: a settlement mined after that block is not in it).
 */
export async function availableAt(
  chain: GatewayChain,
  p: ProfileName,
  account: `0x${string}`,
): Promise<{ available: bigint; block: bigint }> {
  const client = gatewayClient(chain, p);
  const block = await client.getBlockNumber({ cacheTime: 0 });
  const b = await client.readContract({
    address: gatewayVault(chain, p),
    abi: GatewayVault.abi,
    functionName: "balanceOf",
    args: [account],
    blockNumber: block,
  });
  return { available: b.available, block };
}

/** The deployed vault's withdrawal delay (seconds). */
export async function withdrawalDelay(chain: GatewayChain, p: ProfileName): Promise<bigint> {
  return await gatewayClient(chain, p).readContract({
    address: gatewayVault(chain, p),
    abi: GatewayVault.abi,
    functionName: "withdrawalDelay",
  });
}

/**
 * The relayers of the pool that may not submit authorizations to the chain's vault (none: every
 * one may); null when the vault predates settlers, so that anyone may submit them (deploy.ts).
 */
export async function settlersMissing(
  chain: GatewayChain,
  p: ProfileName,
): Promise<`0x${string}`[] | null> {
  return await missingSettlers(chain.runtime(p), gatewayVault(chain, p));
}

/** available + withdrawing: what payment authorizations can spend. */
export async function totalBalance(
  chain: GatewayChain,
  p: ProfileName,
  account: `0x${string}`,
): Promise<bigint> {
  return await gatewayClient(chain, p).readContract({
    address: gatewayVault(chain, p),
    abi: GatewayVault.abi,
    functionName: "totalBalance",
    args: [account],
  });
}

export async function gatewayBalance(
  chain: GatewayChain,
  p: ProfileName,
  account: `0x${string}`,
): Promise<GatewayBalance> {
  const [b, withdrawable] = await Promise.all([
    gatewayClient(chain, p).readContract({
      address: gatewayVault(chain, p),
      abi: GatewayVault.abi,
      functionName: "balanceOf",
      args: [account],
    }),
    gatewayClient(chain, p).readContract({
      address: gatewayVault(chain, p),
      abi: GatewayVault.abi,
      functionName: "withdrawable",
      args: [account],
    }),
  ]);
  return { available: b.available, withdrawing: b.withdrawing, withdrawable };
}

/** When `account`'s withdrawing balance matures (Unix seconds; 0: it never started one). */
export async function withdrawableAt(
  chain: GatewayChain,
  p: ProfileName,
  account: `0x${string}`,
): Promise<bigint> {
  const b = await gatewayClient(chain, p).readContract({
    address: gatewayVault(chain, p),
    abi: GatewayVault.abi,
    functionName: "balanceOf",
    args: [account],
  });
  return BigInt(b.withdrawableAt);
}

/**
 * Deposits from a managed wallet: it signs a ReceiveWithAuthorization to the vault and the
 * operator relays it (the wallet needs no gas). Waits for the receipt.
 */
export async function depositFromWallet(
  chain: GatewayChain,
  p: ProfileName,
  req: { walletId: string; amount: bigint; intentKey: string; validBefore: bigint },
): Promise<TxRow> {
  const account = await chain.walletAccount(req.walletId);
  const nonce = keccakIntent(req.intentKey);
  const signature = await account.signTypedData({
    domain: usdcDomain(chain.runtime(p)),
    types: RECEIVE_WITH_AUTHORIZATION_TYPES,
    primaryType: "ReceiveWithAuthorization",
    message: {
      from: account.address,
      to: gatewayVault(chain, p),
      value: req.amount,
      validAfter: 0n,
      validBefore: req.validBefore,
      nonce,
    },
  });
  const { v, r, s, yParity } = parseSignature(signature);
  return await chain.send({
    profile: p,
    from: "relayer", // permissionless relay: one of the relayer pool (sender.ts)
    to: gatewayVault(chain, p),
    data: encodeFunctionData({
      abi: GatewayVault.abi,
      functionName: "depositWithAuthorization",
      args: [
        account.address,
        req.amount,
        0n,
        req.validBefore,
        nonce,
        Number(v ?? BigInt(yParity + 27)),
        r,
        s,
      ],
    }),
    intentKey: req.intentKey,
  });
}

/** An outside payer's EIP-3009 `ReceiveWithAuthorization` of USDC to the vault, as it signed it. */
export interface SignedDeposit {
  from: `0x${string}`;
  value: bigint;
  validAfter: bigint;
  validBefore: bigint;
  nonce: Hex;
  signature: Hex;
}

/** The EIP-712 digest of `d` under the chain's USDC domain (what the token checks). */
function depositDigest(chain: GatewayChain, p: ProfileName, d: SignedDeposit): Hex {
  return hashTypedData({
    domain: usdcDomain(chain.runtime(p)),
    types: RECEIVE_WITH_AUTHORIZATION_TYPES,
    primaryType: "ReceiveWithAuthorization",
    message: {
      from: d.from,
      to: gatewayVault(chain, p),
      value: d.value,
      validAfter: d.validAfter,
      validBefore: d.validBefore,
      nonce: d.nonce,
    },
  });
}

/** Whether `d.from`'s own key signed `hash` (65 bytes, low s: what the token's ECDSA takes). */
async function signedByKey(d: SignedDeposit, hash: Hex): Promise<boolean> {
  if (d.signature.length !== 132 || hasHighS(d.signature)) return false;
  try {
    return (await recoverAddress({ hash, signature: d.signature })).toLowerCase() ===
      d.from.toLowerCase();
  } catch {
    return false;
  }
}

/**
 * Whether the token will take `d`'s signature of its deposit to the vault, under the chain's USDC
 * domain, asked as the token asks it (OpenZeppelin's SignatureChecker, and USDC v2.2's): an
 * address without code by its own low-s ECDSA key; an address with code only by what its ERC-1271
 * `isValidSignature` answers (one `eth_call`), even an EOA that delegates its code (EIP-7702),
 * whose key's signature alone the token then refuses. One `eth_getCode` tells which.
 */
export async function signedDepositValid(
  chain: GatewayChain,
  p: ProfileName,
  d: SignedDeposit,
): Promise<boolean> {
  const hash = depositDigest(chain, p, d);
  if (!(await hasCode(chain, p, d.from))) return await signedByKey(d, hash);
  return await codeAccepts(chain, p, d.from, hash, d.signature);
}

/**
 * Relays an outside payer's signed deposit (it needs no gas): one of the relayer pool submits
 * `depositWithAuthorization`, once per `intentKey`: with v, r, s for a key's signature (what
 * every USDC takes), with the signature as bytes for a smart account's. Waits for the receipt.
 */
export async function relaySignedDeposit(
  chain: GatewayChain,
  p: ProfileName,
  d: SignedDeposit,
  intentKey: string,
): Promise<TxRow> {
  const byKey = await signedByKey(d, depositDigest(chain, p, d));
  if (!byKey && !(await tokenTakesSignatureBytes(chain, p, d))) {
    throw new DomainError("x402_relay_account_unsupported");
  }
  const split = () => {
    const { r, s, yParity } = parseSignature(d.signature);
    return [yParity + 27, r, s] as const;
  };
  return await chain.send({
    profile: p,
    from: "relayer",
    to: gatewayVault(chain, p),
    data: byKey
      ? encodeFunctionData({
        abi: GatewayVault.abi,
        functionName: "depositWithAuthorization",
        args: [d.from, d.value, d.validAfter, d.validBefore, d.nonce, ...split()],
      })
      : encodeFunctionData({
        abi: GatewayVault.abi,
        functionName: "depositWithAuthorization",
        args: [d.from, d.value, d.validAfter, d.validBefore, d.nonce, d.signature],
      }),
    intentKey,
  });
}

/** USDC's EIP-3009 receive with the signature as bytes (FiatToken v2.2's; v2.1 has none). */
const RECEIVE_BYTES = parseAbi([
  "function receiveWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, bytes signature)",
]);

/**
 * Whether the chain's USDC has the bytes form of `receiveWithAuthorization`, which a smart
 * account's signature needs: the vault's call, simulated as the vault (one `eth_call`, nothing
 * sent). A token without the function reverts with no data (FiatToken v2.1 has only v, r, s);
 * any other answer, a success or a reason, means the function is there, and the send reports
 * what the chain says.
 */
async function tokenTakesSignatureBytes(
  chain: GatewayChain,
  p: ProfileName,
  d: SignedDeposit,
): Promise<boolean> {
  const vault = gatewayVault(chain, p);
  try {
    await gatewayClient(chain, p).call({
      account: vault,
      to: chain.contract(p, "TestUSDC"),
      data: encodeFunctionData({
        abi: RECEIVE_BYTES,
        functionName: "receiveWithAuthorization",
        args: [d.from, vault, d.value, d.validAfter, d.validBefore, d.nonce, d.signature],
      }),
    });
    return true;
  } catch (e) {
    // A revert (not a node that cannot be reached): its data, where the node gave any.
    if (!(e instanceof BaseError) || !e.walk((c) => c instanceof ExecutionRevertedError)) throw e;
    const data = (e.walk((c) => typeof (c as { data?: unknown }).data === "string") as
      | { data?: string }
      | null)?.data;
    return data !== undefined && data !== "0x";
  }
}

/**
 * Deposits from an agent's smart account into its own gateway balance: the owner wallet has
 * the account approve the vault and deposit, in one `executeBatch` transaction (both or
 * neither; no allowance is left behind). Waits for the receipt; once per `intentKey`.
 */
export async function depositFromAccount(
  chain: GatewayChain,
  p: ProfileName,
  req: { ownerWalletId: string; account: `0x${string}`; amount: bigint; intentKey: string },
): Promise<TxRow> {
  return await chain.send({
    profile: p,
    from: { walletId: req.ownerWalletId },
    to: req.account,
    data: encodeFunctionData({
      abi: AgentAccount.abi,
      functionName: "executeBatch",
      args: [[
        {
          target: chain.contract(p, "TestUSDC"),
          value: 0n,
          data: encodeFunctionData({
            abi: TestUSDC.abi,
            functionName: "approve",
            args: [gatewayVault(chain, p), req.amount],
          }),
        },
        {
          target: gatewayVault(chain, p),
          value: 0n,
          data: encodeFunctionData({
            abi: GatewayVault.abi,
            functionName: "deposit",
            args: [req.amount],
          }),
        },
      ]],
    }),
    intentKey: req.intentKey,
  });
}

/**
 * An agent's smart account withdraws from its gateway balance (the vault pays `msg.sender`'s
 * balance, so the account itself calls it, through `execute` sent by its owner wallet).
 */
export async function withdrawFromAccount(chain: GatewayChain, p: ProfileName, req: {
  ownerWalletId: string;
  account: `0x${string}`;
  amount: bigint;
  to: `0x${string}`;
  intentKey: string;
}): Promise<TxRow> {
  return await chain.send({
    profile: p,
    from: { walletId: req.ownerWalletId },
    to: req.account,
    data: encodeFunctionData({
      abi: AgentAccount.abi,
      functionName: "execute",
      args: [
        gatewayVault(chain, p),
        0n,
        encodeFunctionData({
          abi: GatewayVault.abi,
          functionName: "withdraw",
          args: [req.amount, req.to],
        }),
      ],
    }),
    intentKey: req.intentKey,
  });
}

/**
 * What a recorded transaction withdraws from `account`'s gateway balance: the account's own
 * call to the vault, or its smart account's `execute` of one (sent by its owner); 0n for any
 * other transaction.
 */
export function withdrawnBy(
  chain: GatewayChain,
  p: ProfileName,
  tx: { fromAddress: string; toAddress: string | null; data: string },
  account: `0x${string}`,
): bigint {
  const own = lower(account);
  const to = tx.toAddress ? lower(tx.toAddress) : null;
  try {
    let data = tx.data as Hex;
    if (to === own) {
      const call = decodeFunctionData({ abi: AgentAccount.abi, data });
      if (
        call.functionName !== "execute" || lower(call.args[0]) !== lower(gatewayVault(chain, p))
      ) return 0n;
      data = call.args[2];
    } else if (to !== lower(gatewayVault(chain, p))) return 0n;
    const call = decodeFunctionData({ abi: GatewayVault.abi, data });
    // Signed by the account and sent by anyone (a relayer: gateway-withdrawals.ts).
    if (call.functionName === "withdrawWithAuthorization") {
      return lower(call.args[0]) === own ? call.args[2] : 0n;
    }
    return call.functionName === "withdraw" && (to === own || lower(tx.fromAddress) === own)
      ? call.args[0]
      : 0n;
  } catch {
    return 0n; // not a call we know
  }
}

/** The account's own withdrawal (`from` must be the balance's owner). Waits for the receipt. */
export async function withdrawFromVault(
  chain: GatewayChain,
  p: ProfileName,
  req: { from: Signer; amount: bigint; to: `0x${string}`; intentKey: string },
): Promise<TxRow> {
  return await chain.send({
    profile: p,
    from: req.from,
    to: gatewayVault(chain, p),
    data: encodeFunctionData({
      abi: GatewayVault.abi,
      functionName: "withdraw",
      args: [req.amount, req.to],
    }),
    intentKey: req.intentKey,
  });
}

/**
 * Starts the withdrawal delay for `amount` of `account`'s available balance: the account's own
 * `initiateWithdrawal` (`from` its signer), or, for an agent's smart account, its `execute` of
 * one, sent by its owner wallet. Waits for the receipt.
 */
export async function initiateWithdrawal(
  chain: GatewayChain,
  p: ProfileName,
  req: { from: Signer; account?: `0x${string}`; amount: bigint; intentKey: string },
): Promise<TxRow> {
  const call = encodeFunctionData({
    abi: GatewayVault.abi,
    functionName: "initiateWithdrawal",
    args: [req.amount],
  });
  return await chain.send({
    profile: p,
    from: req.from,
    to: req.account ?? gatewayVault(chain, p),
    data: req.account
      ? encodeFunctionData({
        abi: AgentAccount.abi,
        functionName: "execute",
        args: [gatewayVault(chain, p), 0n, call],
      })
      : call,
    intentKey: req.intentKey,
  });
}

const lower = (a: string) => a.toLowerCase();

/** A deterministic EIP-3009 nonce per intent, so a retried deposit signs the same nonce. */
function keccakIntent(intentKey: string): Hex {
  return keccak256(stringToHex(intentKey));
}
