/**
 * /dashboard/events: the live panels' event stream (SSE). Behind the session like every
 * dashboard route; it carries only the signed-in merchant's events on the chain of the session's
 * mode, and names the record (kind, reference, status): the panel then asks its usual partial,
 * which reads the record under the same scoping. The session is checked again before events are
 * sent (at most once a second): logged out or switched mode, the stream ends.
 */
import type { Deps } from "../../deps.ts";
import { liveStreams } from "../../http/sse.ts";
import { dashProfileOf, merchantOf, sessionOf } from "./dashboard.http.tsx";
import * as merchants from "../merchants/merchants.service.ts";
import type { DashboardApp } from "./section.ts";

/** Open streams per merchant per process (a few tabs); more get 429 and the pages poll. */
export const MAX_STREAMS_PER_MERCHANT = 10;
export const EVENTS_PATH = "/dashboard/events";

export function liveRoutes(app: DashboardApp, deps: Deps) {
  app.get("/events", async (c) => {
    const merchant = merchantOf(c);
    const profile = dashProfileOf(c);
    if (!deps.chain.has(profile)) return c.text("No chain for this mode", 404);
    const chainId = deps.chain.chainId(profile);
    const opened = await liveStreams(deps).open({
      key: `merchant:${merchant.id}`,
      limit: MAX_STREAMS_PER_MERCHANT,
      select: (e) =>
        e.merchantId === merchant.id && e.chainId === chainId
          ? { event: e.kind, data: JSON.stringify({ reference: e.reference, status: e.status }) }
          : null,
      // A logged-out session, or one switched to the other mode, gets no more of these events.
      stillAllowed: async () => {
        const auth = sessionOf(c);
        if (!auth?.sessionId) return false;
        const now = deps.clock.now();
        const s = await merchants.sessionMerchant(deps, auth.sessionId, merchant.id, now);
        return s.live && s.mode === auth.environment;
      },
    });
    if (!opened.ok) {
      return opened.reason === "limit"
        ? c.text("Too many open event streams", 429)
        : c.text("Stopping", 503);
    }
    return opened.response;
  });
}
