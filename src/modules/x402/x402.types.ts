/**
 * x402 types other modules may use: the agent port (the agents module plugs its ERC-8004 checks
 * in here without importing x402's service, so neither module depends on the other's internals)
 * and the payment record it is told about. Names are stable: the agents module relies on them.
 */
import { DomainError } from "../../errors.ts";

export type Address = `0x${string}`;

export type X402PaymentStatus = "PENDING" | "SUCCESS" | "FAILED";
export type X402Scheme = "gateway" | "exact";

/** One paid-call attempt, as recorded in x402_payments. Amounts in base units. */
export interface X402PaymentRecord {
  id: string;
  listingId: string | null;
  listingSlug: string | null;
  merchantId: string | null;
  scheme: X402Scheme;
  chainId: number;
  payer: Address;
  payee: Address;
  amount: bigint;
  nonce: string;
  /** `8004:{chainId}:{tokenId}` from `agentId` / `X-Agent-ID`; null when absent. */
  agentId: string | null;
  status: X402PaymentStatus;
  error: string | null;
  upstreamStatus: number | null;
  txHash: string | null;
  createdAt: Date;
  settledAt: Date | null;
}

/**
 * What the x402 service asks of agent identities. `verifyAgent` runs before anything is claimed,
 * called or broadcast when a paid call names an agent; it throws a DomainError to refuse.
 * `paymentRecorded` runs after each settled or failed paid call; it must not throw (a failure is
 * logged, never answered).
 */
export interface X402AgentPort {
  verifyAgent(input: {
    agentId: string;
    signature?: string;
    payer: Address;
    proof: string;
    /**
     * The timestamp (`validAfter`) and nonce the agent signature covers, when the proof is not a
     * gateway proof (the standard `exact` payment of `/x402/{slug}`).
     */
    authorization?: { validAfter: bigint; nonce: `0x${string}` };
  }): Promise<void>;
  paymentRecorded(p: X402PaymentRecord): Promise<void>;
  /**
   * One of the merchant's own agents deployed here (by `8004:{chainId}:{tokenId}`, a bare token id,
   * or its smart account's address), for the payer endpoints (proofs, deposit, withdraw,
   * balance); null for anything else, another merchant's agent included. Optional: without it
   * no agent can be named there.
   */
  merchantAgent?(
    merchantId: string,
    by: { agentId: string } | { account: Address },
  ): Promise<MerchantAgent | null>;
}

/** An agent the service deployed for a merchant: its smart account and the wallet that owns it. */
export interface MerchantAgent {
  /** `8004:{chainId}:{tokenId}`. */
  agentId: string;
  tokenId: bigint;
  /** The smart account (lower case): the agent's wallet, which pays. */
  account: Address;
  /** The managed wallet that owns the account and signs for it. */
  ownerWalletId: string;
}

/** `8004:{chainId}:{tokenId}`: decimal chain id and token id, no leading zeros. */
export const AGENT_ID = /^8004:(0|[1-9][0-9]{0,18}):(0|[1-9][0-9]{0,77})$/;

/** The default port: checks the agentId's format only; records nothing beyond our table. */
export const defaultAgentPort: X402AgentPort = {
  verifyAgent({ agentId }) {
    if (!AGENT_ID.test(agentId)) return Promise.reject(new DomainError("x402_agent_invalid"));
    return Promise.resolve();
  },
  paymentRecorded() {
    return Promise.resolve();
  },
};

/** Payments of one agent and their totals (newest first). */
export interface AgentPayments {
  payments: X402PaymentRecord[];
  totals: { count: number; settledCount: number; failedCount: number; settledAmount: bigint };
}
