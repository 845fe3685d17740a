/** /api/consumer/*: wallet-first sessions in the consumer_token cookie (30 days). */
import { Hono } from "hono";
import { getCookie } from "hono/cookie";
import type { Deps } from "../../deps.ts";
import { readJsonObject } from "../../http/body.ts";
import { type AuthEnv, guard } from "../../http/auth.ts";
import { idempotent } from "../../http/idempotency.ts";
import {
  clearCookie,
  CONSUMER_COOKIE,
  CONSUMER_SESSION_SECONDS,
  setSessionCookie,
} from "../../http/session-token.ts";
import * as service from "./consumers.service.ts";
import { sessionBody } from "./consumers.schemas.ts";
import { parseOrThrow } from "../../http/contract.ts";

export function consumersApi(deps: Deps) {
  const app = new Hono<AuthEnv>();
  // Consumers hold no API key; every consumer route is limited per client address.
  const open = guard(deps, { accept: [] });

  app.post("/api/consumer/session", open, idempotent(deps), async (c) => {
    const body = parseOrThrow(sessionBody, await readJsonObject(c));
    const r = await service.startSession(deps, body.walletAddress);
    setSessionCookie(c, deps.config, CONSUMER_COOKIE, r.token, CONSUMER_SESSION_SECONDS);
    return c.json({
      success: true,
      account: { id: r.account.id, walletAddress: service.publicAccount(r.account).walletAddress },
    });
  });

  app.get("/api/consumer/session", open, async (c) => {
    const account = await service.sessionAccount(deps, getCookie(c, CONSUMER_COOKIE));
    return c.json({ success: true, account: service.publicAccount(account) });
  });

  app.delete("/api/consumer/session", open, (c) => {
    clearCookie(c, deps.config, CONSUMER_COOKIE);
    return c.json({ success: true });
  });

  app.get("/api/consumer/balance", open, async (c) => {
    const account = await service.sessionAccount(deps, getCookie(c, CONSUMER_COOKIE));
    return c.json({
      success: true,
      walletAddress: service.publicAccount(account).walletAddress,
      balances: await service.balances(deps, account),
    });
  });

  app.get("/api/consumer/activity", open, async (c) => {
    const account = await service.sessionAccount(deps, getCookie(c, CONSUMER_COOKIE));
    return c.json({
      success: true,
      walletAddress: service.publicAccount(account).walletAddress,
      activity: await service.activity(deps, account),
    });
  });

  return app;
}
