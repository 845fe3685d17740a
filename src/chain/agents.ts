/**
 * ERC-8004 agents through the sender: the agent's CREATE2 smart account (deployed by the
 * operator; anyone may), its registration in the identity registry (sent by the agent's own
 * managed owner wallet, which becomes the token's owner), the account proven as the agent wallet
 * (the owner signs the registry's EIP-712 AgentWalletSet; the account answers ERC-1271 for it),
 * and feedback in the reputation registry (given by the operator: the service's view of the
 * agent's payments). Every step is an intent, so a retried deploy finishes instead of repeating.
 * Works with any ERC-8004 2.0 registries: ours or the official ones configured by address
 * (agents numbered from 0, a wallet proof valid at most 5 minutes, summaries over named clients).
 */
import {
  encodeFunctionData,
  type Hex,
  hexToString,
  keccak256,
  parseEventLogs,
  stringToHex,
} from "viem";
import {
  AgentAccount,
  AgentAccountFactory,
  AgentIdentityRegistry,
} from "./contracts/artifacts/index.ts";
import { reputationOps } from "./agent-reputation.ts";
import { ChainRevertError } from "./errors.ts";
import type { ProfileName } from "./profiles.ts";
import type { TxRequest } from "./sender.ts";
import type { TxRow } from "./transactions.repo.ts";
import type { ChainRuntime } from "./runtime.ts";
import type { LocalAccount } from "viem";

type AgentContract =
  | "AgentIdentityRegistry"
  | "AgentReputationRegistry"
  | "AgentAccountFactory"
  | "TestUSDC";

/** What the agent operations need from the chain module (a slice of `Chain`). */
export interface AgentChain {
  runtime(profile: ProfileName): ChainRuntime;
  contract(profile: ProfileName, name: AgentContract): `0x${string}`;
  send(req: TxRequest, wait?: { timeoutMs?: number }): Promise<TxRow>;
  walletAccount(walletId: string): Promise<LocalAccount>;
  /** Senders of our confirmed transactions to `to` whose intents start with `intentPrefix`. */
  sendersTo(profile: ProfileName, to: `0x${string}`, intentPrefix: string): Promise<string[]>;
}

export const AGENT_WALLET_TYPES = {
  AgentWalletSet: [
    { name: "agentId", type: "uint256" },
    { name: "newWallet", type: "address" },
    { name: "owner", type: "address" },
    { name: "deadline", type: "uint256" },
  ],
} as const;

/**
 * `X-Agent-Signature`: the agent wallet's EIP-712 signature of the paid call's timestamp (the
 * proof's validAfter), bound to the agent and the payment's nonce, under the identity registry's
 * domain. The agent wallet is its smart account, so the owner signs and the account answers
 * ERC-1271.
 */
export const AGENT_PAYMENT_TYPES = {
  AgentPayment: [
    { name: "agentId", type: "uint256" },
    { name: "timestamp", type: "uint256" },
    { name: "nonce", type: "bytes32" },
  ],
} as const;

/** How long an AgentWalletSet signature is valid (the registry refuses more than 300 s). */
export const WALLET_PROOF_SECONDS = 150n;

/**
 * The deadline of an AgentWalletSet signature. The registry wants it no earlier than the time of
 * the block that includes it and at most 5 minutes later. That time is about the wall clock on a
 * real chain. A local node mines only on demand: its latest block may be long past (the next one
 * is stamped with the wall clock), or chain time may run ahead of the wall clock (a test moved
 * it), which the node's pending block shows. The later of the wall clock and the chain's time,
 * plus 150 s for inclusion, leaves 150 s for clocks to disagree.
 */
export function walletProofDeadline(chainTime: bigint, wallClockMs: number): bigint {
  const wall = BigInt(Math.floor(wallClockMs / 1000));
  return (wall > chainTime ? wall : chainTime) + WALLET_PROOF_SECONDS;
}

export interface AgentDeployment {
  tokenId: bigint;
  scaAddress: `0x${string}`;
  accountTx: TxRow;
  registerTx: TxRow;
  /** Null when the registry already had the account as the agent wallet (a resumed deploy). */
  walletTx: TxRow | null;
}

export interface AgentOnChain {
  owner: `0x${string}`;
  agentURI: string;
  agentWallet: `0x${string}`;
  name: string;
}

