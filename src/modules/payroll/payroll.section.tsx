/**
 * Payroll in the dashboard: CSV upload → preview (every line checked with the API's rules) →
 * run (the batch starts at once; its panel polls itself so the progress bar moves) → history
 * with each recipient's result. External payer wallets: the pending sign requests, each sent
 * from the browser wallet and reported back here, where it is checked on chain. Everything is in
 * the session's mode (test: testnet, live: production), like an API key's environment.
 */
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { Deps } from "../../deps.ts";
import type { ProfileName } from "../../chain/profiles.ts";
import { ApiError } from "../../http/errors.ts";
import { M } from "../../http/messages.ts";
import { formatUsdc } from "../../money.ts";
import {
  BatchPanel,
  type PayrollPreview,
  PayrollView,
  type PayrollViewProps,
} from "../../../views/dashboard/payroll.tsx";
import {
  attempt,
  type DashContext,
  formBody,
  fragment,
  merchantOf,
  page,
  sessionOf,
  single,
} from "../dashboard/dashboard.http.tsx";
import type { DashboardSection } from "../dashboard/section.ts";
import * as service from "./payroll.service.ts";
import { listSignRequests, submitSignRequest } from "./payroll.signing.ts";
import { parsePayrollCsv } from "./payroll.csv.ts";

/** Recipients a batch's panel lists (the API has them all). */
const SHOWN = 500;

/** The chain of the session's mode: the only one whose batches the page shows or starts. */
function profileOf(c: DashContext): ProfileName {
  const p = sessionOf(c)?.profile;
  if (!p) throw new ApiError(401, M.notAuthenticated);
  return p;
}

export const payrollSection: DashboardSection = {
  id: "payroll",
  label: "Payroll",
  path: "/dashboard/payroll",
  order: 39,
  routes(app, deps) {
    app.get("/payroll", (c) => render(c, deps));

    app.post("/payroll/preview", async (c) => {
      const body = await c.req.parseBody();
      const file = body.csv;
      const csv = file instanceof File ? await file.text() : typeof file === "string" ? file : "";
      const description = typeof body.description === "string" ? body.description : "";
      const preview = await withPayer(
        deps,
        c,
        previewOf(csv, description, crypto.randomUUID()),
      );
      return render(c, deps, { preview }, preview.valid ? 200 : 400);
    });

    app.post("/payroll/run", async (c) => {
      const v = single(await formBody(c));
      const preview = await withPayer(
        deps,
        c,
        previewOf(v.csv ?? "", v.description ?? "", v.runKey || crypto.randomUUID()),
      );
      const parsed = parsePayrollCsv(v.csv ?? "");
      if (!preview.valid || !parsed.recipients) return render(c, deps, { preview }, 400);
      const m = merchantOf(c);
      const r = await attempt(() =>
        service.runBatch(
          deps,
          m,
          profileOf(c),
          {
            recipients: parsed.recipients!,
            description: v.description?.trim() || null,
            webhookUrl: null,
          },
          `dashboard:${preview.runKey}`,
          0, // answer at once: the batch's panel follows it
        )
      );
      return r.ok
        ? render(c, deps, {
          notice: { kind: "ok", text: `Payroll ${r.value.batch.batchRef} started.` },
        })
        : render(c, deps, { notice: { kind: "error", text: r.error.message } }, r.error.status);
    });

    app.get("/payroll/batches/:ref", async (c) => {
      const r = await attempt(() =>
        service.getBatch(deps, merchantOf(c).id, profileOf(c), c.req.param("ref"), SHOWN)
      );
      if (!r.ok) return fragment(c, <p class="error">{r.error.message}</p>, r.error.status);
      return fragment(
        c,
        <BatchPanel batch={service.batchView(deps, r.value.batch, r.value.recipients)} />,
      );
    });

    app.post("/payroll/sign-requests/:id", async (c) => {
      const v = single(await formBody(c));
      const txHash = (v.txHash ?? "").toLowerCase();
      if (!/^0x[0-9a-f]{64}$/.test(txHash)) {
        return render(c, deps, { notice: { kind: "error", text: "Not a transaction hash." } }, 400);
      }
      const r = await attempt(() =>
        submitSignRequest(
          deps,
          merchantOf(c),
          profileOf(c),
          c.req.param("id"),
          txHash as `0x${string}`,
        )
      );
      return r.ok
        ? render(c, deps, {
          notice: {
            kind: "ok",
            text:
              `Payment verified on chain; batch ${r.value.batch.batchRef} is ${r.value.batch.status}.`,
          },
        })
        : render(c, deps, { notice: { kind: "error", text: r.error.message } }, r.error.status);
    });
  },
};

/**
 * The preview with who pays it: a managed payout wallet that holds less than the file's total
 * makes it not runnable (the run would fail the recipients past the balance), said above it.
 */
async function withPayer(
  deps: Deps,
  c: DashContext,
  preview: PayrollPreview & { totalUnits: bigint },
): Promise<PayrollPreview> {
  const { totalUnits, ...p } = preview;
  if (!p.valid) return p;
  const r = await attempt(() =>
    service.previewPayer(deps, merchantOf(c), profileOf(c), totalUnits)
  );
  if (!r.ok) return { ...p, valid: false, fileError: r.error.message };
  const payer = {
    address: r.value.address,
    balance: r.value.balance === null ? null : formatUsdc(r.value.balance, { decimals: "fixed" }),
  };
  if (!r.value.short) return { ...p, payer };
  return {
    ...p,
    payer,
    valid: false,
    fileError:
      `The payout wallet ${payer.address} holds ${payer.balance} USDC; this file pays ${p.total} USDC. Fund it, or pay fewer recipients.`,
  };
}

function previewOf(
  csv: string,
  description: string,
  runKey: string,
): PayrollPreview & { totalUnits: bigint } {
  const parsed = parsePayrollCsv(csv);
  const total = parsed.lines.reduce((s, l) => s + (l.parsed?.amount ?? 0n), 0n);
  return {
    totalUnits: total,
    csv,
    runKey,
    description,
    lines: parsed.lines.map(({ line, recipient, amount, label, error }) => ({
      line,
      recipient,
      amount,
      label,
      error,
    })),
    fileError: parsed.fileError,
    valid: !!parsed.recipients,
    total: formatUsdc(total, { decimals: "fixed" }),
  };
}

async function render(
  c: DashContext,
  deps: Deps,
  extra: Partial<PayrollViewProps> = {},
  status?: ContentfulStatusCode,
) {
  const m = merchantOf(c);
  const profile = profileOf(c);
  const rows = await service.listBatches(deps, m.id, profile, 20);
  const batches = await Promise.all(rows.map(async (b) => {
    const { recipients } = await service.getBatch(deps, m.id, profile, b.batchRef, SHOWN);
    return service.batchView(deps, b, recipients);
  }));
  return page(c, {
    title: "Payroll",
    section: "payroll",
    status,
    body: (
      <PayrollView
        csrf={c.get("csrfToken")}
        batches={batches}
        signRequests={await listSignRequests(deps, m, profile)}
        {...extra}
      />
    ),
  });
}
