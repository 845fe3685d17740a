/**
 * The merchant's webhook signing secret, kept on the merchant row. The webhooks module reads and
 * replaces it only through these functions. (A file of its own, not merchants.service.ts: that
 * one reaches payments, and payments reach webhooks.)
 */
import type { Deps } from "../../deps.ts";
import * as repo from "./merchants.repo.ts";

export async function webhookSecret(deps: Pick<Deps, "sql">, merchantId: string) {
  return await repo.webhookSecret(deps.sql, merchantId);
}

export async function setWebhookSecret(
  deps: Pick<Deps, "sql">,
  merchantId: string,
  secret: string,
): Promise<void> {
  await repo.setWebhookSecret(deps.sql, merchantId, secret);
}
