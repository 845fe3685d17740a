/**
 * The chain side of x402: GatewayVault balances and EIP-712 payment authorizations, and the
 * standard x402 `exact` scheme's EIP-3009 TransferWithAuthorization on our USDC. Signatures are
 * checked the way the contract will (viem's verifyTypedData: ECDSA for an EOA, an
 * `isValidSignature` call for an ERC-1271 smart account), so a refusal here is one the chain
 * would give, found before anything is broadcast.
 */
import {
  decodeFunctionData,
  encodeFunctionData,
  type Hex,
  keccak256,
  type LocalAccount,
  parseEventLogs,
  parseSignature,
  type PublicClient,
  stringToHex,
} from "viem";
import { AgentAccount, GatewayVault, TestUSDC } from "./contracts/artifacts/index.ts";
import {
  RECEIVE_WITH_AUTHORIZATION_TYPES,
  TRANSFER_WITH_AUTHORIZATION_TYPES,
  usdcDomain,
} from "./eip3009.ts";
import type { ProfileName } from "./profiles.ts";
import { signedByEoa } from "./authorization-check.ts";
import type { Signer, TxRequest } from "./sender.ts";
import type { TxRow } from "./transactions.repo.ts";
import type { ChainRuntime } from "./runtime.ts";

export { TRANSFER_WITH_AUTHORIZATION_TYPES };

export const GATEWAY_DOMAIN_NAME = "GatewayVault";
export const GATEWAY_DOMAIN_VERSION = "1";
/** Circle Gateway's batched option: the vault accepts authorizations under this domain too. */
export const BATCHED_DOMAIN_NAME = "GatewayWalletBatched";
export const BATCHED_DOMAIN_VERSION = "1";

/** An EIP-3009-shaped authorization: the x402 payload's `authorization`. */
export type TransferAuthorization = {
  from: `0x${string}`;
  to: `0x${string}`;
  value: bigint;
  validAfter: bigint;
  validBefore: bigint;
  nonce: Hex;
};

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

/**
 * Which EIP-712 domain an authorization is signed over: the vault's own, the token's (`exact`),
 * or Circle's batched option's (`GatewayWalletBatched`, verifyingContract the vault), which the
 * vault accepts as its own.
 */
export type AuthorizationTarget = "gateway" | "usdc" | "batched";

