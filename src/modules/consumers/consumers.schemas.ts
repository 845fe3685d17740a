/** Consumer sessions: the session request, the account and wallet views, the routes. */
import { z } from "zod";
import { M } from "../../http/messages.ts";
import { errors, type RouteDoc } from "../../http/contract.ts";
import { isAddress } from "../../chain/address.ts";

/** Only an omitted walletAddress makes a managed wallet; "" or null is an invalid address. */
export const sessionBody = z.object({
  walletAddress: z.string({ error: M.consumerAddress }).refine(isAddress, M.consumerAddress)
    .optional().describe("An external wallet to connect; omitted: a new managed wallet"),
});

const iso = z.string().describe("ISO 8601 timestamp");
const ok = z.literal(true);
const tag = "Consumer";

export const consumerAccount = z.object({
  id: z.string(),
  walletAddress: z.string(),
  walletType: z.enum(["MANAGED", "EXTERNAL"]),
  lastSeenAt: iso,
}).meta({ id: "ConsumerAccount" });

export const consumersRoutes: RouteDoc[] = [
  {
    method: "post",
    path: "/api/consumer/session",
    summary: "Start a wallet-first session; sets the consumer_token cookie (30 days)",
    tag,
    auth: [],
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
  },
  {
    method: "get",
    path: "/api/consumer/session",
    summary: "The account of the session cookie",
    tag,
    auth: ["consumerCookie"],
    responses: {
      200: {
        description: "The account",
        schema: z.object({ success: ok, account: consumerAccount }),
      },
      ...errors([401, 429]),
    },
  },
  {
    method: "delete",
    path: "/api/consumer/session",
    summary: "End the session; clears the cookie",
    tag,
    auth: [],
    responses: {
      200: { description: "Done", schema: z.object({ success: ok }) },
      ...errors([429]),
    },
  },
  {
    method: "get",
    path: "/api/consumer/balance",
    summary:
      "USDC balance on every settlement chain; for a managed wallet also on the bridge source chains running here (or configured with an RPC URL and USDC address): asking starts none",
    tag,
    auth: ["consumerCookie"],
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
  },
  {
    method: "get",
    path: "/api/consumer/activity",
    summary: "USDC transfers in and out, newest first",
    tag,
    auth: ["consumerCookie"],
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
  },
];