/** The CREATE2 salt of an agent's account: derived from our agent row id. */
export const accountSalt = (agentRowId: string): Hex => keccak256(stringToHex(agentRowId));

export function agentOps(chain: AgentChain) {
  const client = (p: ProfileName) => chain.runtime(p).client;
  const identity = (p: ProfileName) => chain.contract(p, "AgentIdentityRegistry");
  const factory = (p: ProfileName) => chain.contract(p, "AgentAccountFactory");

  const domain = (p: ProfileName) => ({
    name: "ERC8004IdentityRegistry",
    version: "1",
    chainId: chain.runtime(p).chainId,
    verifyingContract: identity(p),
  });

  const ops = {
    identityAddress: identity,
    /** The EIP-712 domain agent wallets sign under (the registry's). */
    domain,

    /**
     * Whether `signature` is the agent wallet's AgentPayment signature: ECDSA for an EOA,
     * ERC-1271 for a contract account (viem asks the account itself).
     */
    async verifyPayment(p: ProfileName, req: {
      wallet: `0x${string}`;
      tokenId: bigint;
      timestamp: bigint;
      nonce: Hex;
      signature: Hex;
    }): Promise<boolean> {
      try {
        return await client(p).verifyTypedData({
          address: req.wallet,
          domain: domain(p),
          types: AGENT_PAYMENT_TYPES,
          primaryType: "AgentPayment",
          message: { agentId: req.tokenId, timestamp: req.timestamp, nonce: req.nonce },
          signature: req.signature,
        });
      } catch {
        return false;
      }
    },
    ...reputationOps(chain),

    /**
     * The agent wallet's `X-Agent-Signature` of a payment, made by the owner of an agent's smart
     * account (which answers ERC-1271 for it). Signs only; nothing is sent.
     */
    async signPayment(p: ProfileName, req: {
      ownerWalletId: string;
      tokenId: bigint;
      timestamp: bigint;
      nonce: Hex;
    }): Promise<Hex> {
      const owner = await chain.walletAccount(req.ownerWalletId);
      return await owner.signTypedData({
        domain: domain(p),
        types: AGENT_PAYMENT_TYPES,
        primaryType: "AgentPayment",
        message: { agentId: req.tokenId, timestamp: req.timestamp, nonce: req.nonce },
      });
    },

    /** The account's address before (and after) deployment. */
    async accountAddress(p: ProfileName, owner: `0x${string}`, salt: Hex) {
      return await client(p).readContract({
        address: factory(p),
        abi: AgentAccountFactory.abi,
        functionName: "getAddress",
        args: [owner, salt],
      });
    },

    /** Account, registration and verified agent wallet, in that order; waits for each. */
    async deploy(p: ProfileName, req: {
      ownerWalletId: string;
      owner: `0x${string}`;
      salt: Hex;
      agentURI: string;
      name: string;
      intentPrefix: string;
    }): Promise<AgentDeployment> {
      const sca = await ops.accountAddress(p, req.owner, req.salt);
      const accountTx = await chain.send({
        profile: p,
        from: "operator",
        to: factory(p),
        data: encodeFunctionData({
          abi: AgentAccountFactory.abi,
          functionName: "createAccount",
          args: [req.owner, req.salt],
        }),
        intentKey: `${req.intentPrefix}:account`,
      });
      const registerTx = await chain.send({
        profile: p,
        from: { walletId: req.ownerWalletId },
        to: identity(p),
        data: encodeFunctionData({
          abi: AgentIdentityRegistry.abi,
          functionName: "register",
          args: [req.agentURI, [{ metadataKey: "name", metadataValue: stringToHex(req.name) }]],
        }),
        intentKey: `${req.intentPrefix}:register`,
      });
      const receipt = await client(p).getTransactionReceipt({ hash: registerTx.txHash as Hex });
      const [registered] = parseEventLogs({
        abi: AgentIdentityRegistry.abi,
        eventName: "Registered",
        logs: receipt.logs,
      });
      if (!registered) throw new Error(`no Registered event in ${registerTx.txHash}`);
      const tokenId = registered.args.agentId;
      const walletTx = await ops.proveWallet(p, { ...req, tokenId, sca });
      return { tokenId, scaAddress: sca, accountTx, registerTx, walletTx };
    },

    /**
     * The account becomes the agent wallet: the owner signs AgentWalletSet for it (the account
     * answers ERC-1271) and sends it. Nothing when the registry already says so; a proof that
     * reverted (it expired before inclusion) is replaced by a fresh one under its own intent.
     */
    async proveWallet(p: ProfileName, req: {
      ownerWalletId: string;
      owner: `0x${string}`;
      tokenId: bigint;
      sca: `0x${string}`;
      intentPrefix: string;
    }): Promise<TxRow | null> {
      if ((await ops.wallet(p, req.tokenId)) === req.sca.toLowerCase()) return null;
      const owner = await chain.walletAccount(req.ownerWalletId);
      const send = async (retry: boolean) => {
        // The pending block carries the time the node stamps next (not every node has one).
        const next = await client(p).getBlock({ blockTag: "pending" })
          .catch(() => client(p).getBlock());
        const deadline = walletProofDeadline(next.timestamp, Date.now());
        const signature = await owner.signTypedData({
          domain: domain(p),
          types: AGENT_WALLET_TYPES,
          primaryType: "AgentWalletSet",
          message: { agentId: req.tokenId, newWallet: req.sca, owner: req.owner, deadline },
        });
        return await chain.send({
          profile: p,
          from: { walletId: req.ownerWalletId },
          to: identity(p),
          data: encodeFunctionData({
            abi: AgentIdentityRegistry.abi,
            functionName: "setAgentWallet",
            args: [req.tokenId, req.sca, deadline, signature],
          }),
          intentKey: `${req.intentPrefix}:wallet${retry ? `:${deadline}` : ""}`,
        });
      };
      try {
        return await send(false);
      } catch (e) {
        if (!(e instanceof ChainRevertError) || !e.txHash) throw e;
        return await send(true);
      }
    },

    /** The registry's view of an agent. */
    async read(p: ProfileName, tokenId: bigint): Promise<AgentOnChain> {
      const c = client(p);
      const address = identity(p);
      const abi = AgentIdentityRegistry.abi;
      const [owner, agentURI, agentWallet, name] = await Promise.all([
        c.readContract({ address, abi, functionName: "ownerOf", args: [tokenId] }),
        c.readContract({ address, abi, functionName: "tokenURI", args: [tokenId] }),
        c.readContract({ address, abi, functionName: "getAgentWallet", args: [tokenId] }),
        c.readContract({ address, abi, functionName: "getMetadata", args: [tokenId, "name"] }),
      ]);
      return {
        owner: owner.toLowerCase() as `0x${string}`,
        agentURI,
        agentWallet: agentWallet.toLowerCase() as `0x${string}`,
        name: name === "0x" ? "" : hexToString(name),
      };
    },

    /**
     * The registry's verified wallet of an agent, or null when the token does not exist or has
     * no wallet (the registry is open: agents registered directly on chain count too).
     */
    async wallet(p: ProfileName, tokenId: bigint): Promise<`0x${string}` | null> {
      try {
        const w = await client(p).readContract({
          address: identity(p),
          abi: AgentIdentityRegistry.abi,
          functionName: "getAgentWallet",
          args: [tokenId],
        });
        return /^0x0{40}$/i.test(w) ? null : w.toLowerCase() as `0x${string}`;
      } catch {
        return null;
      }
    },

    /** The account's owner as the account itself reports it. */
    async accountOwner(p: ProfileName, sca: `0x${string}`): Promise<`0x${string}`> {
      const o = await client(p).readContract({
        address: sca,
        abi: AgentAccount.abi,
        functionName: "owner",
      });
      return o.toLowerCase() as `0x${string}`;
    },

    /** A call the account makes, sent by its owner (AgentAccount.execute). */
    async execute(p: ProfileName, req: {
      ownerWalletId: string;
      sca: `0x${string}`;
      target: `0x${string}`;
      data: Hex;
      intentKey: string;
    }): Promise<TxRow> {
      return await chain.send({
        profile: p,
        from: { walletId: req.ownerWalletId },
        to: req.sca,
        data: encodeFunctionData({
          abi: AgentAccount.abi,
          functionName: "execute",
          args: [req.target, 0n, req.data],
        }),
        intentKey: req.intentKey,
      });
    },
  };
  return ops;
}
