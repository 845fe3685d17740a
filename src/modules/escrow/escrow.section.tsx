/**
 * Escrow in the dashboard: the merchant's escrows with their state, parties and expiry
 * countdown, and release / confirm / dispute (with a reason) as its own wallets, each reviewed
 * and confirmed before it is sent. Fields are checked with the API's schemas.
 */
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { Deps } from "../../deps.ts";
import { M } from "../../http/messages.ts";
import { parseFields } from "../../http/contract.ts";
import * as service from "./escrow.service.ts";
import { dashboardEscrows } from "./escrow.dashboard.ts";
import { disputeBody, partyActionBody } from "./escrow.schemas.ts";
import {
  type EscrowAction,
  EscrowView,
  type EscrowViewProps,
} from "../../../views/dashboard/escrow.tsx";
import {
  attempt,
  type DashContext,
  formBody,
  merchantOf,
  page,
  sessionOf,
  single,
} from "../dashboard/dashboard.http.tsx";
import type { Context } from "hono";
import { ApiError } from "../../http/errors.ts";
import type { EscrowScope } from "./escrow.service.ts";
import type { DashboardSection } from "../dashboard/section.ts";

const ACTIONS: EscrowAction[] = ["release", "confirm", "dispute"];

/** The signed-in merchant's escrows in the session's mode (test: testnet, live: production). */
function dashboardScope(c: Context): EscrowScope {
  const profile = sessionOf(c)?.profile;
  if (!profile) throw new ApiError(401, M.notAuthenticated);
  return { merchantId: merchantOf(c).id, profile };
}

export const escrowSection: DashboardSection = {
  id: "escrow",
  label: "Escrow",
  path: "/dashboard/escrow",
  order: 36,
  routes(app, deps) {
    app.get("/escrow", (c) => render(c, deps));

    app.post("/escrow/review", async (c) => {
      const checked = await check(c, deps, single(await formBody(c)));
      if (!checked.ok) return checked.response;
      const { values, amount } = checked;
      return render(c, deps, {
        review: {
          reference: values.reference,
          action: values.action as EscrowAction,
          callerSCA: values.callerSCA,
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
      const caller = values.callerSCA.toLowerCase();
      const r = await attempt(async () => {
        switch (values.action as EscrowAction) {
          case "release":
            await service.release(deps, scope, values.reference, caller);
            return M.escrowReleased;
          case "confirm":
            await service.confirm(deps, scope, values.reference, caller);
            return M.escrowConfirmed;
          case "dispute":
            await service.dispute(deps, scope, {
              reference: values.reference,
              callerSCA: caller,
              reason: values.reason ?? "",
            });
            return M.escrowDisputed;
        }
      });
      return r.ok
        ? render(c, deps, { notice: { kind: "ok", text: r.value } })
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
  const escrows = await dashboardEscrows(deps, dashboardScope(c));
  return page(c, {
    title: "Escrow",
    section: "escrow",
    status,
    body: <EscrowView csrf={c.get("csrfToken")} escrows={escrows} {...extra} />,
  });
}
