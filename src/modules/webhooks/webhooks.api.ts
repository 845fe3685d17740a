/** The signing secret (cookie) and the deliveries API (cookie or merchant key). */
import { Hono } from "hono";
import type { Deps } from "../../deps.ts";
import { type AuthEnv, guard, merchantOf } from "../../http/auth.ts";
import { parseQuery } from "../../http/body.ts";
import { M } from "../../http/messages.ts";
import * as service from "./webhooks.service.ts";
import { deliveriesQuery } from "./webhooks.schemas.ts";

export function webhooksApi(deps: Deps) {
  const app = new Hono<AuthEnv>();
  const session = guard(deps, { accept: ["cookie"] });
  const owner = guard(deps, { accept: ["cookie", "apiKey"], keyKinds: ["merchant"] });

  app.get("/api/merchant/webhook-secret", session, async (c) => {
    return c.json({ success: true, secret: await service.getSecret(deps, merchantOf(c).id) });
  });

  app.post("/api/merchant/webhook-secret/roll", session, async (c) => {
    return c.json({ success: true, secret: await service.rollSecret(deps, merchantOf(c).id) });
  });

  app.get("/api/webhooks/deliveries", owner, async (c) => {
    const q = parseQuery(c, deliveriesQuery, { message: M.deliveriesQuery });
    return c.json({
      success: true,
      deliveries: await service.listDeliveries(deps, merchantOf(c).id, q),
    });
  });

  app.post("/api/webhooks/deliveries/:id/replay", owner, async (c) => {
    const delivery = await service.replay(deps, merchantOf(c).id, c.req.param("id"));
    return c.json({ success: true, delivery });
  });

  return app;
}
