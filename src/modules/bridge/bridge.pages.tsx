/**
 * The consumer bridge page (/bridge) and the JSON its script calls besides the API: the signed-in
 * consumer's balance on a source chain and, outside production, test USDC there (local nodes).
 * And the hosted checkout's "Pay from another chain" with the shopper's own wallet
 * (bridge.shopper.ts): the quote, the relay of a one-signature burn, the report of a burn the
 * wallet sent. Page endpoints like the rest of /checkout/{reference}/… (checkout rate limits).
 */
import { Hono } from "hono";
import { getCookie } from "hono/cookie";
import type { Deps } from "../../deps.ts";
import { DomainError } from "../../errors.ts";
import { type AuthEnv, guard } from "../../http/auth.ts";
import { parseQuery, readJsonObject } from "../../http/body.ts";
import { parseOrThrow } from "../../http/contract.ts";
import { CONSUMER_COOKIE } from "../../http/session-token.ts";
import { BridgePage } from "../../../views/bridge/bridge.tsx";
import * as service from "./bridge.service.ts";
import * as shopper from "./bridge.shopper.ts";
import { shopperFaucet, shopperQuote } from "./bridge.checkout.ts";
import { shopperBurnBody, shopperQuoteQuery, shopperRelayBody } from "./bridge.schemas.ts";
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

  const checkout = guard(deps, { accept: [], group: "checkout" });
  /** 202 for a transfer started now, 200 for one a repeated request finds. */
  const started = (
    r: { transfer: Parameters<typeof service.transferView>[1]; created: boolean },
  ) => {
    const view = service.transferView(deps, r.transfer);
    return [{
      success: true,
      reference: view.reference,
      status: view.status,
      statusUrl: service.statusPath(view.reference),
      transferSpeed: view.transferSpeed,
      burnAmount: view.burnAmount,
      maxFee: view.maxFee,
      burnTxHash: view.burnTxHash,
    }, r.created ? 202 : 200] as const;
  };

  app.get("/checkout/:reference/bridge-quote", checkout, async (c) => {
    const q = parseQuery(c, shopperQuoteQuery);
    c.header("Cache-Control", "no-store");
    return c.json({
      success: true,
      ...(await shopperQuote(deps, c.req.param("reference"), q)),
    });
  });

  // One signature: the shopper's EIP-3009 authorization, burned by our relayer.
  app.post("/checkout/:reference/bridge-relay", checkout, async (c) => {
    const input = parseOrThrow(shopperRelayBody, await readJsonObject(c));
    const [body, status] = started(
      await shopper.relayShopperBurn(deps, c.req.param("reference"), input),
    );
    return c.json(body, status);
  });

  // The shopper's wallet sent the burn: read it back from the chain and record it.
  app.post("/checkout/:reference/bridge-burn", checkout, async (c) => {
    const input = parseOrThrow(shopperBurnBody, await readJsonObject(c));
    const [body, status] = started(
      await shopper.reportShopperBurn(deps, c.req.param("reference"), input),
    );
    return c.json(body, status);
  });

  if (deps.config.APP_ENV !== "production") {
    app.post("/checkout/:reference/bridge-faucet", checkout, async (c) => {
      const body = await readJsonObject(c);
      return c.json({
        success: true,
        ...(await shopperFaucet(deps, c.req.param("reference"), {
          sourceChain: String(body.sourceChain ?? ""),
          address: body.address,
        })),
      });
    });

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
