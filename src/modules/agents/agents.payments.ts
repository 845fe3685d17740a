/**
 * An agent's payment history, the one place the agents module reads payments: the x402 calls
 * made under the agent's identity (`8004:{chainId}:{tokenId}`), from the x402 module's service.
 */
import type { Deps } from "../../deps.ts";
import { paymentsByAgent } from "../x402/x402.service.ts";
import type { AgentPaymentHistory } from "./agents.rules.ts";

export async function agentPayments(
  deps: Deps,
  agentId: string,
  opts: { recent: number },
): Promise<AgentPaymentHistory> {
  const { payments, totals } = await paymentsByAgent(deps, agentId, { limit: opts.recent });
  return {
    recent: payments.map((p) => ({
      id: p.id,
      amount: p.amount,
      status: p.status,
      timestamp: p.createdAt,
    })),
    count: totals.count,
    successCount: totals.settledCount,
    failedCount: totals.failedCount,
    settledAmount: totals.settledAmount,
  };
}
