/**
 * The consumer bridge page (/bridge) and the JSON its script calls besides the API: the signed-in
 * consumer's balance on a source chain and, outside production, test USDC there (local nodes).
 */
import { Hono } from "hono";
import { getCookie } from "hono/cookie";
import type { Deps } from "../../deps.ts";
import { DomainError } from "../../errors.ts";
import { type AuthEnv, guard } from "../../http/auth.ts";
import { readJsonObject } from "../../http/body.ts";
import { CONSUMER_COOKIE } from "../../http/session-token.ts";
import { BridgePage } from "../../../views/bridge/bridge.tsx";
import * as service from "./bridge.service.ts";
import { isSupportedSource } from "./bridge.rules.ts";

export function bridgePages(deps: Deps) {
  const app = new Hono<AuthEnv>();
  const open = guard(deps, { accept: [] });

  app.get("/bridge", open, (c) => {
    c.header("Cache-Control", "no-store");
    return c.html(<BridgePage view={service.formView(deps)} />);
  });

  app.get("/bridge/balance", open, async (c) => {
    const account = await service.signedIn(deps, getCookie(c, CONSUMER_COOKIE));
    const chain = c.req.query("chain") ?? "";
    if (!isSupportedSource(chain)) throw new DomainError("bridge_source_unsupported", { chain });
    return c.json({ success: true, chain, ...(await service.sourceBalance(deps, account, chain)) });
  });

  if (deps.config.APP_ENV !== "production") {
    app.post("/bridge/dev-faucet", open, async (c) => {
      const account = await service.signedIn(deps, getCookie(c, CONSUMER_COOKIE));
      const { fromChain } = await readJsonObject(c);
      if (typeof fromChain !== "string" || !isSupportedSource(fromChain)) {
        throw new DomainError("bridge_source_unsupported", { chain: String(fromChain) });
      }
      return c.json({ success: true, ...(await service.devFaucet(deps, account, fromChain)) });
    });
  }

  return app;
}
