/** API keys: create (shown once), list, revoke, rotate (the merchant key included). */
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { Deps } from "../../deps.ts";
import { M } from "../../http/messages.ts";
import * as keys from "./keys.service.ts";
import { KEY_SCOPES } from "./keys.rules.ts";
import { createKeyBody } from "./keys.schemas.ts";
import { parseFields } from "../../http/contract.ts";
import { type KeyItem, KeysView, type KeysViewProps } from "../../../views/dashboard/keys.tsx";
import {
  attempt,
  type DashContext,
  formBody,
  merchantOf,
  page,
  single,
} from "../dashboard/dashboard.http.tsx";
import type { DashboardSection } from "../dashboard/section.ts";

const KIND_NAME: Record<string, string> = {
  merchant: "merchant key",
  secret: "secret key",
  publishable: "publishable key",
};

/** The merchant key first, then active keys, then revoked ones. */
function ordered(list: KeyItem[]): KeyItem[] {
  const rank = (k: KeyItem) => (k.type === "merchant" ? 0 : 1) + (k.status === "active" ? 0 : 2);
  return [...list].sort((a, b) => rank(a) - rank(b));
}

function issuedLabel(k: { type: string; environment: string }): string {
  const env = k.type === "merchant" ? "" : ` (${k.environment})`;
  return `Your new ${KIND_NAME[k.type] ?? "key"}${env}`;
}

export const keysSection: DashboardSection = {
  id: "keys",
  label: "API keys",
  path: "/dashboard/keys",
  order: 40,
  routes(app, deps) {
    app.get("/keys", (c) => render(c, deps));

    app.post("/keys", async (c) => {
      const values = await formBody(c);
      const input = {
        ...single(values),
        scopes: values.scopes === undefined
          ? undefined
          : Array.isArray(values.scopes)
          ? values.scopes
          : [values.scopes],
      };
      const parsed = parseFields(createKeyBody, input);
      if (!parsed.ok) return render(c, deps, { form: { values, errors: parsed.errors } }, 400);
      const r = await attempt(() => keys.createKey(deps, merchantOf(c).id, parsed.data));
      if (!r.ok) {
        return render(c, deps, {
          notice: { kind: "error", text: r.error.message },
          form: { values },
        }, r.error.status);
      }
      return render(c, deps, {
        issued: { key: r.value.key, label: issuedLabel(r.value), warning: M.keyWarning },
      });
    });

    app.post("/keys/:id/revoke", async (c) => {
      const r = await attempt(() => keys.revokeKey(deps, merchantOf(c).id, c.req.param("id")));
      return r.ok
        ? render(c, deps, { notice: { kind: "ok", text: M.keyRevoked } })
        : render(c, deps, { notice: { kind: "error", text: r.error.message } }, r.error.status);
    });

    app.post("/keys/:id/rotate", async (c) => {
      const r = await attempt(() => keys.rotateKey(deps, merchantOf(c).id, c.req.param("id")));
      if (!r.ok) {
        return render(
          c,
          deps,
          { notice: { kind: "error", text: r.error.message } },
          r.error.status,
        );
      }
      return render(c, deps, {
        issued: { key: r.value.key.key, label: issuedLabel(r.value.key), warning: M.keyWarning },
      });
    });
  },
};

async function render(
  c: DashContext,
  deps: Deps,
  extra: Partial<KeysViewProps> = {},
  status?: ContentfulStatusCode,
) {
  const list = ordered(await keys.listKeys(deps, merchantOf(c).id));
  return page(c, {
    title: "API keys",
    section: "keys",
    status,
    body: <KeysView csrf={c.get("csrfToken")} keys={list} scopes={KEY_SCOPES} {...extra} />,
  });
}
