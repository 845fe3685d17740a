/**
 * The standard x402 protocol on our listings, `GET|POST|… /x402/{slug}` (mounted by hand: not an
 * `/api/` route), and the self-hosted facilitator `/api/x402/facilitator/{verify,settle,supported}`
 * (route table; its answers are the protocol's bodies as built, with no `success` envelope). Unpaid calls answer 402 with
 * the v2 requirements in `PAYMENT-REQUIRED` and the v1 ones in the body; paid calls answer the
 * upstream's body with `PAYMENT-RESPONSE` (v2) or `X-PAYMENT-RESPONSE` (v1).
 */
import { Hono } from "hono";
import type { Deps } from "../../deps.ts";
import { z } from "zod";
import { errors } from "../../http/contract.ts";
import { type AuthEnv, guard } from "../../http/auth.ts";
import { type ApiRoute, defineRoute, type RouteAuth } from "../../http/route.ts";
import { encodeHeader } from "./x402.exact.ts";
import { METHODS } from "./x402.rules.ts";
import type { HttpMethod } from "./x402.rules.ts";
import * as standard from "./x402.standard.ts";
import type { X402Deps } from "./x402.context.ts";
import { facilitatorBody } from "./x402.schemas.ts";
import { batchedAwareCall } from "./x402.batched.ts";
import { channelSettle, channelVerify, withChannelKinds } from "./x402.channels.facilitator.ts";

const EXPOSE = "PAYMENT-REQUIRED, PAYMENT-RESPONSE, X-PAYMENT-RESPONSE";

export function x402StandardApi(x: X402Deps) {
  const deps: Deps = x;
  const app = new Hono<AuthEnv>();
  // A paid call is its own rate limit, and so is the 402 that a standard client asks for before
  // each one; refused payments and failures count per client address.
  const anyone = guard(deps, { accept: [], countAnswered: true });

  app.on([...METHODS], "/x402/:slug", anyone, async (c) => {
    const v2 = c.req.header("payment-signature")?.trim();
    const v1 = c.req.header("x-payment")?.trim();
    const url = new URL(c.req.url);
    const method = c.req.method as HttpMethod;
    const headerAgent = c.req.header("x-agent-id")?.trim();
    // Circle's batched option (x402.batched.ts) and the batch-settlement scheme
    // (x402.channels.ts) answer their payments; the 402 offers both beside `exact`.
    const r = await batchedAwareCall(x, {
      slug: c.req.param("slug"),
      method,
      resourceUrl: `${deps.config.BASE_URL}${url.pathname}`,
      query: url.search.replace(/^\?/, ""),
      body: method === "GET" || method === "DELETE" ? undefined : await c.req.text(),
      contentType: c.req.header("content-type"),
      payment: v2 ? { version: 2, header: v2 } : v1 ? { version: 1, header: v1 } : undefined,
      agentId: headerAgent || undefined,
      agentSignature: c.req.header("x-agent-signature")?.trim() || undefined,
    });
    c.header("Access-Control-Expose-Headers", EXPOSE);
    c.header("Cache-Control", "no-store");
    if (r.kind === "required") {
      // An offer (no payment was sent) is not counted; a refused payment is.
      if (!v2 && !v1) c.set("uncounted", true);
      c.header("PAYMENT-REQUIRED", encodeHeader(r.v2));
      return c.json(r.v1, 402);
    }
    c.set("uncounted", true);
    c.header(
      r.version === 2 ? "PAYMENT-RESPONSE" : "X-PAYMENT-RESPONSE",
      encodeHeader(r.paymentResponse),
    );
    if (r.contentType) c.header("Content-Type", r.contentType);
    return c.body(r.body.buffer as ArrayBuffer, r.status as 200);
  });

  return app;
}

const seller: RouteAuth = {
  accept: ["bearer"],
  keyKinds: ["merchant", "secret"],
  scope: "x402",
  write: true,
};
const tag = "x402 facilitator";

/** The facilitator: the protocol's bodies as the facilitator builds them (not reshaped). */
export function facilitatorRoutes(xOf: (deps: Deps) => X402Deps): ApiRoute[] {
  return [
    defineRoute({
      method: "get",
      path: "/api/x402/facilitator/supported",
      summary: "x402 facilitator: the schemes (`exact`, `batch-settlement`) and networks we " +
        "verify and settle",
      tag,
      auth: { accept: [] },
      responses: {
        200: {
          description: "Supported kinds",
          schema: z.object({
            kinds: z.array(z.object({
              x402Version: z.number(),
              scheme: z.string(),
              network: z.string(),
              extra: z.record(z.string(), z.unknown()).optional()
                .describe("batch-settlement: the receiverAuthorizer a seller may delegate to"),
            })),
            extensions: z.array(z.string()),
            signers: z.record(z.string(), z.array(z.string())),
          }),
        },
        ...errors([429]),
      },
      handler: async ({ c, deps }) => {
        const x = xOf(deps);
        return c.json(await withChannelKinds(x, standard.supported(x)));
      },
    }),
    defineRoute({
      method: "post",
      path: "/api/x402/facilitator/verify",
      summary: "x402 facilitator: verify an `exact` payment, or a `batch-settlement` deposit, " +
        "voucher or refund, against requirements",
      tag,
      auth: seller,
      body: facilitatorBody,
      responses: {
        200: {
          description: "isValid, or the protocol's invalidReason",
          schema: z.object({
            isValid: z.boolean(),
            invalidReason: z.string().optional(),
            payer: z.string().optional(),
            extra: z.record(z.string(), z.unknown()).optional()
              .describe("batch-settlement: the channel's on-chain state"),
          }),
        },
        ...errors([400, 401, 403, 429, 500]),
      },
      handler: async ({ c, deps, body }) => {
        const x = xOf(deps);
        return c.json((await channelVerify(x, body)) ?? await standard.facilitatorVerify(x, body));
      },
    }),
    defineRoute({
      method: "post",
      path: "/api/x402/facilitator/settle",
      summary: "x402 facilitator: settle an `exact` payment (once per nonce), or a " +
        "`batch-settlement` deposit, voucher (recorded; claimed in batches), claim, settle or " +
        "refund",
      tag,
      auth: seller,
      body: facilitatorBody,
      responses: {
        200: {
          description: "success with the transaction, or errorReason",
          schema: z.object({
            success: z.boolean(),
            errorReason: z.string().optional(),
            payer: z.string().optional(),
            transaction: z.string(),
            network: z.string(),
            amount: z.string().optional(),
            extra: z.record(z.string(), z.unknown()).optional()
              .describe("batch-settlement: chargedAmount and the channel's state"),
          }),
        },
        ...errors([400, 401, 403, 429, 500]),
      },
      handler: async ({ c, deps, body, merchant }) => {
        const x = xOf(deps);
        return c.json(
          (await channelSettle(x, merchant, body)) ??
            await standard.facilitatorSettle(x, merchant, body),
        );
      },
    }),
  ];
}
