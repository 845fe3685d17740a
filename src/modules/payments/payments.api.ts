/**
 * /api/merchant/payment-link (merchant session) and /api/payments/* (API key: x-api-key or
 * bearer). All in the shared payments rate-limit bucket; creates take an Idempotency-Key.
 */
import { Hono } from "hono";
import type { Deps } from "../../deps.ts";
import { parseQuery, readJsonObject } from "../../http/body.ts";
import { type AuthEnv, guard, merchantOf, profileOf } from "../../http/auth.ts";
import { idempotent } from "../../http/idempotency.ts";
import { M } from "../../http/messages.ts";
import { usdcToNumber } from "../../money.ts";
import * as service from "./payments.service.ts";
import { paymentRecord } from "./payments.rules.ts";
import { CREATE_HINTS, createPaymentBody, historyQuery } from "./payments.schemas.ts";
import { parseOrThrow } from "../../http/contract.ts";

export function paymentsApi(deps: Deps) {
  const app = new Hono<AuthEnv>();
  const session = guard(deps, { accept: ["cookie"], group: "payments" });
  const sessionRead = guard(deps, { accept: ["cookie"] });
  const write = guard(deps, {
    accept: ["apiKey", "bearer"],
    write: true,
    scope: "payments",
    group: "payments",
  });
  const read = guard(deps, { accept: ["apiKey", "bearer"], scope: "payments", group: "payments" });
  const once = idempotent(deps);
  const create = createPaymentBody(deps.config.WEBHOOK_TARGETS);

  app.post("/api/merchant/payment-link", session, once, async (c) => {
    const merchant = merchantOf(c);
    const input = parseOrThrow(create, await readJsonObject(c), CREATE_HINTS);
    // The session's mode picks the chain, as a key's prefix does.
    const p = await service.createPayment(deps, merchant, "link", profileOf(c), input);
    return c.json({
      success: true,
      reference: p.reference,
      checkoutUrl: service.checkoutUrl(deps, p.reference),
      amount: usdcToNumber(p.amount),
      currency: p.currency,
      description: p.description,
      merchant: merchant.businessName,
      expiresIn: "24 hours",
    }, 201);
  });

  app.get("/api/merchant/payment-link", sessionRead, async (c) => {
    const { rows } = await service.history(deps, merchantOf(c).id, [profileOf(c)], {
      kind: "link",
      limit: 100,
    });
    return c.json({
      success: true,
      links: rows.map((p) => ({
        reference: p.reference,
        amount: usdcToNumber(p.amount),
        currency: p.currency,
        status: p.status,
        checkoutUrl: service.checkoutUrl(deps, p.reference),
        createdAt: p.createdAt.toISOString(),
        description: p.description,
        expiresAt: p.expiresAt.toISOString(),
      })),
    });
  });

  app.post("/api/payments/initialize", write, once, async (c) => {
    const auth = c.get("auth");
    const input = parseOrThrow(create, await readJsonObject(c), CREATE_HINTS);
    const p = await service.createPayment(deps, merchantOf(c), "session", auth.key!.profile, input);
    return c.json({
      success: true,
      reference: p.reference,
      checkoutUrl: service.checkoutUrl(deps, p.reference),
      data: {
        amount: usdcToNumber(p.amount),
        currency: p.currency,
        status: p.status,
        description: p.description,
        expiresAt: p.expiresAt.toISOString(),
      },
    }, 201);
  });

  app.get("/api/payments/verify/:reference", read, async (c) => {
    const auth = c.get("auth");
    const data = await service.verifyPayment(
      deps,
      merchantOf(c).id,
      auth.key!.profile,
      c.req.param("reference"),
    );
    return c.json({ success: true, data });
  });

  app.get("/api/payments", read, async (c) => {
    const auth = c.get("auth");
    const q = parseQuery(c, historyQuery, { message: M.paymentHistoryQuery });
    const page = await service.history(deps, merchantOf(c).id, [auth.key!.profile], q);
    return c.json({
      success: true,
      data: page.rows.map((p) => ({
        ...paymentRecord(p, auth.key!.profile, deps.clock.now()),
        expiresAt: p.expiresAt.toISOString(),
      })),
      nextCursor: page.nextCursor,
    });
  });

  return app;
}
