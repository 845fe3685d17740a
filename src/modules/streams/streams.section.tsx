/**
 * Streams: the merchant's streams with a live progress bar (the list polls
 * `/dashboard/streams/live` every few seconds), stop (sent from the stream's sender) and
 * withdraw (to its receiver) while ACTIVE. The same service calls as the API, in the session's
 * mode (test → testnet streams, live → production), as a key's environment is for the API.
 */
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { Deps } from "../../deps.ts";
import type { ProfileName } from "../../chain/index.ts";
import * as streams from "./streams.service.ts";
import { StreamsLive, StreamsView } from "../../../views/dashboard/streams.tsx";
import type { NoticeData } from "../../../views/dashboard/shell.tsx";
import {
  attempt,
  type DashContext,
  fragment,
  merchantOf,
  page,
  sessionOf,
} from "../dashboard/dashboard.http.tsx";
import type { DashboardSection } from "../dashboard/section.ts";

export const streamsSection: DashboardSection = {
  id: "streams",
  label: "Streams",
  path: "/dashboard/streams",
  order: 35,
  routes(app, deps) {
    app.get("/streams", (c) => render(c, deps));

    app.get("/streams/live", async (c) => {
      const list = await streams.listStreams(deps, merchantOf(c).id, modeOf(c), {});
      return fragment(c, <StreamsLive csrf={c.get("csrfToken")} streams={list.streams} />);
    });

    app.post("/streams/:reference/stop", async (c) => {
      const merchant = merchantOf(c);
      const r = await attempt(async () => {
        const s = await streams.getStream(deps, merchant.id, modeOf(c), c.req.param("reference"));
        return await streams.stopStream(deps, merchant, modeOf(c), {
          reference: s.reference,
          callerSCA: s.senderSca,
        });
      });
      if (!r.ok) return render(c, deps, { kind: "error", text: r.error.message }, r.error.status);
      return render(c, deps, {
        kind: "ok",
        text: `Stream stopped: ${streams.usdc(r.value.totalStreamed)} USDC to the receiver, ${
          streams.usdc(r.value.refundedToSender)
        } USDC refunded to the sender.`,
      });
    });

    app.post("/streams/:reference/withdraw", async (c) => {
      const merchant = merchantOf(c);
      const r = await attempt(async () => {
        const s = await streams.getStream(deps, merchant.id, modeOf(c), c.req.param("reference"));
        return await streams.withdrawStream(deps, merchant, modeOf(c), {
          reference: s.reference,
          receiverSCA: s.receiverSca,
        });
      });
      if (!r.ok) return render(c, deps, { kind: "error", text: r.error.message }, r.error.status);
      return render(c, deps, {
        kind: "ok",
        text: `Withdrawn ${streams.usdc(r.value.amountWithdrawn)} USDC to the receiver.`,
      });
    });
  },
};

/** The chain of the session's mode (the guard sets it for every signed-in request). */
function modeOf(c: DashContext): ProfileName {
  return sessionOf(c)?.profile ?? "production";
}

async function render(
  c: DashContext,
  deps: Deps,
  notice?: NoticeData,
  status?: ContentfulStatusCode,
) {
  const list = await streams.listStreams(deps, merchantOf(c).id, modeOf(c), {});
  return page(c, {
    title: "Streams",
    section: "streams",
    status,
    body: <StreamsView csrf={c.get("csrfToken")} streams={list.streams} notice={notice} />,
  });
}
