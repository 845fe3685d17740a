/**
 * Escrow in the dashboard: create (depositor = one of the merchant's wallets), the merchant's
 * escrows with their state, parties, expiry countdown, the arbiter's resolution and transaction
 * links, and release / confirm / dispute (with a reason) as its own wallets and refund once
 * expired. Each goes form → review (nothing sent) → confirm → the result with its transaction
 * link. Fields are checked with the API's schemas and service checks, so refusals read as the
 * API's; everything acts in the session's mode (test → testnet, live → production).
 */
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { Deps } from "../../deps.ts";
import { M } from "../../http/messages.ts";
import { parseFields } from "../../http/contract.ts";
import * as service from "./escrow.service.ts";
import { dashboardEscrow, dashboardEscrows } from "./escrow.dashboard.ts";
import { createEscrowBody, disputeBody, partyActionBody, refundBody } from "./escrow.schemas.ts";
import { formatUsdc } from "../../money.ts";
import { checksum } from "../../chain/address.ts";
import { listWallets } from "../wallets/wallets.service.ts";
import { humanSeconds, modeText, utcMinute } from "../../../views/dashboard/review.tsx";
import {
  type EscrowAction,
  EscrowPanel,
  EscrowView,
  type EscrowViewProps,
} from "../../../views/dashboard/escrow.tsx";
import {
  attempt,
  type DashContext,
  dashProfileOf,
  formBody,
  fragment,
  merchantOf,
  modeOf,
  page,
  single,
  walletChoiceLabel,
} from "../dashboard/dashboard.http.tsx";
import type { Context } from "hono";
import type { EscrowScope } from "./escrow.service.ts";
import type { DashboardSection } from "../dashboard/section.ts";

const ACTIONS: EscrowAction[] = ["release", "confirm", "dispute", "refund"];

/** Seconds per unit of the create form's expiry. */
const UNIT_SECONDS: Record<string, number> = { minutes: 60, hours: 3600, days: 86400 };

/** The signed-in merchant's escrows in the session's mode (test: testnet, live: production). */
function dashboardScope(c: Context): EscrowScope {
  return { merchantId: merchantOf(c).id, profile: dashProfileOf(c) };
}

