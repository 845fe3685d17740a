/** /api/keys: issue, list, revoke and rotate API keys (merchant cookie or merchant key). */
import { Hono } from "hono";
import type { Deps } from "../../deps.ts";
import { readJsonObject } from "../../http/body.ts";
import { parseOrThrow } from "../../http/contract.ts";
import { type AuthEnv, guard, merchantOf } from "../../http/auth.ts";
import { idempotent } from "../../http/idempotency.ts";
import { M } from "../../http/messages.ts";
import { createKeyBody } from "./keys.schemas.ts";
import * as service from "./keys.service.ts";

export function keysApi(deps: Deps) {
  const app = new Hono<AuthEnv>();
  const owner = guard(deps, { accept: ["cookie", "apiKey"], keyKinds: ["merchant"] });
  const once = idempotent(deps);

  app.post("/api/keys", owner, once, async (c) => {
    const body = parseOrThrow(createKeyBody, await readJsonObject(c));
    const key = await service.createKey(deps, merchantOf(c).id, body);
    return c.json({ success: true, key, warning: M.keyWarning }, 201);
  });

  app.get("/api/keys", owner, async (c) => {
    return c.json({ success: true, keys: await service.listKeys(deps, merchantOf(c).id) });
  });

  app.delete("/api/keys/:id", owner, async (c) => {
    const key = await service.revokeKey(deps, merchantOf(c).id, c.req.param("id"));
    return c.json({ success: true, message: M.keyRevoked, key });
  });

  app.post("/api/keys/:id/rotate", owner, once, async (c) => {
    const r = await service.rotateKey(deps, merchantOf(c).id, c.req.param("id"));
    return c.json({
      success: true,
      key: r.key,
      revokedKeyId: r.revokedKeyId,
      warning: M.keyWarning,
    }, 201);
  });

  return app;
}
