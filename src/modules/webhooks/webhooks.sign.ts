/**
 * Standard Webhooks signatures (`standardwebhooks`): `webhook-id`, `webhook-timestamp`,
 * `webhook-signature`, and the same signature in `x-service-signature`.
 */
import { Webhook } from "standardwebhooks";

export function signedHeaders(
  secret: string,
  deliveryId: string,
  at: Date,
  body: string,
): Record<string, string> {
  const signature = new Webhook(secret).sign(deliveryId, at, body);
  return {
    "content-type": "application/json",
    "user-agent": "Settlement-Webhooks/1.0",
    "webhook-id": deliveryId,
    "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
    "webhook-signature": signature,
    "x-service-signature": signature,
  };
}

/** A new secret: 32 random bytes, base64, `whsec_` prefix. */
export function newWebhookSecret(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return `whsec_${btoa(String.fromCharCode(...bytes))}`;
}
