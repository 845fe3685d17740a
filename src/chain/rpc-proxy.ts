/**
 * `POST /rpc/<profile>`: the chain's JSON-RPC through our own origin, for browser wallets
 * (`wallet_addEthereumChain` needs an RPC URL; a local node's port changes at each start and a
 * configured node's URL may carry a provider key). Only the methods a wallet needs are passed.
 */
import { Hono } from "hono";
import type { Deps } from "../deps.ts";
import type { ProfileName } from "./profiles.ts";

const ALLOWED = new Set([
  "eth_chainId",
  "net_version",
  "eth_blockNumber",
  "eth_getBalance",
  "eth_getCode",
  "eth_call",
  "eth_estimateGas",
  "eth_gasPrice",
  "eth_maxPriorityFeePerGas",
  "eth_feeHistory",
  "eth_getTransactionCount",
  "eth_getTransactionByHash",
  "eth_getTransactionReceipt",
  "eth_getBlockByNumber",
  "eth_getBlockByHash",
  "eth_sendRawTransaction",
]);

export function rpcProxy(deps: Deps): Hono {
  const app = new Hono();
  app.post("/rpc/:profile", async (c) => {
    const profile = c.req.param("profile") as ProfileName;
    if (!deps.chain.has(profile)) {
      // A bridge source chain starts on first use; a wallet adding it is a use (after a restart
      // nothing has started it yet).
      if (!deps.chain.isConfiguredSource(profile)) return c.json({ error: "unknown chain" }, 404);
      await deps.chain.ensure(profile);
    }
    let body: unknown;
    try {
      body = await c.req.json();
    } catch {
      return c.json(
        { jsonrpc: "2.0", id: null, error: { code: -32700, message: "Parse error" } },
        400,
      );
    }
    const calls = Array.isArray(body) ? body : [body];
    if (calls.length > 20) {
      return c.json({
        jsonrpc: "2.0",
        id: null,
        error: { code: -32600, message: "Batch too large" },
      }, 400);
    }
    for (const call of calls) {
      const method = (call as { method?: unknown })?.method;
      if (typeof method !== "string" || !ALLOWED.has(method)) {
        return c.json({
          jsonrpc: "2.0",
          id: (call as { id?: unknown })?.id ?? null,
          error: { code: -32601, message: `Method not available here: ${String(method)}` },
        });
      }
    }
    const upstream = await fetch(deps.chain.runtime(profile).rpcUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(15_000),
    });
    return new Response(upstream.body, {
      status: upstream.status,
      headers: { "content-type": "application/json" },
    });
  });
  return app;
}
