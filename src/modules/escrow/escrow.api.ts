/**
 * /api/escrow/*: the merchant's secret or merchant key, as `Authorization: Bearer` or `x-api-key`
 * (publishable and scope-limited keys without `escrow` are refused), in the escrow rate-limit
 * group; every POST takes an Idempotency-Key. A key's prefix is its environment: it picks the
 * chain of a new escrow, and only that chain's escrows are seen or acted on (another
 * environment's answer 404, like another merchant's).
 */
import { type Context, Hono } from "hono";
import type { Deps } from "../../deps.ts";
import { parseQuery, readJsonObject } from "../../http/body.ts";
import { parseOrThrow } from "../../http/contract.ts";
import { type AuthEnv, guard, merchantOf, profileOf } from "../../http/auth.ts";
import { idempotent } from "../../http/idempotency.ts";
import { M } from "../../http/messages.ts";
import * as service from "./escrow.service.ts";
import type { EscrowScope } from "./escrow.service.ts";
import {
  CREATE_HINTS,
  createEscrowBody,
  disputeBody,
  escrowQuery,
  partyActionBody,
  refundBody,
  resolveBody,
} from "./escrow.schemas.ts";

const MESSAGES = {
  release: M.escrowReleased,
  confirm: M.escrowConfirmed,
  refund: M.escrowRefunded,
  resolveReleased: M.escrowResolvedReleased,
  resolveRefunded: M.escrowResolvedRefunded,
} as const;

export function escrowApi(deps: Deps) {
  const app = new Hono<AuthEnv>();
  const merchantKey = (write: boolean) =>
    guard(deps, {
      accept: ["bearer", "apiKey"],
      keyKinds: ["merchant", "secret"],
      scope: "escrow",
      write,
      group: "escrow",
    });
  const write = merchantKey(true);
  const read = merchantKey(false);
  // DESIGN §9: the operator credential, and nothing else, resolves disputes.
  const operator = guard(deps, {
    accept: ["bearer", "apiKey"],
    keyKinds: ["operator"],
    write: true,
    group: "escrow",
  });
  const once = idempotent(deps);
  const scopeOf = (c: Context<AuthEnv>): EscrowScope => ({
    merchantId: merchantOf(c).id,
    profile: profileOf(c),
  });
  const create = createEscrowBody(deps.config.WEBHOOK_TARGETS);

  app.post("/api/escrow/create", write, once, async (c) => {
    const input = parseOrThrow(create, await readJsonObject(c), CREATE_HINTS);
    const e = service.escrowView(
      deps,
      await service.createEscrow(deps, merchantOf(c), profileOf(c), input),
    );
    return c.json({
      success: true,
      reference: e.reference,
      status: "ACTIVE" as const,
      amount: e.amount,
      currency: e.currency,
      depositor: e.depositor,
      beneficiary: e.beneficiary,
      expiresAt: e.expiresAt,
      txHash: e.txHash,
      explorerUrl: e.explorerUrl,
      escrow: e,
    }, 201);
  });

  app.post("/api/escrow/release", write, once, async (c) => {
    const input = parseOrThrow(partyActionBody, await readJsonObject(c));
    const r = await service.release(deps, scopeOf(c), input.reference, input.callerSCA);
    return c.json(done(r));
  });

  app.post("/api/escrow/confirm", write, once, async (c) => {
    const input = parseOrThrow(partyActionBody, await readJsonObject(c));
    const r = await service.confirm(deps, scopeOf(c), input.reference, input.callerSCA);
    return c.json(done(r));
  });

  app.post("/api/escrow/dispute", write, once, async (c) => {
    const input = parseOrThrow(disputeBody, await readJsonObject(c));
    const r = await service.dispute(deps, scopeOf(c), input);
    return c.json({ success: true, ...r, message: M.escrowDisputed });
  });

  app.post("/api/escrow/refund", write, once, async (c) => {
    const input = parseOrThrow(refundBody, await readJsonObject(c));
    return c.json(done(await service.refund(deps, scopeOf(c), input.reference)));
  });

  app.post("/api/escrow/resolve", operator, once, async (c) => {
    const input = parseOrThrow(resolveBody, await readJsonObject(c));
    return c.json(done(await service.resolve(deps, input.reference, input.outcome)));
  });

  app.get("/api/escrow", read, async (c) => {
    const q = parseQuery(c, escrowQuery);
    if (q.reference !== undefined) {
      const e = await service.getEscrow(deps, scopeOf(c), q.reference);
      return c.json({ success: true, escrow: service.escrowView(deps, e) });
    }
    const rows = await service.listEscrows(deps, scopeOf(c), { status: q.status, limit: q.limit });
    return c.json({ success: true, escrows: rows.map((e) => service.escrowView(deps, e)) });
  });

  return app;
}

function done(r: Awaited<ReturnType<typeof service.release>>) {
  return {
    success: true as const,
    escrow: r.escrow,
    txHash: r.txHash,
    explorerUrl: r.explorerUrl,
    message: MESSAGES[r.done],
  };
}
