/** The signing secret (cookie) and the deliveries API (cookie or merchant key). */
import { z } from "zod";
import { errors } from "../../http/contract.ts";
import { defineRoute, type RouteAuth } from "../../http/route.ts";
import { M } from "../../http/messages.ts";
import * as service from "./webhooks.service.ts";
import { deliveriesQuery, deliveryView } from "./webhooks.schemas.ts";

const session: RouteAuth = { accept: ["cookie"] };
const owner: RouteAuth = { accept: ["cookie", "apiKey"], keyKinds: ["merchant"] };
const tag = "Webhooks";
const secretBody = z.object({ success: z.literal(true), secret: z.string() });

export const webhooksRoutes = [
  defineRoute({
    method: "get",
    path: "/api/merchant/webhook-secret",
    summary: "The signing secret of outbound deliveries",
    tag,
    auth: session,
    responses: {
      200: {
        description: "The secret",
        schema: secretBody,
        example: { success: true, secret: "whsec_..." },
      },
      ...errors([401, 429]),
    },
    handler: async (x) => ({ secret: await service.getSecret(x.deps, x.merchant.id) }),
  }),
  defineRoute({
    method: "post",
    path: "/api/merchant/webhook-secret/roll",
    summary: "Replace the signing secret",
    tag,
    auth: session,
    responses: {
      200: { description: "The new secret", schema: secretBody },
      ...errors([401, 429]),
    },
    handler: async (x) => ({ secret: await service.rollSecret(x.deps, x.merchant.id) }),
    // Bodiless, but bodies are thrown at it all the same.
    fuzz: { sample: {}, runsDivisor: 3, bodies: true },
  }),
  defineRoute({
    method: "get",
    path: "/api/webhooks/deliveries",
    summary: "Outbound deliveries, newest first",
    tag,
    auth: owner,
    query: deliveriesQuery,
    queryErrors: { message: M.deliveriesQuery },
    responses: {
      200: {
        description: "Deliveries with their attempts",
        schema: z.object({ success: z.literal(true), deliveries: z.array(deliveryView) }),
      },
      ...errors([400, 401, 403, 429]),
    },
    handler: async (x) => ({
      deliveries: await service.listDeliveries(x.deps, x.merchant.id, x.query),
    }),
    fuzz: { as: "cookie" },
  }),
  defineRoute({
    method: "post",
    path: "/api/webhooks/deliveries/:id/replay",
    summary: "Attempt a delivery again now",
    tag,
    auth: owner,
    params: z.object({ id: z.string() }),
    responses: {
      200: {
        description: "The delivery after the attempt",
        schema: z.object({ success: z.literal(true), delivery: deliveryView }),
      },
      ...errors([400, 401, 403, 404, 429]),
    },
    handler: async (x) => ({
      delivery: await service.replay(x.deps, x.merchant.id, x.params.id),
    }),
    fuzz: { as: "cookie" },
  }),
];
