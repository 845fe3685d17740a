/** Webhooks: the `webhookUrl` request field other modules embed, the deliveries API, routes. */
import { z } from "zod";
import { M } from "../../http/messages.ts";
import { errors, type RouteDoc } from "../../http/contract.ts";
import { checkWebhookUrl, type TargetPolicy } from "./webhooks.targets.ts";

/**
 * An optional notification target: absent, null or empty is none; otherwise a URL our target
 * policy accepts (`WEBHOOK_TARGETS`), normalised. A refusal says why in its hint.
 */
export function webhookUrlField(policy: TargetPolicy) {
  return z.string({ error: M.webhookUrlInvalid }).nullish()
    .describe("Optional public HTTPS URL notified of this resource's events")
    .transform((raw, ctx): string | null => {
      if (!raw) return null;
      const check = checkWebhookUrl(raw.trim(), policy);
      if (check.ok) return check.url.toString();
      ctx.addIssue({
        code: "custom",
        message: M.webhookUrlInvalid,
        params: { hint: `webhookUrl: ${check.reason}` },
      });
      return z.NEVER;
    });
}

export const DELIVERY_STATUSES = ["pending", "delivered", "undelivered"] as const;

export const deliveriesQuery = z.object({
  reference: z.string().max(200).optional(),
  status: z.enum(DELIVERY_STATUSES).optional(),
  limit: z.coerce.number().int().min(1).max(500).optional(),
});

const iso = z.string().describe("ISO 8601 timestamp");

export const deliveryView = z.object({
  id: z.string(),
  event: z.string(),
  reference: z.string().nullable(),
  url: z.string(),
  status: z.enum(DELIVERY_STATUSES),
  attempts: z.number().int(),
  lastStatusCode: z.number().int().nullable(),
  lastError: z.string().nullable(),
  nextAttemptAt: iso.nullable(),
  createdAt: iso,
  deliveredAt: iso.nullable(),
  history: z.array(z.object({
    attempt: z.number().int(),
    at: iso,
    durationMs: z.number(),
    statusCode: z.number().int().nullable(),
    error: z.string().nullable(),
    outcome: z.enum(["delivered", "failed", "refused"]),
  })),
}).meta({ id: "WebhookDelivery" });

const secretBody = z.object({ success: z.literal(true), secret: z.string() });

export const webhooksRoutes: RouteDoc[] = [
  {
    method: "get",
    path: "/api/merchant/webhook-secret",
    summary: "The signing secret of outbound deliveries",
    tag: "Webhooks",
    auth: ["merchantCookie"],
    responses: {
      200: {
        description: "The secret",
        schema: secretBody,
        example: { success: true, secret: "whsec_..." },
      },
      ...errors([401, 429]),
    },
  },
  {
    method: "post",
    path: "/api/merchant/webhook-secret/roll",
    summary: "Replace the signing secret",
    tag: "Webhooks",
    auth: ["merchantCookie"],
    responses: {
      200: { description: "The new secret", schema: secretBody },
      ...errors([401, 429]),
    },
  },
  {
    method: "get",
    path: "/api/webhooks/deliveries",
    summary: "Outbound deliveries, newest first",
    tag: "Webhooks",
    auth: ["merchantCookie", "apiKey"],
    query: deliveriesQuery,
    responses: {
      200: {
        description: "Deliveries with their attempts",
        schema: z.object({ success: z.literal(true), deliveries: z.array(deliveryView) }),
      },
      ...errors([400, 401, 403, 429]),
    },
  },
  {
    method: "post",
    path: "/api/webhooks/deliveries/:id/replay",
    summary: "Attempt a delivery again now",
    tag: "Webhooks",
    auth: ["merchantCookie", "apiKey"],
    params: z.object({ id: z.string() }),
    responses: {
      200: {
        description: "The delivery after the attempt",
        schema: z.object({ success: z.literal(true), delivery: deliveryView }),
      },
      ...errors([400, 401, 403, 404, 429]),
    },
  },
];