export const escrowSection: DashboardSection = {
  id: "escrow",
  label: "Escrow",
  path: "/dashboard/escrow",
  order: 36,
  routes(app, deps) {
    const schema = createEscrowBody(deps.config.WEBHOOK_TARGETS);

    app.get("/escrow", (c) => render(c, deps));

    /** One escrow's panel: a DISPUTED one refreshes itself until the arbiter decides. */
    app.get("/escrow/:reference/panel", async (c) => {
      const r = await attempt(() =>
        dashboardEscrow(deps, dashboardScope(c), c.req.param("reference"))
      );
      if (!r.ok) return fragment(c, <p role="alert">{r.error.message}</p>, r.error.status);
      return fragment(c, <EscrowPanel csrf={c.get("csrfToken")} escrows={[]} escrow={r.value} />);
    });

    /** Create, step 1 → 2: checked as the API checks it, then what will be sent. */
    app.post("/escrow/new/review", async (c) => {
      const values = single(await formBody(c));
      const parsed = parseFields(schema, createFields(values));
      if (!parsed.ok) return render(c, deps, createError(values, parsed.errors), 400);
      const input = parsed.data;
      const preview = await attempt(() =>
        service.previewEscrow(deps, merchantOf(c), dashProfileOf(c), input)
      );
      if (!preview.ok) {
        return render(
          c,
          deps,
          createError(values, {}, preview.error.message),
          preview.error.status,
        );
      }
      const p = preview.value;
      const amount = formatUsdc(input.amount, { decimals: "fixed" });
      const seconds = Math.round((p.expiresAt.getTime() - deps.clock.now().getTime()) / 1000);
      const hidden = {
        depositorWalletId: p.depositorWalletId,
        beneficiarySCA: checksum(input.beneficiarySCA),
        amount,
        expiresAt: p.expiresAt.toISOString(),
        description: input.description ?? "",
        webhookUrl: input.webhookUrl ?? "",
        // The create's request key: a second confirm of this review holds nothing more.
        requestKey: crypto.randomUUID(),
      };
      return render(c, deps, {
        createReview: {
          id: "escrow-create",
          title: "Review: new escrow",
          summary: `${amount} USDC will be held by the escrow contract now, from ${
            checksum(p.depositor)
          }, for ${hidden.beneficiarySCA}, until it is released, or refunded after ${
            utcMinute(hidden.expiresAt)
          }.`,
          facts: [
            { label: "Mode", value: modeText(modeOf(c), dashProfileOf(c)) },
            { label: "Depositor", value: <code>{checksum(p.depositor)}</code> },
            { label: "Beneficiary", value: <code>{hidden.beneficiarySCA}</code> },
            { label: "Amount", value: `${amount} USDC` },
            {
              label: "Expires",
              value: (
                <>
                  <time datetime={hidden.expiresAt} data-testid="escrow-expiry">
                    {utcMinute(hidden.expiresAt)}
                  </time>{" "}
                  (in {humanSeconds(seconds)})
                </>
              ),
            },
            {
              label: "Depositor's balance",
              value: `${formatUsdc(p.balance, { decimals: "fixed" })} USDC`,
            },
            ...(input.description ? [{ label: "Description", value: input.description }] : []),
            ...(input.webhookUrl ? [{ label: "Webhook", value: input.webhookUrl }] : []),
          ],
          action: "/dashboard/escrow/create",
          hidden,
          confirm: `Hold ${amount} USDC`,
          busy: "Holding…",
          back: "/dashboard/escrow",
        },
      });
    });

    /** Create, step 2 → 3: the API's service call; the result with its transaction link. */
    app.post("/escrow/create", async (c) => {
      const values = single(await formBody(c));
      const body: Record<string, unknown> = {
        depositorWalletId: values.depositorWalletId ?? "",
        beneficiarySCA: values.beneficiarySCA ?? "",
        amount: values.amount ?? "",
        expiresAt: values.expiresAt ?? "",
      };
      if (values.description) body.description = values.description;
      if (values.webhookUrl) body.webhookUrl = values.webhookUrl;
      const parsed = parseFields(schema, body);
      if (!parsed.ok) return render(c, deps, createError(values, formErrors(parsed.errors)), 400);
      const requestKey = /^[0-9a-f-]{36}$/.test(values.requestKey ?? "")
        ? `dashboard:${values.requestKey}`
        : undefined;
      const r = await attempt(() =>
        service.createEscrow(deps, merchantOf(c), dashProfileOf(c), parsed.data, requestKey)
      );
      if (!r.ok) return render(c, deps, createError(values, {}, r.error.message), r.error.status);
      const e = service.escrowView(deps, r.value);
      return render(c, deps, {
        result: {
          text: `${M.escrowCreated} ${e.reference}: ${e.amount} USDC for ${e.beneficiary}, ` +
            `expires ${utcMinute(e.expiresAt)}.`,
          txHash: e.txHash,
          explorerUrl: e.explorerUrl,
        },
      });
    });

    app.post("/escrow/review", async (c) => {
      const checked = await check(c, deps, single(await formBody(c)));
      if (!checked.ok) return checked.response;
      const { values, amount } = checked;
      return render(c, deps, {
        review: {
          reference: values.reference,
          action: values.action as EscrowAction,
          callerSCA: values.callerSCA ?? "",
          reason: values.reason ?? "",
          amount,
        },
      });
    });

    app.post("/escrow/act", async (c) => {
      const checked = await check(c, deps, single(await formBody(c)));
      if (!checked.ok) return checked.response;
      const { values } = checked;
      const scope = dashboardScope(c);
      const caller = (values.callerSCA ?? "").toLowerCase();
      const r = await attempt(async () => {
        switch (values.action as EscrowAction) {
          case "release":
            return {
              ...(await service.release(deps, scope, values.reference, caller)),
              text: M.escrowReleased,
            };
          case "confirm":
            return {
              ...(await service.confirm(deps, scope, values.reference, caller)),
              text: M.escrowConfirmed,
            };
          case "refund":
            return {
              ...(await service.refund(deps, scope, values.reference)),
              text: M.escrowRefunded,
            };
          case "dispute":
            return {
              ...(await service.dispute(deps, scope, {
                reference: values.reference,
                callerSCA: caller,
                reason: values.reason ?? "",
              })),
              text: M.escrowDisputed,
            };
        }
      });
      return r.ok
        ? render(c, deps, {
          result: {
            text: r.value!.text,
            txHash: r.value!.txHash,
            explorerUrl: r.value!.explorerUrl,
          },
        })
        : render(c, deps, { notice: { kind: "error", text: r.error.message } }, r.error.status);
    });
  },
};

