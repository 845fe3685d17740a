/**
 * The service's side of an ERC-8004 reputation registry (ours or the official one): the
 * operator's feedback on each x402 payment an agent made, and the registry's summary of it.
 */
import { encodeFunctionData, keccak256, toHex } from "viem";
import { AgentReputationRegistry } from "./contracts/artifacts/index.ts";
import type { AgentChain } from "./agents.ts";
import type { ProfileName } from "./profiles.ts";
import type { TxRow } from "./transactions.repo.ts";

/** Tags of the feedback the service records for each settled x402 payment. */
export const X402_FEEDBACK_TAG = "x402";

/** The intent of the feedback on one payment: one per payment, ever. */
export const FEEDBACK_INTENT_PREFIX = "agent-feedback:";
export const feedbackIntent = (paymentId: string) => `${FEEDBACK_INTENT_PREFIX}${paymentId}`;

export function reputationOps(chain: AgentChain) {
  const reputation = (p: ProfileName) => chain.contract(p, "AgentReputationRegistry");
  const ops = {
    reputationAddress: reputation,

    /**
     * The operator's feedback on one payment: value 100 when it settled, 0 when it failed
     * (tag1 `x402`, tag2 the outcome), the endpoint called and a hash naming the payment. Once
     * per payment: the intent is named after it.
     */
    async giveFeedback(p: ProfileName, req: {
      tokenId: bigint;
      success: boolean;
      endpoint: string;
      paymentId: string;
    }): Promise<TxRow> {
      return await chain.send({
        profile: p,
        from: "operator",
        to: reputation(p),
        data: encodeFunctionData({
          abi: AgentReputationRegistry.abi,
          functionName: "giveFeedback",
          args: [
            req.tokenId,
            req.success ? 100n : 0n,
            0,
            X402_FEEDBACK_TAG,
            req.success ? "success" : "failed",
            req.endpoint,
            "",
            keccak256(toHex(req.paymentId)),
          ],
        }),
        intentKey: feedbackIntent(req.paymentId),
      });
    },

    /**
     * The registry's summary of our x402 feedback on an agent: count and average (0–100). The
     * registry summarises the clients it is given (an empty list reverts on the official one):
     * ours are the operator and whoever sent our recorded feedback there before (an earlier
     * operator key).
     */
    async summary(p: ProfileName, tokenId: bigint): Promise<{ count: bigint; value: bigint }> {
      const clients = await ops.feedbackClients(p);
      if (clients.length === 0) return { count: 0n, value: 0n };
      const [count, value, decimals] = await chain.runtime(p).client.readContract({
        address: reputation(p),
        abi: AgentReputationRegistry.abi,
        functionName: "getSummary",
        args: [tokenId, clients, X402_FEEDBACK_TAG, ""],
      });
      return { count, value: value / 10n ** BigInt(decimals) };
    },

    /** The clients whose feedback is ours: the operator and past senders of our feedback. */
    async feedbackClients(p: ProfileName): Promise<`0x${string}`[]> {
      const found = new Set(await chain.sendersTo(p, reputation(p), FEEDBACK_INTENT_PREFIX));
      const operator = chain.runtime(p).operator?.address;
      if (operator) found.add(operator.toLowerCase());
      return [...found].sort() as `0x${string}`[];
    },
  };
  return ops;
}
