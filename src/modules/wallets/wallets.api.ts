/**
 * /api/wallets and /api/merchant/withdraw: the merchant's session, or its merchant or secret key
 * as `x-api-key` or `Authorization: Bearer`. Publishable keys and keys limited by scopes are
 * refused (403): these routes reach the merchant's money. The credential's environment (a key's
 * prefix, a session's mode) is the only chain whose balances are shown and moved.
 */
import { Hono } from "hono";
import type { Deps } from "../../deps.ts";
import { readJsonObject } from "../../http/body.ts";
import { parseOrThrow } from "../../http/contract.ts";
import { type AuthEnv, guard, merchantOf, profileOf } from "../../http/auth.ts";
import { idempotent } from "../../http/idempotency.ts";
import * as service from "./wallets.service.ts";
import { createWalletBody, WITHDRAW_HINTS, withdrawBody } from "./wallets.schemas.ts";

/** No limited key carries this scope, so only full-access keys pass. */
const WALLETS_SCOPE = "wallets";

export function walletsApi(deps: Deps) {
  const app = new Hono<AuthEnv>();
  const credentials = (write: boolean) =>
    guard(deps, {
      accept: ["cookie", "apiKey", "bearer"],
      keyKinds: ["merchant", "secret"],
      scope: WALLETS_SCOPE,
      write,
    });
  const read = credentials(false);
  const write = credentials(true);
  const once = idempotent(deps);

  app.post("/api/wallets", write, once, async (c) => {
    const input = parseOrThrow(createWalletBody, await readJsonObject(c));
    const wallet = await service.createWallet(deps, merchantOf(c), input);
    return c.json({ success: true, wallet }, 201);
  });

  app.get("/api/wallets", read, async (c) => {
    const wallets = await service.listWallets(deps, merchantOf(c), [profileOf(c)]);
    return c.json({ success: true, wallets });
  });

  app.get("/api/wallets/:id", read, async (c) => {
    const wallet = await service.getWallet(deps, merchantOf(c), c.req.param("id"), [profileOf(c)]);
    return c.json({ success: true, wallet });
  });

  app.post("/api/merchant/withdraw", write, once, async (c) => {
    const input = parseOrThrow(withdrawBody, await readJsonObject(c), WITHDRAW_HINTS);
    const r = await service.withdraw(
      deps,
      merchantOf(c),
      profileOf(c),
      input,
      c.req.header("idempotency-key"),
    );
    return c.json({ success: true, ...r });
  });

  return app;
}
