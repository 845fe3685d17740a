/**
 * Payment links: create through the payments service (the API's validation and texts, the
 * payments rate-limit group like POST /api/merchant/payment-link), the 100 newest links, and
 * each payment's QR code as an SVG image (`/dashboard/links/:reference/qr.svg`).
 */
import type { MiddlewareHandler } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import QRCode from "qrcode";
import type { Deps } from "../../deps.ts";
import type { ProfileName } from "../../chain/profiles.ts";
import { parseFields } from "../../http/contract.ts";
import { M } from "../../http/messages.ts";
import { enforce } from "../../http/rate-limit.ts";
import * as payments from "./payments.service.ts";
import { createPaymentBody } from "./payments.schemas.ts";
import {
  type LinkForm,
  LinksList,
  LinksView,
  type LinksViewProps,
} from "../../../views/dashboard/links.tsx";
import type { PaymentItem } from "../../../views/dashboard/payment-parts.tsx";
import {
  attempt,
  type DashContext,
  dashProfileOf,
  formBody,
  fragment,
  type Merchant,
  merchantOf,
  page,
  sessionOf,
  single,
} from "../dashboard/dashboard.http.tsx";
import { paymentItem } from "./payments.items.ts";
import type { DashboardSection } from "../dashboard/section.ts";

const LIST_LIMIT = 100;

export const linksSection: DashboardSection = {
  id: "links",
  label: "Payment links",
  path: "/dashboard/links",
  order: 30,
  routes(app, deps) {
    app.get("/links", async (c) => {
      const created = c.req.query("created");
      return await render(c, deps, { created: created ? await own(deps, c, created) : undefined });
    });

    app.post("/links", paymentsGroup(deps), async (c) => {
      const m = merchantOf(c);
      const raw = single(await formBody(c));
      const values = {
        amount: (raw.amount ?? "").trim(),
        description: (raw.description ?? "").trim(),
        webhookUrl: (raw.webhookUrl ?? "").trim(),
      };
      const input = {
        amount: values.amount,
        description: values.description || undefined,
        webhookUrl: values.webhookUrl || undefined,
      };
      const parsed = parseFields(createPaymentBody(deps.config.WEBHOOK_TARGETS), input);
      if (!parsed.ok) {
        return await render(c, deps, { form: { values, errors: parsed.errors } }, 400);
      }
      const r = await attempt(() =>
        payments.createPayment(deps, m, "link", dashProfileOf(c), parsed.data)
      );
      if (!r.ok) {
        const form: LinkForm = { values, errors: {} };
        const notice = { kind: "error" as const, text: r.error.message };
        return await render(c, deps, { form, notice }, r.error.status);
      }
      if (c.req.header("hx-request") !== "true") {
        return c.redirect(`/dashboard/links?created=${r.value.reference}`, 303);
      }
      return await render(c, deps, {
        created: paymentItem(deps, r.value),
        notice: { kind: "ok", text: M.dashLinkCreated },
      });
    });

    // The list alone, for its live refresh.
    app.get("/links/list", async (c) => {
      const m = merchantOf(c);
      return fragment(
        c,
        <LinksList links={await links(deps, m, dashProfileOf(c))} limit={LIST_LIMIT} />,
      );
    });

    app.get("/links/:reference/qr.svg", async (c) => {
      const p = await payments.merchantPayment(deps, merchantOf(c).id, c.req.param("reference"), [
        dashProfileOf(c),
      ]);
      if (!p) return c.text(M.paymentNotFound, 404);
      const svg = await QRCode.toString(payments.checkoutUrl(deps, p.reference), {
        type: "svg",
        margin: 1,
        errorCorrectionLevel: "M",
      });
      return c.body(svg, 200, { "Content-Type": "image/svg+xml" });
    });
  },
};

/** Creating links counts in the payments group, as the API's payment-link route does. */
function paymentsGroup(deps: Deps): MiddlewareHandler {
  return async (c, next) => {
    const auth = sessionOf(c);
    if (auth) {
      enforce(c, [
        await deps.limiter.hit("payments", auth.subject, { merchantId: auth.merchant?.id }),
      ]);
    }
    await next();
  };
}

async function own(deps: Deps, c: DashContext, reference: string) {
  const p = await payments.merchantPayment(deps, merchantOf(c).id, reference, [dashProfileOf(c)]);
  return p && p.kind === "link" ? paymentItem(deps, p) : undefined;
}

/** The links of the session's mode (its chain only), like the API's list for a key. */
async function links(deps: Deps, m: Merchant, profile: ProfileName): Promise<PaymentItem[]> {
  const { rows } = await payments.history(deps, m.id, [profile], {
    kind: "link",
    limit: LIST_LIMIT,
  });
  return rows.map((p) => paymentItem(deps, p));
}

async function render(
  c: DashContext,
  deps: Deps,
  extra: Partial<LinksViewProps> = {},
  status?: ContentfulStatusCode,
) {
  const m = merchantOf(c);
  return page(c, {
    title: "Payment links",
    section: "links",
    status,
    body: (
      <LinksView
        csrf={c.get("csrfToken")}
        links={await links(deps, m, dashProfileOf(c))}
        hasWallet={!!m.walletAddress}
        limit={LIST_LIMIT}
        {...extra}
      />
    ),
  });
}
