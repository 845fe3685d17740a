/**
 * /api/agent/*: deploy and reputation take the merchant's bearer key (or `x-api-key`), scope
 * `agents`. GET /api/agent/status is public for a bare `scaAddress` query (the basic record)
 * and needs the key for anything else (`Authentication required for agent search/listing.`); a
 * bare lookup that brings a key is authenticated, and its merchant's own agent comes back full.
 */
import { z } from "zod";
import { presentQuery } from "../../http/body.ts";
import { errorBody, errors } from "../../http/contract.ts";
import { forbidden } from "../../http/errors.ts";
import { defineRoute, type RouteAuth } from "../../http/route.ts";
import { M } from "../../http/messages.ts";
import * as service from "./agents.service.ts";
import { AGENT_STATUSES } from "./agents.rules.ts";
import {
  agentAnswer,
  agentRecord,
  deployAgentBody,
  payment,
  reputationQuery,
  statusQuery,
} from "./agents.schemas.ts";

const merchantKey = (write: boolean, missing?: string): RouteAuth => ({
  accept: ["bearer", "apiKey"],
  keyKinds: ["merchant", "secret"],
  scope: "agents",
  write,
  messages: missing ? { missing } : undefined,
});
const ok = z.literal(true);
const tag = "Agents";

/** A query of `scaAddress` alone: the public lookup. */
const bareLookup = (c: Parameters<typeof presentQuery>[0]) => {
  const keys = Object.keys(presentQuery(c));
  return keys.length === 1 && keys[0] === "scaAddress";
};

export const agentsRoutes = [
  defineRoute({
    method: "post",
    path: "/api/agent/deploy",
    summary: "Deploy an agent: owner wallet, CREATE2 smart account, ERC-8004 registration",
    tag,
    auth: merchantKey(true),
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
    handler: async (x) => await service.deployAgent(x.deps, x.merchant, x.body, x.idempotencyKey),
    // The deploy sends transactions when well-formed, so fewer runs.
    fuzz: { sample: { name: "fuzz", metadataURI: "ipfs://fuzz" }, runsDivisor: 10 },
  }),
  defineRoute({
    method: "get",
    path: "/api/agent/status",
    summary:
      "Agents by smart account (public: the basic record), token id or name (your agents, bearer key)",
    tag,
    auth: {
      ...merchantKey(false, M.agentSearchAuth),
      // A publishable key (a browser's) may make the public lookup; the handler refuses it
      // anything else, as every route refuses it a secret key's reads.
      keyKinds: ["merchant", "secret", "publishable"],
      // A bare `scaAddress` lookup without a credential is public.
      openWhen: (c) => {
        const credential = c.req.header("authorization") !== undefined ||
          c.req.header("x-api-key") !== undefined;
        return bareLookup(c) && !credential;
      },
    },
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
    queryErrors: {},
    handler: async (x) => {
      const auth = x.c.get("auth");
      const publishable = auth.key?.kind === "publishable";
      if (publishable && !bareLookup(x.c)) throw forbidden(M.insufficientPermissions);
      // A publishable key sees what anyone sees: the basic record.
      const merchant = publishable ? null : auth.merchant ?? null;
      const agents = await service.findAgents(x.deps, merchant, x.query);
      return { agent: agents[0], agents, count: agents.length };
    },
    fuzz: {
      variants: [{ as: "none", keys: ["scaAddress"] }, { as: "bearer", keys: ["name", "tokenId"] }],
    },
  }),
  defineRoute({
    method: "get",
    path: "/api/agent/reputation",
    summary: "An agent's reputation estimate from its payments, and its registry",
    tag,
    auth: merchantKey(false),
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
    queryErrors: {},
    handler: async (x) => await service.reputation(x.deps, x.merchant, x.query.agentId),
    fuzz: { as: "bearer" },
  }),
];