type Checked =
  | { ok: true; values: Record<string, string>; amount: string }
  | { ok: false; response: Response | Promise<Response> };

/** The form's fields (the API's schemas) and that the escrow is the merchant's. */
async function check(c: DashContext, deps: Deps, values: Record<string, string>): Promise<Checked> {
  const action = ACTIONS.find((a) => a === values.action);
  const parsed = action === "dispute"
    ? parseFields(disputeBody, { ...values, reason: values.reason ?? "" })
    : action === "refund"
    ? parseFields(refundBody, { reference: values.reference })
    : parseFields(partyActionBody, values);
  if (!action || !parsed.ok) {
    const errors = parsed.ok ? {} : parsed.errors;
    const text = action ? Object.values(errors)[0] ?? M.escrowReference : M.escrowWrongState;
    return {
      ok: false,
      response: render(c, deps, {
        form: { reference: values.reference ?? "", errors },
        notice: { kind: "error", text },
      }, 400),
    };
  }
  const found = await attempt(() => service.getEscrow(deps, dashboardScope(c), values.reference));
  if (!found.ok) {
    const notice = { kind: "error" as const, text: found.error.message };
    return { ok: false, response: render(c, deps, { notice }, found.error.status) };
  }
  return { ok: true, values, amount: service.escrowView(deps, found.value).amount };
}

async function render(
  c: DashContext,
  deps: Deps,
  extra: Partial<EscrowViewProps> = {},
  status?: ContentfulStatusCode,
) {
  const profile = dashProfileOf(c);
  const [escrows, wallets] = await Promise.all([
    dashboardEscrows(deps, dashboardScope(c)),
    extra.review || extra.createReview ? [] : listWallets(deps, merchantOf(c), [profile]),
  ]);
  return page(c, {
    title: "Escrow",
    section: "escrow",
    status,
    body: (
      <EscrowView
        csrf={c.get("csrfToken")}
        escrows={escrows}
        wallets={wallets.map((w) => ({
          id: w.id,
          label: walletChoiceLabel(w, profile),
        }))}
        {...extra}
      />
    ),
  });
}

/** The form's values as the API's create body (the expiry as expiresInSeconds). */
function createFields(v: Record<string, string>): Record<string, unknown> {
  const body: Record<string, unknown> = {
    depositorWalletId: v.depositorWalletId ?? "",
    beneficiarySCA: (v.beneficiarySCA ?? "").trim(),
    amount: (v.amount ?? "").trim(),
  };
  const n = (v.expiresIn ?? "").trim();
  // A value that is not a whole number stays one the schema refuses with the API's text.
  if (n !== "") {
    body.expiresInSeconds = /^[0-9]{1,9}$/.test(n)
      ? Number(n) * (UNIT_SECONDS[v.expiresUnit] ?? NaN)
      : n;
  }
  if ((v.description ?? "").trim() !== "") body.description = v.description.trim();
  if ((v.webhookUrl ?? "").trim() !== "") body.webhookUrl = v.webhookUrl.trim();
  return body;
}

/**
 * The form's words for the API's texts that name the API's fields (`expiresInSeconds`,
 * `beneficiarySCA`), which the form does not have.
 */
export const TEXT = {
  expiresIn:
    "Expires in must be a whole number of minutes, hours or days, from 1 minute to 365 days.",
  beneficiary:
    "Beneficiary address must be a 0x address (40 hex characters) other than the zero address.",
};

/** The schema's field names as the form's, and their texts in the form's words. */
function formErrors(errors: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(errors)) {
    const field = k === "depositorSCA"
      ? "depositorWalletId"
      : k === "expiresInSeconds" || k === "expiresAt"
      ? "expiresIn"
      : k;
    const text = v === M.escrowExpiry
      ? TEXT.expiresIn
      : v === M.escrowBeneficiary
      ? TEXT.beneficiary
      : v;
    out[field] ??= text;
  }
  return out;
}

function createError(
  values: Record<string, string>,
  errors: Record<string, string>,
  text?: string,
): Partial<EscrowViewProps> {
  const mapped = formErrors(errors);
  const first = text ?? Object.values(mapped)[0];
  return {
    create: { values, errors: mapped },
    notice: first ? { kind: "error", text: first } : undefined,
  };
}
