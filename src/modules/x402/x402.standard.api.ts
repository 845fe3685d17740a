/**
 * The standard x402 protocol on our listings, `GET|POST|… /x402/{slug}`, and the self-hosted
 * facilitator `/api/x402/facilitator/{verify,settle,supported}`. Unpaid calls answer 402 with
 * the v2 requirements in `PAYMENT-REQUIRED` and the v1 ones in the body; paid calls answer the
 * upstream's body with `PAYMENT-RESPONSE` (v2) or `X-PAYMENT-RESPONSE` (v1).
 */
import { Hono } from "hono";
import type { Deps } from "../../deps.ts";
import { readJsonObject } from "../../http/body.ts";
import { parseOrThrow } from "../../http/contract.ts";
import { type AuthEnv, guard, merchantOf } from "../../http/auth.ts";
import { encodeHeader } from "./x402.exact.ts";
import { METHODS } from "./x402.rules.ts";
import type { HttpMethod } from "./x402.rules.ts";
import * as standard from "./x402.standard.ts";
import type { X402Deps } from "./x402.context.ts";
import { facilitatorBody } from "./x402.schemas.ts";
import { batchedAwareCall } from "./x402.batched.ts";
import { channelSettle, channelVerify, withChannelKinds } from "./x402.channels.facilitator.ts";

const EXPOSE = "PAYMENT-REQUIRED, PAYMENT-RESPONSE, X-PAYMENT-RESPONSE";

export function x402StandardApi(x: X402Deps) {
  const deps: Deps = x;
  const app = new Hono<AuthEnv>();
  const anyone = guard(deps, { accept: [] });
  const seller = guard(deps, {
    accept: ["bearer"],
    keyKinds: ["merchant", "secret"],
    scope: "x402",
    write: true,
  });

  app.on([...METHODS], "/x402/:slug", anyone, async (c) => {
    const v2 = c.req.header("payment-signature")?.trim();
    const v1 = c.req.header("x-payment")?.trim();
    const url = new URL(c.req.url);
    const method = c.req.method as HttpMethod;
    const headerAgent = c.req.header("x-agent-id")?.trim();
    // Circle's batched option (x402.batched.ts) and the batch-settlement scheme
    // (x402.channels.ts) answer their payments; the 402 offers both beside `exact`.
    const r = await batchedAwareCall(x, {
      slug: c.req.param("slug"),
      method,
      resourceUrl: `${deps.config.BASE_URL}${url.pathname}`,
      query: url.search.replace(/^\?/, ""),
      body: method === "GET" || method === "DELETE" ? undefined : await c.req.text(),
      contentType: c.req.header("content-type"),
      payment: v2 ? { version: 2, header: v2 } : v1 ? { version: 1, header: v1 } : undefined,
      agentId: headerAgent || undefined,
      agentSignature: c.req.header("x-agent-signature")?.trim() || undefined,
    });
    c.header("Access-Control-Expose-Headers", EXPOSE);
    c.header("Cache-Control", "no-store");
    if (r.kind === "required") {
      c.header("PAYMENT-REQUIRED", encodeHeader(r.v2));
      return c.json(r.v1, 402);
    }
    c.header(
      r.version === 2 ? "PAYMENT-RESPONSE" : "X-PAYMENT-RESPONSE",
      encodeHeader(r.paymentResponse),
    );
    if (r.contentType) c.header("Content-Type", r.contentType);
    return c.body(r.body.buffer as ArrayBuffer, r.status as 200);
  });

  app.get(
    "/api/x402/facilitator/supported",
    anyone,
    async (c) => c.json(await withChannelKinds(x, standard.supported(x))),
  );

  app.post("/api/x402/facilitator/verify", seller, async (c) => {
    const body = parseOrThrow(facilitatorBody, await readJsonObject(c));
    return c.json(
      (await channelVerify(x, body)) ?? await standard.facilitatorVerify(x, body),
    );
  });

  app.post("/api/x402/facilitator/settle", seller, async (c) => {
    const body = parseOrThrow(facilitatorBody, await readJsonObject(c));
    return c.json(
      (await channelSettle(x, merchantOf(c), body)) ??
        await standard.facilitatorSettle(x, merchantOf(c), body),
    );
  });

  return app;
}
