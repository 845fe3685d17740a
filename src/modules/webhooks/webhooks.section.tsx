/** Webhooks: the signing secret (reveal, roll) and deliveries (filter, history, replay). */
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { Deps } from "../../deps.ts";
import { M } from "../../http/messages.ts";
import * as webhooks from "./webhooks.service.ts";
import {
  type DeliveryFilter,
  SecretPanel,
  WebhooksView,
  type WebhooksViewProps,
} from "../../../views/dashboard/webhooks.tsx";
import type { NoticeData } from "../../../views/dashboard/shell.tsx";
import {
  attempt,
  type DashContext,
  formBody,
  fragment,
  isPartial,
  merchantOf,
  page,
  single,
} from "../dashboard/dashboard.http.tsx";
import type { DashboardSection } from "../dashboard/section.ts";

const STATUSES = ["pending", "delivered", "undelivered"] as const;
type Status = typeof STATUSES[number];

function filterFrom(raw: Record<string, string | undefined>): DeliveryFilter {
  const status = STATUSES.includes(raw.status as Status) ? raw.status : undefined;
  const reference = raw.reference?.trim().slice(0, 200) || undefined;
  return { status, reference };
}

export const webhooksSection: DashboardSection = {
  id: "webhooks",
  label: "Webhooks",
  path: "/dashboard/webhooks",
  order: 60,
  routes(app, deps) {
    app.get("/webhooks", (c) => {
      const filter = filterFrom(c.req.query());
      const bad = c.req.query("status") && !filter.status;
      return render(c, deps, filter, {
        notice: bad ? { kind: "error", text: M.deliveriesQuery } : undefined,
      }, bad ? 400 : undefined);
    });

    app.get("/webhooks/secret", async (c) => {
      const show = c.req.query("hide") !== "1";
      const secret = show ? await webhooks.getSecret(deps, merchantOf(c).id) : undefined;
      if (isPartial(c)) {
        return fragment(c, <SecretPanel csrf={c.get("csrfToken")} secret={secret} />);
      }
      return render(c, deps, {}, { secret });
    });

    app.post("/webhooks/secret/roll", async (c) => {
      const secret = await webhooks.rollSecret(deps, merchantOf(c).id);
      const notice: NoticeData = { kind: "ok", text: M.dashSecretRolled };
      if (isPartial(c)) {
        return fragment(
          c,
          <SecretPanel csrf={c.get("csrfToken")} secret={secret} notice={notice} />,
        );
      }
      return render(c, deps, {}, { secret, notice });
    });

    app.post("/webhooks/deliveries/:id/replay", async (c) => {
      const filter = filterFrom(single(await formBody(c)));
      const id = c.req.param("id");
      const r = await attempt(() => webhooks.replay(deps, merchantOf(c).id, id));
      if (!r.ok) {
        const notice: NoticeData = { kind: "error", text: r.error.message };
        return render(c, deps, filter, { notice }, r.error.status);
      }
      const notice: NoticeData = {
        kind: r.value.status === "delivered" ? "ok" : "error",
        text: `${M.dashReplayed} ${id}: ${r.value.status}${
          r.value.lastStatusCode ? ` (HTTP ${r.value.lastStatusCode})` : ""
        }.`,
      };
      return render(c, deps, filter, { notice });
    });
  },
};

async function render(
  c: DashContext,
  deps: Deps,
  filter: DeliveryFilter,
  extra: Partial<WebhooksViewProps> = {},
  status?: ContentfulStatusCode,
) {
  const deliveries = await webhooks.listDeliveries(deps, merchantOf(c).id, {
    status: filter.status as Status | undefined,
    reference: filter.reference,
    limit: 100,
  });
  return page(c, {
    title: "Webhooks",
    section: "webhooks",
    status,
    body: (
      <WebhooksView
        csrf={c.get("csrfToken")}
        deliveries={deliveries}
        filter={filter}
        {...extra}
      />
    ),
  });
}
