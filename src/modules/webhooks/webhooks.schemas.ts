/** Webhooks: the `webhookUrl` request field other modules embed, the deliveries API, routes. */
import { z } from "zod";
import { M } from "../../http/messages.ts";
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
