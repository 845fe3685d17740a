/** /api/keys: issue, list, revoke and rotate API keys (merchant cookie or merchant key). */
import { Hono } from "hono";
import { z } from "zod";
import type { Deps } from "../../deps.ts";
import { parseBody } from "../../http/body.ts";
import { type AuthEnv, guard, merchantOf } from "../../http/auth.ts";
import { idempotent } from "../../http/idempotency.ts";
import { M } from "../../http/messages.ts";
import { KEY_SCOPES } from "./keys.rules.ts";
import * as service from "./keys.service.ts";

const createBody = z.object({
  type: z.enum(["secret", "publishable"]),
  environment: z.enum(["test", "live"]),
  label: z.string().trim().max(100).optional(),
  scopes: z.array(z.enum(KEY_SCOPES)).max(KEY_SCOPES.length).optional(),
});

const FIELD_MESSAGES: Record<string, string> = {
  type: M.keyType,
  environment: M.keyEnvironment,
  label: M.keyLabel,
  scopes: M.keyScopes,
};

export function keysApi(deps: Deps) {
  const app = new Hono<AuthEnv>();
  const owner = guard(deps, { accept: ["cookie", "apiKey"], keyKinds: ["merchant"] });
  const once = idempotent(deps);

  app.post("/api/keys", owner, once, async (c) => {
    const body = await parseBody(c, createBody, {
      message: (issues) => FIELD_MESSAGES[String(issues[0]?.path[0])] ?? M.keyType,
    });
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
