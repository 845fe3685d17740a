/**
 * /api/cctp/*: POST transfer (the consumer_token cookie; the source is always the consumer's own
 * managed wallet), the public chain descriptors and transfer status, and the local attester in
 * the shape of Circle's attestation API.
 */
import { z } from "zod";
import { getCookie } from "hono/cookie";
import { DomainError } from "../../errors.ts";
import { errors } from "../../http/contract.ts";
import { defineRoute, type RouteAuth } from "../../http/route.ts";
import { M } from "../../http/messages.ts";
import { CONSUMER_COOKIE } from "../../http/session-token.ts";
import { profileForDomain, type SourceChainName } from "../../chain/profiles.ts";
import { localFeeTiers } from "./bridge.attestation.ts";
import * as service from "./bridge.service.ts";
import { consumerKeyScope } from "../consumers/consumers.service.ts";
import { DESTINATION_CHAIN, isSupportedSource, TRANSFER_SPEEDS } from "./bridge.rules.ts";
import {
  attestedMessage,
  attesterParams,
  attesterQuery,
  destinationChain,
  errorWithBalance,
  feeParams,
  REQUIRED_FIELDS,
  sourceChain,
  statusQuery,
  transferBody,
  transferRecord,
} from "./bridge.schemas.ts";

const open: RouteAuth = { accept: [] };
const ok = z.literal(true);
const tag = "Bridge";

