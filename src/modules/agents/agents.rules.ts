/** Agent rules with no I/O: the record shape, the identifier, the reputation estimate. */

export const AGENT_STATUSES = ["PROVISIONING", "ACTIVE_AGENT_PROVISIONED"] as const;
export type AgentStatus = typeof AGENT_STATUSES[number];

/** How many payments an agent record shows (spec: Agent recentPayments, 5). */
export const RECENT_PAYMENTS = 5;

export interface AgentRow {
  id: string;
  merchantId: string;
  chainId: number;
  name: string;
  metadataUri: string;
  manifest: unknown;
  ownerWalletId: string;
  ownerAddress: string;
  scaAddress: string;
  salt: string;
  /** numeric(78,0) as text; null while provisioning. */
  tokenId: string | null;
  /** The identity registry it was registered in (lowercase); null: from before migration 0023. */
  identityRegistry: string | null;
  status: AgentStatus;
  registerTxHash: string | null;
  createdAt: Date;
  updatedAt: Date;
}

/** `8004:{chainId}:{tokenId}`: the full ERC-8004 agent identifier. */
export function agentIdentifier(chainId: number, tokenId: string): string {
  return `8004:${chainId}:${tokenId}`;
}

/** Token id digits (no sign, no leading zero; ERC-8004 registries number agents from 0). */
export const TOKEN_ID = /^(0|[1-9][0-9]{0,77})$/;

const MAX_UINT256 = 2n ** 256n - 1n;

/**
 * An agent named by `8004:{chainId}:{tokenId}`, or (with `bare`) by its token id alone: the
 * parts, or null for anything else (a token id beyond uint256 names no agent).
 */
export function parseAgentId(
  text: string,
  opts: { bare: boolean },
): { chainId: number | null; tokenId: string } | null {
  const m = /^(?:8004:(0|[1-9][0-9]{0,18}):)?(0|[1-9][0-9]{0,77})$/.exec(text);
  if (!m || (m[1] === undefined && !opts.bare) || BigInt(m[2]) > MAX_UINT256) return null;
  return { chainId: m[1] === undefined ? null : Number(m[1]), tokenId: m[2] };
}

/** One payment the agent made, as its record shows it. */
export interface AgentPayment {
  id: string;
  amount: bigint;
  status: string;
  timestamp: Date;
}

/** An agent's payment history: the newest few and totals over all of them. */
export interface AgentPaymentHistory {
  recent: AgentPayment[];
  /** Every status, in flight included. */
  count: number;
  successCount: number;
  failedCount: number;
  /** Sum of successful payments, base units. */
  settledAmount: bigint;
}

/**
 * 0–100 from the success rate of the stored payments that have an outcome (one in flight counts
 * when it ends), rounded half up; 0 with none.
 */
export function reputationEstimate(
  h: Pick<AgentPaymentHistory, "successCount" | "failedCount">,
): number {
  const decided = h.successCount + h.failedCount;
  if (decided === 0) return 0;
  return Math.floor((h.successCount * 200 + decided) / (decided * 2));
}

/** A manifest as the registration file URI: an RFC 2397 base64 JSON data URI (ERC-8004 allows it). */
export function manifestUri(manifest: Record<string, unknown>): string {
  const json = JSON.stringify(manifest);
  const bytes = new TextEncoder().encode(json);
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  return `data:application/json;base64,${btoa(binary)}`;
}

/** LIKE pattern for a case-insensitive partial match of `name` (wildcards escaped). */
export function namePattern(name: string): string {
  return `%${name.replace(/[\\%_]/g, (ch) => `\\${ch}`)}%`;
}
