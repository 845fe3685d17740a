/**
 * ERC-8004 agents through the sender: the agent's CREATE2 smart account (deployed by the
 * operator; anyone may), its registration in the identity registry (sent by the agent's own
 * managed owner wallet, which becomes the token's owner), the account proven as the agent wallet
 * (the owner signs the registry's EIP-712 AgentWalletSet; the account answers ERC-1271 for it),
 * and feedback in the reputation registry (given by the operator: the service's view of the
 * agent's payments). Every step is an intent, so a retried deploy finishes instead of repeating.
 * The steps are named functions in agent-deploy.ts, agent-identity.ts, agent-account.ts and
 * agent-reputation.ts; `agentOps` binds them to a chain. Works with any ERC-8004 2.0 registries: ours or the official ones configured by address
 * (agents numbered from 0, a wallet proof valid at most 5 minutes, summaries over named clients).
 */
import { type Hex, keccak256, type LocalAccount, stringToHex } from "viem";
import { reputationOps } from "./agent-reputation.ts";
import {
  agentDomain,
  agentWallet,
  readAgent,
  signAgentPayment,
  verifyAgentPayment,
} from "./agent-identity.ts";
import { accountAddress, accountOwner, executeFromAccount } from "./agent-account.ts";
import { deployAgent, proveAgentWallet } from "./agent-deploy.ts";
import type { ProfileName } from "./profiles.ts";
import type { TxRequest } from "./sender.ts";
import type { TxRow } from "./transactions.repo.ts";
import type { ChainRuntime } from "./runtime.ts";

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

/** The CREATE2 salt of an agent's account: derived from our agent row id. */
export const accountSalt = (agentRowId: string): Hex => keccak256(stringToHex(agentRowId));

export * from "./agent-identity.ts";
export * from "./agent-account.ts";
export {
  AGENT_WALLET_TYPES,
  type AgentDeployment,
  deployAgent,
  proveAgentWallet,
  WALLET_PROOF_SECONDS,
  walletProofDeadline,
} from "./agent-deploy.ts";

/** The agent operations a `Chain` offers, each bound to it (the functions live in agent-*.ts). */
export function agentOps(chain: AgentChain) {
  return {
    identityAddress: (p: ProfileName) => chain.contract(p, "AgentIdentityRegistry"),
    /** The EIP-712 domain agent wallets sign under (the registry's). */
    domain: (p: ProfileName) => agentDomain(chain, p),
    verifyPayment: (p: ProfileName, req: Parameters<typeof verifyAgentPayment>[2]) =>
      verifyAgentPayment(chain, p, req),
    ...reputationOps(chain),
    signPayment: (p: ProfileName, req: Parameters<typeof signAgentPayment>[2]) =>
      signAgentPayment(chain, p, req),
    accountAddress: (p: ProfileName, owner: `0x${string}`, salt: Hex) =>
      accountAddress(chain, p, owner, salt),
    deploy: (p: ProfileName, req: Parameters<typeof deployAgent>[2]) => deployAgent(chain, p, req),
    proveWallet: (p: ProfileName, req: Parameters<typeof proveAgentWallet>[2]) =>
      proveAgentWallet(chain, p, req),
    read: (p: ProfileName, tokenId: bigint) => readAgent(chain, p, tokenId),
    wallet: (p: ProfileName, tokenId: bigint) => agentWallet(chain, p, tokenId),
    accountOwner: (p: ProfileName, sca: `0x${string}`) => accountOwner(chain, p, sca),
    execute: (p: ProfileName, req: Parameters<typeof executeFromAccount>[2]) =>
      executeFromAccount(chain, p, req),
  };
}
