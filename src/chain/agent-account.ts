/**
 * An agent's CREATE2 smart account (AgentAccountFactory, AgentAccount): its address before and
 * after deployment, its owner, and a call it makes, sent by its owner's managed wallet.
 */
import { encodeFunctionData, type Hex } from "viem";
import { AgentAccount, AgentAccountFactory } from "./contracts/artifacts/index.ts";
import type { AgentChain } from "./agents.ts";
import type { ProfileName } from "./profiles.ts";
import type { TxRow } from "./transactions.repo.ts";

/** The account's address before (and after) deployment. */
export async function accountAddress(
  chain: AgentChain,
  p: ProfileName,
  owner: `0x${string}`,
  salt: Hex,
) {
  return await chain.runtime(p).client.readContract({
    address: chain.contract(p, "AgentAccountFactory"),
    abi: AgentAccountFactory.abi,
    functionName: "getAddress",
    args: [owner, salt],
  });
}

/** The account's owner as the account itself reports it. */
export async function accountOwner(
  chain: AgentChain,
  p: ProfileName,
  sca: `0x${string}`,
): Promise<`0x${string}`> {
  const o = await chain.runtime(p).client.readContract({
    address: sca,
    abi: AgentAccount.abi,
    functionName: "owner",
  });
  return o.toLowerCase() as `0x${string}`;
}

/** A call the account makes, sent by its owner (AgentAccount.execute). */
export async function executeFromAccount(chain: AgentChain, p: ProfileName, req: {
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
}
