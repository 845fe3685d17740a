/** /api/merchant/*: thin handlers (validate → service → respond). */
import { Hono } from "hono";
import { getCookie } from "hono/cookie";
import type { Deps } from "../../deps.ts";
import { presentQuery, readJsonObject } from "../../http/body.ts";
import { parseOrThrow } from "../../http/contract.ts";
import { type AuthEnv, guard, merchantOf, profileOf } from "../../http/auth.ts";
import { idempotent } from "../../http/idempotency.ts";
import { M } from "../../http/messages.ts";
import {
  clearCookie,
  MERCHANT_COOKIE,
  MERCHANT_SESSION_SECONDS,
  setSessionCookie,
  WALLET_NONCE_COOKIE,
  WALLET_NONCE_SECONDS,
} from "../../http/session-token.ts";
import {
  connectBody,
  connectQuery,
  loginBody,
  signupBody,
  verifyBody,
  walletPatchBody,
} from "./merchants.schemas.ts";
import * as service from "./merchants.service.ts";
import * as wallet from "./merchants.wallet.ts";

const CONNECT_PATH = "/api/merchant/wallet/connect";

export function merchantsApi(deps: Deps) {
  const app = new Hono<AuthEnv>();
  const open = guard(deps, { accept: [] });
  const session = guard(deps, { accept: ["cookie"] });
  const connect = guard(deps, {
    accept: ["cookie", "apiKey"],
    keyKinds: ["merchant"],
    messages: { missing: M.connectAuth, invalidSession: M.connectAuth },
  });
  const dashboard = guard(deps, {
    accept: ["apiKey"],
    keyKinds: ["merchant", "secret"],
    bare: true,
    invalidKeyStatus: 404,
    messages: { missing: M.dashboardUnauthorized, invalidKey: M.dashboardNotFound },
  });

  const once = idempotent(deps);

  app.post("/api/merchant/signup", open, once, async (c) => {
    const body = parseOrThrow(signupBody, await readJsonObject(c));
    const r = await service.signup(deps, body);
    return c.json({ success: true, message: M.codeSent, email: r.email }, 201);
  });

  app.post("/api/merchant/verify", open, once, async (c) => {
    const body = parseOrThrow(verifyBody, await readJsonObject(c));
    const r = await service.verify(deps, body);
    return c.json({
      success: true,
      message: M.verified,
      merchant: service.publicMerchant(r.merchant),
      apiKey: r.apiKey,
      warning: M.keyWarning,
    });
  });

  app.post("/api/merchant/login", open, async (c) => {
    const body = parseOrThrow(loginBody, await readJsonObject(c));
    const r = await service.login(deps, body);
    setSessionCookie(c, deps.config, MERCHANT_COOKIE, r.token, MERCHANT_SESSION_SECONDS);
    return c.json({ success: true, merchant: service.publicMerchant(r.merchant) });
  });

  app.get("/api/merchant/me", session, async (c) => {
    return c.json({
      success: true,
      ...(await service.profile(deps, merchantOf(c), profileOf(c))),
    });
  });

  app.delete("/api/merchant/me", session, async (c) => {
    await service.logout(deps, c.get("auth").sessionId!);
    clearCookie(c, deps.config, MERCHANT_COOKIE);
    return c.json({ success: true, message: M.loggedOut });
  });

  app.get("/api/merchant/dashboard", dashboard, async (c) => {
    const m = merchantOf(c);
    return c.json({
      businessName: m.businessName,
      apiKey: c.get("auth").key!.raw,
      payments: await service.dashboardPayments(deps, m.id, c.get("auth").key!.profile),
    });
  });

  app.get("/api/merchant/wallet", session, (c) => {
    return c.json({ success: true, wallet: wallet.walletView(merchantOf(c)) });
  });

  app.patch("/api/merchant/wallet", session, async (c) => {
    const body = parseOrThrow(walletPatchBody, await readJsonObject(c));
    const r = await wallet.switchToManaged(deps, merchantOf(c), body.walletProvider);
    return c.json({ success: true, ...r });
  });

  app.get(CONNECT_PATH, connect, async (c) => {
    const q = parseOrThrow(connectQuery, presentQuery(c));
    const r = await wallet.linkChallenge(deps, merchantOf(c), q.address);
    setSessionCookie(
      c,
      deps.config,
      WALLET_NONCE_COOKIE,
      r.nonce,
      WALLET_NONCE_SECONDS,
      CONNECT_PATH,
    );
    return c.json({ success: true, message: r.message });
  });

  app.post(CONNECT_PATH, connect, async (c) => {
    const raw = await readJsonObject(c);
    const nonce = getCookie(c, WALLET_NONCE_COOKIE);
    clearCookie(c, deps.config, WALLET_NONCE_COOKIE, CONNECT_PATH);
    const body = parseOrThrow(connectBody, raw);
    const r = await wallet.linkWallet(deps, merchantOf(c), nonce, body);
    return c.json({ success: true, ...r });
  });

  return app;
}
