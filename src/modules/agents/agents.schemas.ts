/**
 * Agents (ERC-8004): the deploy body (DESIGN §9), the status and reputation queries, the Agent
 * resource and the routes.
 */
import { z } from "zod";
import { M } from "../../http/messages.ts";
import { errorBody, errors, type RouteDoc } from "../../http/contract.ts";
import { isAddress } from "../../chain/address.ts";
import { AGENT_STATUSES, TOKEN_ID } from "./agents.rules.ts";

const uri = z.string({ error: M.agentMetadata }).max(2048, M.agentMetadata)
  .refine((s) => /^(ipfs:\/\/[A-Za-z0-9./_-]+|https:\/\/\S+)$/.test(s), M.agentMetadata);

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

const payment = z.object({
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
const agentAnswer = z.union([agentRecord, agentBasicRecord]);

const ok = z.literal(true);
const tag = "Agents";
const merchantKey = ["bearer", "apiKey"] as const;

export const agentsRoutes: RouteDoc[] = [
  {
    method: "post",
    path: "/api/agent/deploy",
    summary: "Deploy an agent: owner wallet, CREATE2 smart account, ERC-8004 registration",
    tag,
    auth: [...merchantKey],
    idempotent: true,
    body: deployAgentBody,
    bodyExample: { name: "Research Scout", metadataURI: "ipfs://bafy…/agent.json" },
    responses: {
      201: {
        description: "Registered on chain",
        schema: z.object({
          success: ok,
          agent: agentRecord,
          agentId: z.string(),
          txHash: z.string(),
          explorerUrl: z.string(),
        }),
      },
      ...errors([400, 401, 403, 408, 409, 429, 500, 502]),
    },
  },
  {
    method: "get",
    path: "/api/agent/status",
    summary:
      "Agents by smart account (public: the basic record), token id or name (your agents, bearer key)",
    tag,
    auth: [...merchantKey],
    query: statusQuery,
    responses: {
      200: {
        description: "Matches: full records of your own agents (with your key), basic records " +
          "(Agent without managedWalletId, usdcBalance, reputation and payments) otherwise",
        schema: z.object({
          success: ok,
          agent: agentAnswer,
          agents: z.array(agentAnswer),
          count: z.number(),
        }),
      },
      400: { description: "Malformed query", schema: errorBody },
      401: {
        description: "`Authentication required for agent search/listing.`",
        schema: errorBody,
      },
      404: { description: "`No agent found matching query.`", schema: errorBody },
      ...errors([403, 429, 500]),
    },
  },
  {
    method: "get",
    path: "/api/agent/reputation",
    summary: "An agent's reputation estimate from its payments, and its registry",
    tag,
    auth: [...merchantKey],
    query: reputationQuery,
    responses: {
      200: {
        description: "The summary",
        schema: z.object({
          success: ok,
          agent: z.object({
            tokenId: z.string(),
            name: z.string(),
            scaAddress: z.string(),
            status: z.enum(AGENT_STATUSES),
          }),
          reputationSummary: z.object({
            estimatedScore: z.number(),
            totalPayments: z.number(),
            successfulPayments: z.number(),
            totalVolumeUSDC: z.number(),
            reputationRegistryAddress: z.string(),
            onChainFeedbackCount: z.number(),
            onChainAverage: z.number(),
          }),
          recentPayments: z.array(payment),
        }),
      },
      ...errors([400, 401, 403, 404, 429, 500]),
    },
  },
];
