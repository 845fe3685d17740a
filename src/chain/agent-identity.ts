/**
 * An agent in the ERC-8004 identity registry: the EIP-712 domain its wallet signs under, the
 * `X-Agent-Signature` of a paid call (signed and verified), and the registry's view of an agent.
 */
import { type Hex, hexToString } from "viem";
import { AgentIdentityRegistry } from "./contracts/artifacts/index.ts";
import type { AgentChain } from "./agents.ts";
import type { ProfileName } from "./profiles.ts";

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

export interface AgentOnChain {
  owner: `0x${string}`;
  agentURI: string;
  agentWallet: `0x${string}`;
  name: string;
}

/** The EIP-712 domain agent wallets sign under (the identity registry's). */
export const agentDomain = (chain: AgentChain, p: ProfileName) => ({
  name: "ERC8004IdentityRegistry",
  version: "1",
  chainId: chain.runtime(p).chainId,
  verifyingContract: chain.contract(p, "AgentIdentityRegistry"),
});

/**
 * Whether `signature` is the agent wallet's AgentPayment signature: ECDSA for an EOA,
 * ERC-1271 for a contract account (viem asks the account itself).
 */
export async function verifyAgentPayment(chain: AgentChain, p: ProfileName, req: {
  wallet: `0x${string}`;
  tokenId: bigint;
  timestamp: bigint;
  nonce: Hex;
  signature: Hex;
}): Promise<boolean> {
  try {
    return await chain.runtime(p).client.verifyTypedData({
      address: req.wallet,
      domain: agentDomain(chain, p),
      types: AGENT_PAYMENT_TYPES,
      primaryType: "AgentPayment",
      message: { agentId: req.tokenId, timestamp: req.timestamp, nonce: req.nonce },
      signature: req.signature,
    });
  } catch {
    return false;
  }
}

/**
 * The agent wallet's `X-Agent-Signature` of a payment, made by the owner of an agent's smart
 * account (which answers ERC-1271 for it). Signs only; nothing is sent.
 */
export async function signAgentPayment(chain: AgentChain, p: ProfileName, req: {
  ownerWalletId: string;
  tokenId: bigint;
  timestamp: bigint;
  nonce: Hex;
}): Promise<Hex> {
  const owner = await chain.walletAccount(req.ownerWalletId);
  return await owner.signTypedData({
    domain: agentDomain(chain, p),
    types: AGENT_PAYMENT_TYPES,
    primaryType: "AgentPayment",
    message: { agentId: req.tokenId, timestamp: req.timestamp, nonce: req.nonce },
  });
}

/** The registry's view of an agent. */
export async function readAgent(
  chain: AgentChain,
  p: ProfileName,
  tokenId: bigint,
): Promise<AgentOnChain> {
  const c = chain.runtime(p).client;
  const address = chain.contract(p, "AgentIdentityRegistry");
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
}

/**
 * The registry's verified wallet of an agent, or null when the token does not exist or has
 * no wallet (the registry is open: agents registered directly on chain count too).
 */
export async function agentWallet(
  chain: AgentChain,
  p: ProfileName,
  tokenId: bigint,
): Promise<`0x${string}` | null> {
  try {
    const w = await chain.runtime(p).client.readContract({
      address: chain.contract(p, "AgentIdentityRegistry"),
      abi: AgentIdentityRegistry.abi,
      functionName: "getAgentWallet",
      args: [tokenId],
    });
    return /^0x0{40}$/i.test(w) ? null : w.toLowerCase() as `0x${string}`;
  } catch {
    return null;
  }
}
