/** /api/consumer/*: wallet-first sessions in the consumer_token cookie (30 days). */
import { z } from "zod";
import { getCookie } from "hono/cookie";
import { errors } from "../../http/contract.ts";
import { defineRoute, type RouteAuth } from "../../http/route.ts";
import {
  clearCookie,
  CONSUMER_COOKIE,
  CONSUMER_SESSION_SECONDS,
  setSessionCookie,
} from "../../http/session-token.ts";
import * as service from "./consumers.service.ts";
import { consumerAccount, iso, sessionBody } from "./consumers.schemas.ts";

// Consumers hold no API key; every consumer route is limited per client address.
const open: RouteAuth = { accept: [] };
const consumer: RouteAuth = { accept: [], consumer: true };
const ok = z.literal(true);
const tag = "Consumer";

export const consumersRoutes = [
  defineRoute({
    method: "post",
    path: "/api/consumer/session",
    summary: "Start a wallet-first session; sets the consumer_token cookie (30 days)",
    tag,
    auth: open,
    idempotent: true,
    body: sessionBody,
    bodyExample: { walletAddress: "0x5B38Da6a701c568545dCfcB03FcB875f56beddC4" },
    responses: {
      200: {
        description: "The account",
        schema: z.object({
          success: ok,
          account: z.object({ id: z.string(), walletAddress: z.string() }),
        }),
      },
      ...errors([400, 409, 429]),
    },
    // A replay (same Idempotency-Key and body) answers the stored body with a fresh cookie for
    // the account it names: a client that lost the first answer still gets its session.
    onReplay: async ({ c, deps, status, body }) => {
      const id = status === 200 ? (body as { account?: { id?: unknown } }).account?.id : null;
      const token = typeof id === "string" ? await service.resumeSession(deps, id) : null;
      if (token) setSessionCookie(c, deps.config, CONSUMER_COOKIE, token, CONSUMER_SESSION_SECONDS);
    },
    handler: async ({ c, deps, body }) => {
      const r = await service.startSession(deps, body.walletAddress);
      setSessionCookie(c, deps.config, CONSUMER_COOKIE, r.token, CONSUMER_SESSION_SECONDS);
      return {
        account: {
          id: r.account.id,
          walletAddress: service.publicAccount(r.account).walletAddress,
        },
      };
    },
    fuzz: { sample: { walletAddress: "$dead" } },
  }),
  defineRoute({
    method: "get",
    path: "/api/consumer/session",
    summary: "The account of the session cookie",
    tag,
    auth: consumer,
    responses: {
      200: {
        description: "The account",
        schema: z.object({ success: ok, account: consumerAccount }),
      },
      ...errors([401, 429]),
    },
    handler: async ({ c, deps }) => ({
      account: service.publicAccount(
        await service.sessionAccount(deps, getCookie(c, CONSUMER_COOKIE)),
      ),
    }),
  }),
  defineRoute({
    method: "delete",
    path: "/api/consumer/session",
    summary: "End the session; clears the cookie",
    tag,
    auth: open,
    responses: {
      200: { description: "Done", schema: z.object({ success: ok }) },
      ...errors([429]),
    },
    handler: ({ c, deps }) => {
      clearCookie(c, deps.config, CONSUMER_COOKIE);
      return {};
    },
  }),
  defineRoute({
    method: "get",
    path: "/api/consumer/balance",
    summary:
      "USDC balance on every settlement chain; for a managed wallet also on the bridge source chains running here (or configured with an RPC URL and USDC address): asking starts none",
    tag,
    auth: consumer,
    responses: {
      200: {
        description: "Balances",
        schema: z.object({
          success: ok,
          walletAddress: z.string(),
          balances: z.array(z.object({
            chain: z.string(),
            chainId: z.number().int(),
            currency: z.literal("USDC"),
            balance: z.string().describe("decimal, 6 places"),
          })),
        }),
      },
      ...errors([401, 429]),
    },
    handler: async ({ c, deps }) => {
      const account = await service.sessionAccount(deps, getCookie(c, CONSUMER_COOKIE));
      return {
        walletAddress: service.publicAccount(account).walletAddress,
        balances: await service.balances(deps, account),
      };
    },
  }),
  defineRoute({
    method: "get",
    path: "/api/consumer/activity",
    summary: "USDC transfers in and out, newest first",
    tag,
    auth: consumer,
    responses: {
      200: {
        description: "Transfers",
        schema: z.object({
          success: ok,
          walletAddress: z.string(),
          activity: z.array(z.object({
            chain: z.string(),
            direction: z.enum(["in", "out"]),
            counterparty: z.string(),
            amount: z.string(),
            currency: z.literal("USDC"),
            txHash: z.string(),
            blockNumber: z.number().int(),
            timestamp: iso.nullable(),
            explorerUrl: z.string(),
          })),
        }),
      },
      ...errors([401, 429]),
    },
    handler: async ({ c, deps }) => {
      const account = await service.sessionAccount(deps, getCookie(c, CONSUMER_COOKIE));
      return {
        walletAddress: service.publicAccount(account).walletAddress,
        activity: await service.activity(deps, account),
      };
    },
  }),
];