export const bridgeRoutes = [
  defineRoute({
    method: "post",
    path: "/api/cctp/transfer",
    summary: "Bridge USDC from your managed wallet on a source chain into Settle_Testnet",
    tag,
    auth: { accept: [], consumer: true },
    idempotent: true,
    // Keys are the consumer's, not its network address's: two consumers behind one NAT using
    // the same key (an order id) each get their own transfer.
    idempotencyScope: (c, deps) => consumerKeyScope(deps, getCookie(c, CONSUMER_COOKIE)),
    body: transferBody,
    bodyExample: {
      fromChain: "Base_Sepolia",
      toChain: "Settle_Testnet",
      amount: "10.00",
      recipient: "0x5B38Da6a701c568545dCfcB03FcB875f56beddC4",
    },
    responses: {
      202: {
        description: "Started; poll the status path",
        schema: z.object({
          success: ok,
          status: z.literal("pending"),
          reference: z.string().describe("bridge_<random>"),
          message: z.string(),
          statusUrl: z.string().describe("The status path of this transfer"),
          transferSpeed: z.enum(TRANSFER_SPEEDS),
          burnAmount: z.string().describe("What will be burned (a checkout: amount plus fee)"),
          maxFee: z.string().describe("The bridge fee this transfer allows"),
        }),
      },
      400: {
        description: "Missing or malformed fields, too little USDC, or an amount below the fee",
        schema: errorWithBalance,
      },
      409: {
        description: "paymentReference names a payment that is no longer payable",
        schema: errorWithBalance.extend({ status: z.string().optional() }),
      },
      ...errors([401, 404, 429, 500]),
    },
    // The spec's order: the session, then every missing field at once, then the chains.
    checks: [
      async ({ c, deps, locals }) => {
        locals.account = await service.signedIn(deps, getCookie(c, CONSUMER_COOKIE));
      },
      async ({ json }) => {
        const body = await json();
        if (
          REQUIRED_FIELDS.some((f) => body[f] === undefined || body[f] === null || body[f] === "")
        ) {
          throw new DomainError("bridge_fields_missing");
        }
        if (typeof body.fromChain !== "string" || !isSupportedSource(body.fromChain)) {
          throw new DomainError("bridge_source_unsupported", {
            chain: String(body.fromChain).slice(0, 64),
          });
        }
        if (body.toChain !== DESTINATION_CHAIN) {
          throw new DomainError("bridge_destination_unsupported");
        }
      },
    ],
    handler: async (x) => {
      const account = x.locals.account as Awaited<ReturnType<typeof service.signedIn>>;
      const request = {
        fromChain: (await x.json()).fromChain as SourceChainName,
        amount: x.body.amount,
        recipient: x.body.recipient,
        transferSpeed: x.body.transferSpeed,
      };
      // With an Idempotency-Key the transfer's reference is the request's: a retry after a
      // crash finds the first transfer rather than burning again.
      const reference = x.idempotencyKey === undefined
        ? undefined
        : service.requestReference(x.deps, account.id, x.idempotencyKey, {
          ...request,
          paymentReference: x.body.paymentReference,
        });
      const t = x.body.paymentReference
        ? await service.payFromChain(x.deps, account, x.body.paymentReference, request, {
          reference,
        })
        : await service.startTransfer(x.deps, account, request, { reference });
      const statusUrl = service.statusPath(t.reference);
      return {
        ...service.transferView(x.deps, t),
        status: "pending",
        message: `${M.bridgeStarted} GET ${statusUrl}`,
        statusUrl,
      };
    },
    // No consumer session, so every body is refused before it is read.
    fuzz: {
      sample: {
        fromChain: "Base_Sepolia",
        toChain: "Settle_Testnet",
        amount: "1",
        recipient: "$dead",
      },
      runsDivisor: 5,
    },
  }),
  defineRoute({
    method: "get",
    path: "/api/cctp/transfer",
    summary: "The chains bridging supports",
    tag,
    auth: open,
    responses: {
      200: {
        description: "Source and destination chains",
        schema: z.object({
          success: ok,
          sourceChains: z.array(sourceChain),
          destinationChains: z.array(destinationChain),
        }),
      },
      ...errors([429]),
    },
    handler: () => service.descriptors(),
  }),
  defineRoute({
    method: "get",
    path: "/api/cctp/transfer/status",
    summary: "A bridge transfer's progress: pending → burned → attested → minted | failed",
    tag,
    auth: open,
    query: statusQuery,
    responses: {
      200: {
        description: "The transfer",
        schema: transferRecord.extend({ success: ok }),
      },
      ...errors([400, 404, 429]),
    },
    queryErrors: {},
    handler: async (x) =>
      service.transferView(x.deps, await service.findTransfer(x.deps, x.query.reference)),
    fuzz: {},
  }),
  defineRoute({
    method: "get",
    path: "/api/cctp/attestation/v2/messages/:sourceDomain",
    summary:
      "The local attester, in the shape of Circle's attestation API (GET /v2/messages/{sourceDomain})",
    tag,
    auth: open,
    params: attesterParams,
    query: attesterQuery,
    responses: {
      200: {
        description: "The burn's messages with their attestations",
        schema: z.object({ messages: z.array(attestedMessage) }),
      },
      400: { description: "Malformed parameters", schema: z.object({ error: z.string() }) },
      404: { description: "No such burn (yet)", schema: z.object({ error: z.string() }) },
      503: {
        description: "No attester key is configured",
        schema: z.object({ error: z.string() }),
      },
      ...errors([429]),
    },
    rawQuery: true,
    handler: async ({ c, deps, params }) => {
      const domain = params.sourceDomain;
      const hash = c.req.query("transactionHash") ?? "";
      if (!/^\d{1,10}$/.test(domain) || !/^0x[0-9a-fA-F]{64}$/.test(hash)) {
        return c.json({ error: "Invalid sourceDomain or transactionHash" }, 400);
      }
      const chain = profileForDomain(Number(domain));
      if (!chain) return c.json({ error: "Message not found" }, 404);
      try {
        const messages = await deps.chain.cctp.attest(chain, hash as `0x${string}`);
        if (!messages) return c.json({ error: "Message not found" }, 404);
        return { messages };
      } catch (e) {
        if (e instanceof DomainError && e.code === "chain_unavailable") {
          return c.json({ error: e.details.hint ?? "attester unavailable" }, 503);
        }
        throw e;
      }
    },
  }),
  defineRoute({
    method: "get",
    path: "/api/cctp/attestation/v2/burn/USDC/fees/:sourceDomain/:destinationDomain",
    summary:
      "The local attester's fee tiers, in the shape of Circle's fee API (minimumFee in basis points)",
    tag,
    auth: open,
    params: feeParams,
    responses: {
      200: {
        description: "One tier per finality threshold: 1000 fast, 2000 standard",
        schema: z.array(z.object({
          finalityThreshold: z.number().int(),
          minimumFee: z.number(),
        })),
      },
      400: { description: "Malformed parameters", schema: z.object({ error: z.string() }) },
      ...errors([429]),
    },
    handler: ({ c, deps, params }) => {
      const { sourceDomain, destinationDomain } = params;
      if (!/^\d{1,10}$/.test(sourceDomain) || !/^\d{1,10}$/.test(destinationDomain)) {
        return c.json({ error: "Invalid sourceDomain or destinationDomain" }, 400);
      }
      return c.json(localFeeTiers(deps));
    },
  }),
];
