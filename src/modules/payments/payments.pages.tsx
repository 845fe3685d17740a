/** /checkout/{reference}: the hosted page, its status partial, and the JSON its script calls. */
import { Hono } from "hono";
import QRCode from "qrcode";
import type { Deps } from "../../deps.ts";
import { type AuthEnv, guard } from "../../http/auth.ts";
import { readJsonObject } from "../../http/body.ts";
import { CheckoutPage, NotFoundPage, StatusBlock } from "../../../views/checkout/checkout.tsx";
import {
  checkoutView,
  devFaucet,
  loadPayment,
  payCall,
  payData,
  relayPayment,
  reportSubmitted,
} from "./payments.checkout.ts";
import { relayBody } from "./payments.schemas.ts";
import { parseOrThrow } from "../../http/contract.ts";
import { liveStreams } from "../../http/sse.ts";
import { clientAddress } from "../../http/rate-limit.ts";

/** Open checkout status streams per client address per process; more get 429 and poll. */
export const MAX_CHECKOUT_STREAMS_PER_ADDRESS = 20;

export function checkoutPages(deps: Deps) {
  const app = new Hono<AuthEnv>();
  const open = guard(deps, { accept: [], group: "checkout" });

  app.get("/checkout/:reference", open, async (c) => {
    const p = await loadPayment(deps, c.req.param("reference"));
    if (!p) return c.html(<NotFoundPage reference={c.req.param("reference")} />, 404);
    const view = checkoutView(deps, p);
    const qrSvg = await QRCode.toString(view.url, {
      type: "svg",
      margin: 1,
      errorCorrectionLevel: "M",
    });
    c.header("Cache-Control", "no-store");
    return c.html(<CheckoutPage view={view} qrSvg={qrSvg} />);
  });

  app.get("/checkout/:reference/status", async (c) => {
    const p = await loadPayment(deps, c.req.param("reference"));
    if (!p) return c.text("Payment not found", 404);
    c.header("Cache-Control", "no-store");
    return c.html(<StatusBlock view={checkoutView(deps, p)} />);
  });

  // The status's live updates (SSE): only this payment's public status, from any process.
  app.get("/checkout/:reference/events", open, async (c) => {
    const p = await loadPayment(deps, c.req.param("reference"));
    if (!p) return c.text("Payment not found", 404);
    const opened = await liveStreams(deps).open({
      key: `ip:${clientAddress(c, deps.config)}`,
      limit: MAX_CHECKOUT_STREAMS_PER_ADDRESS,
      select: (e) =>
        e.kind === "payment" && e.reference === p.reference
          ? { event: "status", data: JSON.stringify({ reference: e.reference, status: e.status }) }
          : null,
    });
    if (!opened.ok) {
      return opened.reason === "limit"
        ? c.text("Too many open event streams", 429)
        : c.text("Stopping", 503);
    }
    return opened.response;
  });

  app.get("/checkout/:reference/pay-data", open, async (c) => {
    return c.json({
      success: true,
      ...(await payData(deps, c.req.param("reference"), c.req.query("payer"))),
    });
  });

  app.post("/checkout/:reference/calldata", open, async (c) => {
    const call = await payCall(deps, c.req.param("reference"), await readJsonObject(c));
    return c.json({ success: true, ...call });
  });

  // Gasless: the payer's signed authorization, relayed by the service (no wallet transaction).
  app.post("/checkout/:reference/relay", open, async (c) => {
    const input = parseOrThrow(relayBody, await readJsonObject(c));
    return c.json({
      success: true,
      ...(await relayPayment(deps, c.req.param("reference"), input)),
    });
  });

  app.post("/checkout/:reference/submitted", open, async (c) => {
    const body = await readJsonObject(c);
    return c.json({
      success: true,
      ...(await reportSubmitted(deps, c.req.param("reference"), body.txHash)),
    });
  });

  // "Get test USDC": mounted only outside production; refused (404) on configured chains.
  if (deps.config.APP_ENV !== "production") {
    app.post("/checkout/:reference/dev-faucet", open, async (c) => {
      const body = await readJsonObject(c);
      return c.json({
        success: true,
        ...(await devFaucet(deps, c.req.param("reference"), body.address)),
      });
    });
  }

  return app;
}