export function gatewayOps(chain: GatewayChain) {
  const vault = (p: ProfileName) => chain.contract(p, "GatewayVault");
  const client = (p: ProfileName): PublicClient => chain.runtime(p).client as PublicClient;
  const domain = (p: ProfileName, target: AuthorizationTarget) =>
    target === "usdc" ? usdcDomain(chain.runtime(p)) : {
      name: target === "batched" ? BATCHED_DOMAIN_NAME : GATEWAY_DOMAIN_NAME,
      version: target === "batched" ? BATCHED_DOMAIN_VERSION : GATEWAY_DOMAIN_VERSION,
      chainId: chain.runtime(p).chainId,
      verifyingContract: vault(p),
    } as const;

  return {
    vaultAddress: vault,
    /** The EIP-712 domain payers sign over (GatewayVault's, or the token's for `exact`). */
    domain,

    /** Whether `signature` is `a.from`'s TransferWithAuthorization (EOA or ERC-1271). */
    async signedBy(
      p: ProfileName,
      target: AuthorizationTarget,
      a: TransferAuthorization,
      signature: Hex,
    ): Promise<boolean> {
      const typed = {
        domain: domain(p, target),
        types: TRANSFER_WITH_AUTHORIZATION_TYPES,
        primaryType: "TransferWithAuthorization" as const,
        message: a,
      };
      // An EOA's signature is checked here (no RPC); anything else (an ERC-1271 smart account)
      // by the node, as the contract will: one eth_call.
      if (typed.domain.name !== undefined && signedByEoa(typed.domain, a, signature)) return true;
      try {
        return await client(p).verifyTypedData({
          address: a.from,
          domain: domain(p, target),
          types: TRANSFER_WITH_AUTHORIZATION_TYPES,
          primaryType: "TransferWithAuthorization",
          message: a,
          signature,
        });
      } catch {
        return false;
      }
    },

    /** Whether the contract already used `nonce` for `from`. */
    async nonceUsed(
      p: ProfileName,
      target: AuthorizationTarget,
      from: `0x${string}`,
      nonce: Hex,
    ): Promise<boolean> {
      return await client(p).readContract({
        address: target === "usdc" ? chain.contract(p, "TestUSDC") : vault(p),
        abi: target === "usdc" ? TestUSDC.abi : GatewayVault.abi,
        functionName: "authorizationState",
        args: [from, nonce],
      });
    },

    /**
     * The transaction that paid with `from`'s `nonce` on the contract, whoever sent it (our relay,
     * or anyone who relayed the proof directly): the vault's PaymentTransferred log, or the
     * token's AuthorizationUsed for `exact`. Null when no payment used it.
     */
    async paidWithNonce(
      p: ProfileName,
      target: AuthorizationTarget,
      from: `0x${string}`,
      nonce: Hex,
    ): Promise<Hex | null> {
      const logs = target === "usdc"
        ? await client(p).getContractEvents({
          address: chain.contract(p, "TestUSDC"),
          abi: TestUSDC.abi,
          eventName: "AuthorizationUsed",
          args: { authorizer: from, nonce },
          fromBlock: 0n,
        })
        : await client(p).getContractEvents({
          address: vault(p),
          abi: GatewayVault.abi,
          eventName: "PaymentTransferred",
          args: { from, nonce },
          fromBlock: 0n,
        });
      return logs.find((l) => !l.removed)?.transactionHash ?? null;
    },

    /** available + withdrawing: what payment authorizations can spend. */
    async total(p: ProfileName, account: `0x${string}`): Promise<bigint> {
      return await client(p).readContract({
        address: vault(p),
        abi: GatewayVault.abi,
        functionName: "totalBalance",
        args: [account],
      });
    },

    /**
     * `account`'s available vault balance and the block it was read at (what the gateway-balance
     * mirror of batched charges keeps: a settlement mined after that block is not in it).
     */
    async availableAt(
      p: ProfileName,
      account: `0x${string}`,
    ): Promise<{ available: bigint; block: bigint }> {
      const block = await client(p).getBlockNumber({ cacheTime: 0 });
      const b = await client(p).readContract({
        address: vault(p),
        abi: GatewayVault.abi,
        functionName: "balanceOf",
        args: [account],
        blockNumber: block,
      });
      return { available: b.available, block };
    },

    /** The deployed vault's withdrawal delay (seconds). */
    async withdrawalDelay(p: ProfileName): Promise<bigint> {
      return await client(p).readContract({
        address: vault(p),
        abi: GatewayVault.abi,
        functionName: "withdrawalDelay",
      });
    },

    async balance(p: ProfileName, account: `0x${string}`): Promise<GatewayBalance> {
      const [b, withdrawable] = await Promise.all([
        client(p).readContract({
          address: vault(p),
          abi: GatewayVault.abi,
          functionName: "balanceOf",
          args: [account],
        }),
        client(p).readContract({
          address: vault(p),
          abi: GatewayVault.abi,
          functionName: "withdrawable",
          args: [account],
        }),
      ]);
      return { available: b.available, withdrawing: b.withdrawing, withdrawable };
    },

    /**
     * Relays a payment authorization from the operator and waits for the receipt: on the vault
     * (gateway balance) or on the token (the `exact` scheme's wallet-to-wallet transfer). Once
     * per `intentKey`.
     */
    async settle(
      p: ProfileName,
      target: AuthorizationTarget,
      req: { authorization: TransferAuthorization; signature: Hex; intentKey: string },
    ): Promise<TxRow> {
      const a = req.authorization;
      const args = [a.from, a.to, a.value, a.validAfter, a.validBefore, a.nonce] as const;
      const data = target === "usdc"
        ? encodeFunctionData({
          abi: TestUSDC.abi,
          functionName: "transferWithAuthorization",
          args: [...args, req.signature],
        })
        : encodeFunctionData({
          abi: GatewayVault.abi,
          functionName: "transferWithAuthorization",
          args: [...args, req.signature],
        });
      return await chain.send({
        profile: p,
        from: "relayer", // permissionless relay: one of the relayer pool (sender.ts)
        to: target === "usdc" ? chain.contract(p, "TestUSDC") : vault(p),
        data,
        intentKey: req.intentKey,
      });
    },

    /**
     * Relays many gateway authorizations in one transaction (`transferWithAuthorizations`) and
     * waits for the receipt: which of them went through is read from its PaymentTransferred
     * logs (a failing one is skipped by the vault, the others still settle). Once per
     * `intentKey`.
     */
    async settleBatch(
      p: ProfileName,
      req: {
        items: { authorization: TransferAuthorization; signature: Hex }[];
        intentKey: string;
        /** A gas limit to send with instead of the node's estimate (slow for a large batch). */
        gas?: bigint;
      },
    ): Promise<{ tx: TxRow; settled: boolean[] }> {
      const data = encodeFunctionData({
        abi: GatewayVault.abi,
        functionName: "transferWithAuthorizations",
        args: [req.items.map((i) => ({ ...i.authorization, signature: i.signature }))],
      });
      const tx = await chain.send({
        profile: p,
        from: "relayer", // permissionless relay: one of the relayer pool (sender.ts)
        to: vault(p),
        data,
        intentKey: req.intentKey,
        ...(req.gas ? { gas: req.gas } : {}),
      });
      const receipt = await client(p).getTransactionReceipt({ hash: tx.txHash as Hex });
      const paid = new Set(
        parseEventLogs({
          abi: GatewayVault.abi,
          logs: receipt.logs,
          eventName: "PaymentTransferred",
        })
          .filter((l) => l.address.toLowerCase() === vault(p).toLowerCase())
          .map((l) => `${l.args.from.toLowerCase()}:${l.args.nonce.toLowerCase()}`),
      );
      return {
        tx,
        settled: req.items.map((i) =>
          paid.has(`${i.authorization.from.toLowerCase()}:${i.authorization.nonce.toLowerCase()}`)
        ),
      };
    },

    /**
     * Deposits from a managed wallet: it signs a ReceiveWithAuthorization to the vault and the
     * operator relays it (the wallet needs no gas). Waits for the receipt.
     */
    async depositFromWallet(
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
          to: vault(p),
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
        to: vault(p),
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
    },

    /**
     * A managed wallet's signature of a gateway payment authorization: its own (`a.from` is the
     * wallet), or, for an agent's smart account, its owner's (the account answers ERC-1271 for
     * what its owner signs). Signs only; nothing is sent.
     */
    async signAuthorization(
      p: ProfileName,
      req: { signerWalletId: string; authorization: TransferAuthorization },
    ): Promise<Hex> {
      const account = await chain.walletAccount(req.signerWalletId);
      return await account.signTypedData({
        domain: domain(p, "gateway"),
        types: TRANSFER_WITH_AUTHORIZATION_TYPES,
        primaryType: "TransferWithAuthorization",
        message: req.authorization,
      });
    },

    /**
     * Deposits from an agent's smart account into its own gateway balance: the owner wallet has
     * the account approve the vault and deposit, in one `executeBatch` transaction (both or
     * neither; no allowance is left behind). Waits for the receipt; once per `intentKey`.
     */
    async depositFromAccount(
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
                args: [vault(p), req.amount],
              }),
            },
            {
              target: vault(p),
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
    },

    /**
     * An agent's smart account withdraws from its gateway balance (the vault pays `msg.sender`'s
     * balance, so the account itself calls it, through `execute` sent by its owner wallet).
     */
    async withdrawFromAccount(
      p: ProfileName,
      req: {
        ownerWalletId: string;
        account: `0x${string}`;
        amount: bigint;
        to: `0x${string}`;
        intentKey: string;
      },
    ): Promise<TxRow> {
      return await chain.send({
        profile: p,
        from: { walletId: req.ownerWalletId },
        to: req.account,
        data: encodeFunctionData({
          abi: AgentAccount.abi,
          functionName: "execute",
          args: [
            vault(p),
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
    },

    /**
     * What a recorded transaction withdraws from `account`'s gateway balance: the account's own
     * call to the vault, or its smart account's `execute` of one (sent by its owner); 0n for any
     * other transaction.
     */
    withdrawnBy(
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
          if (call.functionName !== "execute" || lower(call.args[0]) !== lower(vault(p))) return 0n;
          data = call.args[2];
        } else if (!(to === lower(vault(p)) && lower(tx.fromAddress) === own)) return 0n;
        const call = decodeFunctionData({ abi: GatewayVault.abi, data });
        return call.functionName === "withdraw" ? call.args[0] : 0n;
      } catch {
        return 0n; // not a call we know
      }
    },

    /** The account's own withdrawal (`from` must be the balance's owner). Waits for the receipt. */
    async withdraw(
      p: ProfileName,
      req: { from: Signer; amount: bigint; to: `0x${string}`; intentKey: string },
    ): Promise<TxRow> {
      return await chain.send({
        profile: p,
        from: req.from,
        to: vault(p),
        data: encodeFunctionData({
          abi: GatewayVault.abi,
          functionName: "withdraw",
          args: [req.amount, req.to],
        }),
        intentKey: req.intentKey,
      });
    },
  };
}

const lower = (a: string) => a.toLowerCase();

/** A deterministic EIP-3009 nonce per intent, so a retried deposit signs the same nonce. */
function keccakIntent(intentKey: string): Hex {
  return keccak256(stringToHex(intentKey));
}
