/**
 * /api/agent/*: deploy and reputation take the merchant's bearer key (or `x-api-key`), scope
 * `agents`. GET /api/agent/status is public for a bare `scaAddress` query (the basic record)
 * and needs the key for anything else (`Authentication required for agent search/listing.`); a
 * bare lookup that brings a key is authenticated, and its merchant's own agent comes back full.
 */
import { Hono } from "hono";
import type { Deps } from "../../deps.ts";
import { parseQuery, presentQuery, readJsonObject } from "../../http/body.ts";
import { parseOrThrow } from "../../http/contract.ts";
import { type AuthEnv, guard, merchantOf } from "../../http/auth.ts";
import { idempotent } from "../../http/idempotency.ts";
import { M } from "../../http/messages.ts";
import * as service from "./agents.service.ts";
import { deployAgentBody, reputationQuery, statusQuery } from "./agents.schemas.ts";

export function agentsApi(deps: Deps) {
  const app = new Hono<AuthEnv>();
  const merchantKey = (write: boolean, missing?: string) =>
    guard(deps, {
      accept: ["bearer", "apiKey"],
      keyKinds: ["merchant", "secret"],
      scope: "agents",
      write,
      messages: missing ? { missing } : undefined,
    });
  const searchKey = merchantKey(false, M.agentSearchAuth);
  const anyone = guard(deps, { accept: [] });

  app.post("/api/agent/deploy", merchantKey(true), idempotent(deps), async (c) => {
    const input = parseOrThrow(deployAgentBody, await readJsonObject(c));
    const r = await service.deployAgent(
      deps,
      merchantOf(c),
      input,
      c.req.header("idempotency-key"),
    );
    return c.json({ success: true, ...r }, 201);
  });

  app.get(
    "/api/agent/status",
    (c, next) => {
      const keys = Object.keys(presentQuery(c));
      const credential = c.req.header("authorization") !== undefined ||
        c.req.header("x-api-key") !== undefined;
      return keys.length === 1 && keys[0] === "scaAddress" && !credential
        ? anyone(c, next)
        : searchKey(c, next);
    },
    async (c) => {
      const q = parseQuery(c, statusQuery);
      const merchant = c.get("auth").merchant ?? null;
      const agents = await service.findAgents(deps, merchant, q);
      return c.json({ success: true, agent: agents[0], agents, count: agents.length });
    },
  );

  app.get("/api/agent/reputation", merchantKey(false), async (c) => {
    const q = parseQuery(c, reputationQuery);
    return c.json({ success: true, ...await service.reputation(deps, merchantOf(c), q.agentId) });
  });

  return app;
}
