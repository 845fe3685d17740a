/**
 * The agents module's side of x402 (the x402 module's `X402AgentPort`). A paid call that names an
 * agent (`8004:{chainId}:{tokenId}`, body `agentId` or `X-Agent-ID`) must be paid by that agent's
 * wallet: the smart account of an agent deployed here, or the registry's verified agent wallet of
 * one registered directly on chain. Nobody can pay, or fail, in another agent's name. An
 * `X-Agent-Signature`, when sent, must be the agent wallet's EIP-712 AgentPayment signature of
 * the proof's timestamp and nonce (ERC-1271 for an account). Each settled or failed paid call of
 * an agent becomes the operator's feedback in the reputation registry, through a job so the paid
 * call never waits for it. `merchantAgent` lets the x402 payer endpoints (proofs, deposit,
 * withdraw, balance) act for the merchant's own agents.
 */
import type { Deps } from "../../deps.ts";
import { DomainError } from "../../errors.ts";
import { lower } from "../../chain/address.ts";
import type { X402AgentPort, X402PaymentRecord } from "../x402/x402.types.ts";
import { AGENT_ID } from "../x402/x402.types.ts";
import { decodeGatewayProof } from "../x402/x402.rules.ts";
import { agentWallet, ownAgent } from "./agents.service.ts";
import { agentIdentifier } from "./agents.rules.ts";
import { paymentFeedbackQueue } from "./agents.queues.ts";

const refused = (hint: string) => new DomainError("x402_agent_refused", { hint });

export function agentsX402Port(deps: Deps): X402AgentPort {
  return {
    async verifyAgent({ agentId, signature, payer, proof, authorization }) {
      if (!AGENT_ID.test(agentId)) throw new DomainError("x402_agent_invalid");
      const agent = await agentWallet(deps, agentId);
      if (!agent) throw refused("No agent is registered under this agentId.");
      if (lower(payer) !== agent.wallet) {
        throw refused("The payment must come from the agent's wallet (its scaAddress).");
      }
      if (signature === undefined) return;
      const decoded = authorization ? null : decodeGatewayProof(proof);
      const a = authorization ?? (decoded?.ok ? decoded.proof.payload.authorization : null);
      if (!a || !/^0x[0-9a-fA-F]{130,}$/.test(signature)) {
        throw refused("X-Agent-Signature must sign the payment's timestamp and nonce.");
      }
      const ok = await deps.chain.agents.verifyPayment(agent.profile, {
        wallet: agent.wallet,
        tokenId: agent.tokenId,
        timestamp: a.validAfter,
        nonce: a.nonce,
        signature: signature as `0x${string}`,
      });
      if (!ok) throw refused("X-Agent-Signature is not the agent wallet's signature.");
    },

    async merchantAgent(merchantId, by) {
      const row = await ownAgent(deps, merchantId, by);
      if (!row || row.tokenId === null) return null;
      return {
        agentId: agentIdentifier(row.chainId, row.tokenId),
        tokenId: BigInt(row.tokenId),
        account: lower(row.scaAddress),
        ownerWalletId: row.ownerWalletId,
      };
    },

    async paymentRecorded(p: X402PaymentRecord) {
      if (!p.agentId || p.status === "PENDING") return;
      await deps.queue.send(paymentFeedbackQueue, {
        paymentId: p.id,
        agentId: p.agentId,
        success: p.status === "SUCCESS",
        endpoint: p.listingSlug ? `/x402/${p.listingSlug}` : "",
      });
    },
  };
}
