/**
 * `POST /rpc/<profile>` (src/chain/rpc-proxy.ts) behind a limit per client address
 * (`RATE_LIMIT_RPC_PER_MINUTE`, 600: a wallet polls, so more than the anonymous routes' 100).
 * The proxy spends the operator's RPC provider quota (a configured node's URL may carry its key),
 * which an anonymous client could otherwise burn at will (an outside audit, 2026-12-01: 400
 * calls in seconds, all 200).
 */
import { Hono } from "hono";
import type { Deps } from "../deps.ts";
import { rpcProxy } from "../chain/rpc-proxy.ts";
import { clientAddress, enforce } from "./rate-limit.ts";

export function rpcRoutes(deps: Deps): Hono {
  const app = new Hono();
  app.use("/rpc/*", async (c, next) => {
    enforce(c, [await deps.limiter.hit("rpc", `ip:${clientAddress(c, deps.config)}`)], {
      bare: true,
    });
    await next();
  });
  app.route("/", rpcProxy(deps));
  return app;
}
