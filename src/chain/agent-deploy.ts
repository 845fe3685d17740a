/**
 * Deploying an agent, every step an intent (a retried deploy finishes instead of repeating): the
 * operator deploys its smart account, the owner's managed wallet registers it in the identity
 * registry (and so owns the token), and the owner proves the account as the agent wallet
 * (EIP-712 AgentWalletSet; the account answers ERC-1271).
 */
import { encodeFunctionData, type Hex, parseEventLogs, stringToHex } from "viem";
import { AgentAccountFactory, AgentIdentityRegistry } from "./contracts/artifacts/index.ts";
import { ChainRevertError } from "./errors.ts";
import type { AgentChain } from "./agents.ts";
import { accountAddress } from "./agent-account.ts";
import { agentDomain, agentWallet } from "./agent-identity.ts";
import type { ProfileName } from "./profiles.ts";
import type { TxRow } from "./transactions.repo.ts";

export const AGENT_WALLET_TYPES = {
  AgentWalletSet: [
    { name: "agentId", type: "uint256" },
    { name: "newWallet", type: "address" },
    { name: "owner", type: "address" },
    { name: "deadline", type: "uint256" },
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

/** Account, registration and verified agent wallet, in that order; waits for each. */
export async function deployAgent(chain: AgentChain, p: ProfileName, req: {
  ownerWalletId: string;
  owner: `0x${string}`;
  salt: Hex;
  agentURI: string;
  name: string;
  intentPrefix: string;
}): Promise<AgentDeployment> {
  const sca = await accountAddress(chain, p, req.owner, req.salt);
  const accountTx = await chain.send({
    profile: p,
    from: "operator",
    to: chain.contract(p, "AgentAccountFactory"),
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
    to: chain.contract(p, "AgentIdentityRegistry"),
    data: encodeFunctionData({
      abi: AgentIdentityRegistry.abi,
      functionName: "register",
      args: [req.agentURI, [{ metadataKey: "name", metadataValue: stringToHex(req.name) }]],
    }),
    intentKey: `${req.intentPrefix}:register`,
  });
  const receipt = await chain.runtime(p).client.getTransactionReceipt({
    hash: registerTx.txHash as Hex,
  });
  const [registered] = parseEventLogs({
    abi: AgentIdentityRegistry.abi,
    eventName: "Registered",
    logs: receipt.logs,
  });
  if (!registered) throw new Error(`no Registered event in ${registerTx.txHash}`);
  const tokenId = registered.args.agentId;
  const walletTx = await proveAgentWallet(chain, p, { ...req, tokenId, sca });
  return { tokenId, scaAddress: sca, accountTx, registerTx, walletTx };
}

/**
 * The account becomes the agent wallet: the owner signs AgentWalletSet for it (the account
 * answers ERC-1271) and sends it. Nothing when the registry already says so; a proof that
 * reverted (it expired before inclusion) is replaced by a fresh one under its own intent.
 */
export async function proveAgentWallet(chain: AgentChain, p: ProfileName, req: {
  ownerWalletId: string;
  owner: `0x${string}`;
  tokenId: bigint;
  sca: `0x${string}`;
  intentPrefix: string;
}): Promise<TxRow | null> {
  if ((await agentWallet(chain, p, req.tokenId)) === req.sca.toLowerCase()) return null;
  const owner = await chain.walletAccount(req.ownerWalletId);
  const send = async (retry: boolean) => {
    // The pending block carries the time the node stamps next (not every node has one).
    const next = await chain.runtime(p).client.getBlock({ blockTag: "pending" })
      .catch(() => chain.runtime(p).client.getBlock());
    const deadline = walletProofDeadline(next.timestamp, Date.now());
    const signature = await owner.signTypedData({
      domain: agentDomain(chain, p),
      types: AGENT_WALLET_TYPES,
      primaryType: "AgentWalletSet",
      message: { agentId: req.tokenId, newWallet: req.sca, owner: req.owner, deadline },
    });
    return await chain.send({
      profile: p,
      from: { walletId: req.ownerWalletId },
      to: chain.contract(p, "AgentIdentityRegistry"),
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
}
