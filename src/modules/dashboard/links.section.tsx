/**
 * Payment links: create through the payments service (the API's validation and texts, the
 * payments rate-limit group like POST /api/merchant/payment-link), the 100 newest links, and
 * each payment's QR code as an SVG image (`/dashboard/links/:reference/qr.svg`).
 */
import type { MiddlewareHandler } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import QRCode from "qrcode";
import type { Deps } from "../../deps.ts";
import { DomainError, type ErrorCode } from "../../errors.ts";
import { answerFor } from "../../http/error-map.ts";
import { M } from "../../http/messages.ts";
import { enforce } from "../../http/rate-limit.ts";
import * as payments from "../payments/payments.service.ts";
import { type LinkForm, LinksView, type LinksViewProps } from "../../../views/dashboard/links.tsx";
import type { PaymentItem } from "../../../views/dashboard/payment-parts.tsx";
import {
  attempt,
  type DashContext,
  formBody,
  type Merchant,
  merchantOf,
  page,
  sessionOf,
  single,
} from "./dashboard.http.tsx";
import { paymentItem } from "./payment-items.ts";
import type { DashboardSection } from "./dashboard.sections.ts";

const LIST_LIMIT = 100;

/** Where the service's errors belong on the form. */
const FIELD_OF: Partial<Record<ErrorCode, string>> = {
  payment_amount_invalid: "amount",
  payment_description_invalid: "description",
  webhook_url_invalid: "webhookUrl",
};

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
      const errors = fieldErrors(deps, input);
      if (Object.keys(errors).length) {
        return await render(c, deps, { form: { values, errors } }, 400);
      }
      const r = await attempt(() =>
        payments.createPayment(
          deps,
          m,
          "link",
          deps.chain.payoutProfile(),
          payments.parseCreate(deps, input),
        )
      );
      if (!r.ok) {
        const field = r.error.code && FIELD_OF[r.error.code];
        const form: LinkForm = { values, errors: field ? { [field]: r.error.message } : {} };
        const notice = field ? undefined : { kind: "error" as const, text: r.error.message };
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

    app.get("/links/:reference/qr.svg", async (c) => {
      const p = await payments.merchantPayment(deps, merchantOf(c).id, c.req.param("reference"));
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

/**
 * Every field's own error at once (parseCreate stops at the first): each field is checked with
 * valid values for the others, so each text is the API's own for that field.
 */
function fieldErrors(deps: Deps, input: payments.CreateInput): Record<string, string> {
  const probes: [string, payments.CreateInput][] = [
    ["amount", { amount: input.amount }],
    ["description", { amount: "1", description: input.description }],
    ["webhookUrl", { amount: "1", webhookUrl: input.webhookUrl }],
  ];
  const errors: Record<string, string> = {};
  for (const [field, probe] of probes) {
    try {
      payments.parseCreate(deps, probe);
    } catch (e) {
      if (!(e instanceof DomainError)) throw e;
      errors[field] = answerFor(e).message;
    }
  }
  return errors;
}

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
  const p = await payments.merchantPayment(deps, merchantOf(c).id, reference);
  return p && p.kind === "link" ? paymentItem(deps, p) : undefined;
}

async function links(deps: Deps, m: Merchant): Promise<PaymentItem[]> {
  const { rows } = await payments.history(deps, m.id, deps.chain.profiles(), {
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
        links={await links(deps, m)}
        hasWallet={!!m.walletAddress}
        limit={LIST_LIMIT}
        {...extra}
      />
    ),
  });
}
