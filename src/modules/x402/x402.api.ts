/**
 * /api/x402/*: listings (merchant key to create, public to browse), pay (the proof is the only
 * credential), verify, gateway deposit, seller balance and withdraw (bearer merchant key), and
 * the merchant's own payers (managed wallets and agents): proofs, balance, withdraw.
 */
import { Hono } from "hono";
import type { Deps } from "../../deps.ts";
import { parseQuery, readJsonObject } from "../../http/body.ts";
import { parseOrThrow } from "../../http/contract.ts";
import { type AuthEnv, guard, merchantOf } from "../../http/auth.ts";
import { idempotent } from "../../http/idempotency.ts";
import { M } from "../../http/messages.ts";
import * as service from "./x402.service.ts";
import * as gateway from "./x402.gateway.ts";
import * as payers from "./x402.payers.ts";
import type { X402Deps } from "./x402.context.ts";
import {
  createListingBody,
  depositBody,
  listingsQuery,
  payBody,
  payerBalanceQuery,
  payerWithdrawBody,
  proofBody,
  sellerBalanceQuery,
  verifyBody,
  withdrawBody,
} from "./x402.schemas.ts";

export function x402Api(x: X402Deps) {
  const deps: Deps = x;
  const app = new Hono<AuthEnv>();
  const merchant = (accept: ("bearer" | "apiKey")[], write: boolean) =>
    guard(deps, { accept, keyKinds: ["merchant", "secret"], scope: "x402", write });
  const anyone = guard(deps, { accept: [] });
  const once = idempotent(deps);
  const listingBody = createListingBody(deps.config.WEBHOOK_TARGETS);

  app.post("/api/x402/listings", merchant(["bearer", "apiKey"], true), once, async (c) => {
    const input = parseOrThrow(listingBody, await readJsonObject(c));
    const row = await service.createListing(deps, merchantOf(c), input);
    return c.json({ success: true, listing: service.listingView(row) }, 201);
  });

  app.get("/api/x402/listings", anyone, async (c) => {
    const q = parseQuery(c, listingsQuery);
    const rows = await service.listListings(deps, { limit: q.limit });
    return c.json({ success: true, listings: rows.map(service.listingView) });
  });

  app.post("/api/x402/pay", anyone, async (c) => {
    const body = parseOrThrow(payBody, await readJsonObject(c));
    const headerAgent = c.req.header("x-agent-id")?.trim();
    const agentId = body.agentId ?? (headerAgent || undefined);
    const r = await service.pay(x, {
      slug: body.slug,
      method: body.method,
      proof: body.paymentProof ?? (c.req.header("x-402-payment-proof")?.trim() || undefined),
      params: body.params,
      agentId,
      agentSignature: c.req.header("x-agent-signature")?.trim() || undefined,
    });
    if (!r.paid) {
      return c.json({ success: false, error: M.x402PaymentRequired, payment: r.requirements }, 402);
    }
    return c.json({ success: true, data: r.data, settlement: r.settlement });
  });

  app.post("/api/x402/verify", merchant(["bearer"], false), async (c) => {
    const input = parseOrThrow(verifyBody, await readJsonObject(c));
    const r = await service.verifyForMerchant(deps, merchantOf(c), input.proof);
    return c.json({ success: true, ...r });
  });

  app.post("/api/x402/gateway/deposit", merchant(["bearer", "apiKey"], true), once, async (c) => {
    const input = parseOrThrow(depositBody, await readJsonObject(c));
    const r = await gateway.deposit(x, merchantOf(c), input, c.req.header("idempotency-key"));
    return c.json({ success: true, ...r });
  });

  // Signs only (nothing is sent), so no Idempotency-Key: a retry gets a fresh proof, and no
  // proof (a bearer credential) is kept in the idempotency table.
  app.post("/api/x402/proofs", merchant(["bearer", "apiKey"], true), async (c) => {
    const input = parseOrThrow(proofBody, await readJsonObject(c));
    const r = await payers.signProof(x, merchantOf(c), input);
    return c.json({ success: true, ...r }, 201);
  });

  app.get("/api/x402/gateway/balance", merchant(["bearer", "apiKey"], false), async (c) => {
    const q = parseQuery(c, payerBalanceQuery, {
      message: (issues) => issues[0]?.message ?? M.x402PayerSource,
    });
    const r = await payers.payerBalance(x, merchantOf(c), q);
    return c.json({ success: true, ...r });
  });

  app.post("/api/x402/gateway/withdraw", merchant(["bearer", "apiKey"], true), once, async (c) => {
    const input = parseOrThrow(payerWithdrawBody, await readJsonObject(c));
    const r = await payers.withdrawPayer(
      x,
      merchantOf(c),
      input,
      c.req.header("idempotency-key"),
    );
    return c.json({ success: true, ...r });
  });

  app.get("/api/x402/seller/balance", merchant(["bearer"], false), async (c) => {
    const q = parseQuery(c, sellerBalanceQuery, { message: M.x402SellerAddress });
    const r = await gateway.sellerBalance(deps, merchantOf(c), q.sellerAddress);
    return c.json({ success: true, ...r });
  });

  app.post("/api/x402/seller/balance/withdraw", merchant(["bearer"], true), once, async (c) => {
    const input = parseOrThrow(withdrawBody, await readJsonObject(c));
    const r = await gateway.withdraw(deps, merchantOf(c), input, c.req.header("idempotency-key"));
    return c.json({ success: true, ...r });
  });

  return app;
}
