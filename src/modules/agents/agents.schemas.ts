/**
 * Agents (ERC-8004): the deploy body (DESIGN §9), the status and reputation queries, the Agent
 * resource and the routes.
 */
import { z } from "zod";
import { M } from "../../http/messages.ts";
import { isAddress } from "../../chain/address.ts";
import { AGENT_STATUSES, TOKEN_ID } from "./agents.rules.ts";

// Its own text: a URI too long or of another scheme was answered "exactly one of", which a
// caller who sent exactly one could not act on.
const uri = z.string({ error: M.agentMetadataUri }).max(2048, M.agentMetadataUri)
  .refine((s) => /^(ipfs:\/\/[A-Za-z0-9./_-]+|https:\/\/\S+)$/.test(s), M.agentMetadataUri);

export const deployAgentBody = z.object({
  name: z.string({ error: M.agentName }).trim().min(1, M.agentName).max(100, M.agentName),
  metadataURI: uri.optional().describe("The agent's registration file (ipfs:// or https://)"),
  manifest: z.record(z.string(), z.unknown(), { error: M.agentManifest })
    .refine((m) => JSON.stringify(m).length <= 8000, M.agentManifest).optional()
    .describe("An ERC-8004 registration file; registered as a base64 JSON data URI"),
}).superRefine((b, ctx) => {
  if ((b.metadataURI === undefined) === (b.manifest === undefined)) {
    ctx.addIssue({ code: "custom", message: M.agentMetadata, path: ["metadataURI"] });
  }
});
export type DeployAgentInput = z.output<typeof deployAgentBody>;

export const statusQuery = z.object({
  scaAddress: z.string().refine((a) => isAddress(a), M.agentQuery).optional()
    .describe("The agent's smart account; alone, no credential is needed"),
  tokenId: z.string().regex(TOKEN_ID, M.agentQuery).optional(),
  name: z.string().min(1, M.agentQuery).max(100, M.agentQuery).optional()
    .describe("Case-insensitive partial match"),
});

export const reputationQuery = z.object({
  agentId: z.string({ error: M.agentIdQuery })
    .regex(/^(0|[1-9][0-9]{0,77}|8004:[0-9]{1,19}:(0|[1-9][0-9]{0,77}))$/, M.agentIdQuery)
    .describe("The token id (or the full 8004:{chainId}:{tokenId})"),
});

export const payment = z.object({
  id: z.string(),
  amount: z.number(),
  status: z.string(),
  timestamp: z.string(),
});

export const agentRecord = z.object({
  name: z.string(),
  tokenId: z.string(),
  agentId: z.string().describe("8004:{chainId}:{tokenId}"),
  scaAddress: z.string(),
  managedWalletId: z.string(),
  ownerNode: z.string(),
  metadataURI: z.string(),
  status: z.enum(AGENT_STATUSES),
  usdcBalance: z.string(),
  reputation: z.number(),
  recentPayments: z.array(payment),
  totalPaid: z.number(),
  paymentCount: z.number(),
  chain: z.string(),
  registerTxHash: z.string().nullable(),
  createdAt: z.string(),
}).meta({ id: "Agent" });

/** What the public lookup by `scaAddress` shows (the spec's basic record): nothing about money. */
export const agentBasicRecord = z.object({
  name: z.string(),
  tokenId: z.string(),
  agentId: z.string().describe("8004:{chainId}:{tokenId}"),
  scaAddress: z.string(),
  ownerNode: z.string().describe("The owner address (the token's holder)"),
  metadataURI: z.string(),
  status: z.enum(AGENT_STATUSES),
  chain: z.string(),
}).meta({
  id: "AgentBasic",
  description: "The basic agent record: no managedWalletId, balance, payments or reputation",
});

/** Full for the caller's own agents (a key's lookup), basic for the public lookup. */
export const agentAnswer = z.union([agentRecord, agentBasicRecord]);
