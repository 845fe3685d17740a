/**
 * Streams: create (sender = one of the merchant's wallets, receiver, total, and a rate or a
 * duration the rate is derived from), the list with a live progress bar (the list refreshes
 * itself from `/dashboard/streams/live`, the page ticks the accrual in between), stop (sent from
 * the stream's sender) and withdraw (to its receiver, when the merchant controls it) while
 * ACTIVE. Each goes form → review (what will be sent, nothing sent yet) → confirm → the result
 * with its transaction link. Fields are checked with the API's schema and the API's service
 * checks, so refusals read as the API's; everything acts in the session's mode (test → testnet
 * streams, live → production), as a key's environment does for the API.
 */
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { Deps } from "../../deps.ts";
import { checksum } from "../../chain/address.ts";
import { parseFields } from "../../http/contract.ts";
import { formatUsdc, tryParseUsdc } from "../../money.ts";
import { listWallets, walletAddresses } from "../wallets/wallets.service.ts";
import * as streams from "./streams.service.ts";
import { createStreamBody, type CreateStreamInput } from "./streams.schemas.ts";
import { accrued } from "./streams.rules.ts";
import {
  type StreamForm,
  type StreamItem,
  StreamsLive,
  StreamsView,
  type StreamsViewProps,
} from "../../../views/dashboard/streams.tsx";
import { humanSeconds, modeText, utcMinute } from "../../../views/dashboard/review.tsx";
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
import type { DashboardSection } from "../dashboard/section.ts";

/** Seconds per unit of the create form's duration. */
const UNIT_SECONDS: Record<string, bigint> = {
  seconds: 1n,
  minutes: 60n,
  hours: 3600n,
  days: 86400n,
};

export const TEXT = {
  rateOrDuration: "Give a rate per second or a duration, not both.",
  rateOrDurationMissing: "Give a rate per second, or a duration (the rate is worked out from it).",
  duration: "Duration must be a whole number above 0.",
};

export const streamsSection: DashboardSection = {
  id: "streams",
  label: "Streams",
  path: "/dashboard/streams",
  order: 35,
  routes(app, deps) {
    const schema = createStreamBody(deps.config.WEBHOOK_TARGETS);

    app.get("/streams", (c) => render(c, deps));

    app.get("/streams/live", async (c) => {
      const items = await streamItems(c, deps);
      return fragment(c, <StreamsLive csrf={c.get("csrfToken")} streams={items} />);
    });

    /** Step 1 → 2: the fields checked as the API checks them, then what will be sent. */
    app.post("/streams/review", async (c) => {
      const values = single(await formBody(c));
      const checked = await checkCreate(c, deps, schema, values);
      if (!checked.ok) return checked.response;
      const { input, preview } = checked;
      // How long it really streams: the rate is whole base units per second, so a duration's
      // rate is rounded down and the last part streams in one more second (1 USDC over 3 s: a
      // rate of 0.333333 lasts 4 s). The API's estimate is the spec's floor.
      const lasts = Number((input.totalDeposited + input.ratePerSecond - 1n) / input.ratePerSecond);
      const endsAt = new Date(
        preview.estimatedEndTime.getTime() + (lasts - preview.estimatedDurationSeconds) * 1000,
      );
      const hidden = {
        senderSCA: checksum(input.senderSCA),
        receiverSCA: checksum(input.receiverSCA),
        totalDeposited: formatUsdc(input.totalDeposited),
        ratePerSecond: formatUsdc(input.ratePerSecond),
        webhookUrl: input.webhookUrl ?? "",
        // The create's idempotency key: a second confirm (double submit, reload) locks nothing more.
        requestKey: crypto.randomUUID(),
      };
      return render(c, deps, {
        review: {
          id: "stream-create",
          title: "Review: new stream",
          summary: `${hidden.totalDeposited} USDC will be locked in the stream contract now, ` +
            `from ${hidden.senderSCA}, and streamed to ${hidden.receiverSCA} at ` +
            `${hidden.ratePerSecond} USDC per second.`,
          facts: [
            { label: "Mode", value: modeText(modeOf(c), dashProfileOf(c)) },
            { label: "Sender", value: <code>{hidden.senderSCA}</code> },
            { label: "Receiver", value: <code>{hidden.receiverSCA}</code> },
            { label: "Total", value: `${hidden.totalDeposited} USDC` },
            { label: "Rate", value: `${hidden.ratePerSecond} USDC per second` },
            { label: "Duration", value: `${humanSeconds(lasts)} (${lasts} s)` },
            {
              label: "Ends about",
              value: (
                <time datetime={endsAt.toISOString()} data-testid="stream-end">
                  {utcMinute(endsAt)}
                </time>
              ),
            },
            {
              label: "Sender's balance",
              value: `${formatUsdc(preview.balance, { decimals: "fixed" })} USDC`,
            },
            ...(input.webhookUrl ? [{ label: "Webhook", value: input.webhookUrl }] : []),
          ],
          action: "/dashboard/streams/create",
          hidden,
          confirm: `Lock ${hidden.totalDeposited} USDC and start`,
          busy: "Locking…",
          back: "/dashboard/streams",
        },
      });
    });

    /** Step 2 → 3: sent, with the API's service call; the result with its transaction link. */
    app.post("/streams/create", async (c) => {
      const values = single(await formBody(c));
      const parsed = parseFields(schema, fields(values));
      if (!parsed.ok) return render(c, deps, formError(values, parsed.errors), 400);
      const requestKey = /^[0-9a-f-]{36}$/.test(values.requestKey ?? "")
        ? `dashboard:${values.requestKey}`
        : undefined;
      const r = await attempt(() =>
        streams.createStream(deps, merchantOf(c), dashProfileOf(c), parsed.data, requestKey)
      );
      if (!r.ok) {
        return render(c, deps, formError(values, {}, r.error.message), r.error.status);
      }
      const s = r.value.row;
      return render(c, deps, {
        result: {
          text: `Stream ${s.reference} created: ${streams.usdc(s.rate)} USDC per second to ${
            checksum(s.receiverSca)
          } until ${streams.usdc(s.deposit)} USDC is streamed (about ${
            utcMinute(r.value.estimatedEndTime)
          }).`,
          txHash: s.txHash,
          explorerUrl: r.value.explorerUrl,
        },
      });
    });

    app.post("/streams/:reference/stop/review", async (c) => {
      const found = await attempt(() =>
        streams.getStream(deps, merchantOf(c).id, dashProfileOf(c), c.req.param("reference"))
      );
      if (!found.ok) {
        return render(
          c,
          deps,
          { notice: { kind: "error", text: found.error.message } },
          found.error.status,
        );
      }
      const s = found.value;
      const now = accrued(s, deps.clock.now());
      return render(c, deps, {
        review: {
          id: "stream-stop",
          title: `Review: stop ${s.reference}`,
          summary: `The stream stops now: the receiver gets what has accrued and not yet been ` +
            `withdrawn, the rest goes back to the sender ${checksum(s.senderSca)}.`,
          facts: [
            { label: "Mode", value: modeText(modeOf(c), dashProfileOf(c)) },
            { label: "Accrued so far", value: `${streams.usdc(now)} USDC` },
            { label: "Back to the sender", value: `about ${streams.usdc(s.deposit - now)} USDC` },
            { label: "Sent from", value: <code>{checksum(s.senderSca)}</code> },
          ],
          action: `/dashboard/streams/${s.reference}/stop`,
          hidden: {},
          confirm: "Stop the stream",
          busy: "Stopping…",
          back: "/dashboard/streams",
        },
      });
    });

    app.post("/streams/:reference/stop", async (c) => {
      const merchant = merchantOf(c);
      const profile = dashProfileOf(c);
      const r = await attempt(async () => {
        const s = await streams.getStream(deps, merchant.id, profile, c.req.param("reference"));
        return await streams.stopStream(deps, merchant, profile, {
          reference: s.reference,
          callerSCA: s.senderSca as `0x${string}`,
        });
      });
      if (!r.ok) {
        return render(
          c,
          deps,
          { notice: { kind: "error", text: r.error.message } },
          r.error.status,
        );
      }
      return render(c, deps, {
        result: {
          text: `Stream stopped: ${streams.usdc(r.value.totalStreamed)} USDC to the receiver, ${
            streams.usdc(r.value.refundedToSender)
          } USDC refunded to the sender.`,
          txHash: r.value.txHash,
          explorerUrl: r.value.explorerUrl,
        },
      });
    });

    app.post("/streams/:reference/withdraw/review", async (c) => {
      const found = await attempt(() =>
        streams.getStream(deps, merchantOf(c).id, dashProfileOf(c), c.req.param("reference"))
      );
      if (!found.ok) {
        return render(
          c,
          deps,
          { notice: { kind: "error", text: found.error.message } },
          found.error.status,
        );
      }
      const s = found.value;
      const due = accrued(s, deps.clock.now()) - s.withdrawn;
      return render(c, deps, {
        review: {
          id: "stream-withdraw",
          title: `Review: withdraw from ${s.reference}`,
          summary: `What has accrued and not yet been withdrawn (about ${
            streams.usdc(due > 0n ? due : 0n)
          } USDC now) is sent to the receiver ${checksum(s.receiverSca)}.`,
          facts: [
            { label: "Mode", value: modeText(modeOf(c), dashProfileOf(c)) },
            { label: "Already withdrawn", value: `${streams.usdc(s.withdrawn)} USDC` },
            { label: "Receiver", value: <code>{checksum(s.receiverSca)}</code> },
          ],
          action: `/dashboard/streams/${s.reference}/withdraw`,
          hidden: { requestKey: crypto.randomUUID() },
          confirm: "Withdraw to the receiver",
          busy: "Withdrawing…",
          back: "/dashboard/streams",
        },
      });
    });

    app.post("/streams/:reference/withdraw", async (c) => {
      const merchant = merchantOf(c);
      const profile = dashProfileOf(c);
      const values = single(await formBody(c));
      const requestKey = /^[0-9a-f-]{36}$/.test(values.requestKey ?? "")
        ? `dashboard:${values.requestKey}`
        : undefined;
      const r = await attempt(async () => {
        const s = await streams.getStream(deps, merchant.id, profile, c.req.param("reference"));
        return await streams.withdrawStream(deps, merchant, profile, {
          reference: s.reference,
          receiverSCA: s.receiverSca as `0x${string}`,
        }, requestKey);
      });
      if (!r.ok) {
        return render(
          c,
          deps,
          { notice: { kind: "error", text: r.error.message } },
          r.error.status,
        );
      }
      return render(c, deps, {
        result: {
          text: `Withdrawn ${streams.usdc(r.value.amountWithdrawn)} USDC to the receiver.`,
          txHash: r.value.txHash,
          explorerUrl: r.value.explorerUrl,
        },
      });
    });
  },
};

/** The form's values as the API's create body: a rate, or one derived from the duration. */
function fields(v: Record<string, string>): Record<string, unknown> {
  const body: Record<string, unknown> = {
    senderSCA: v.senderSCA ?? "",
    receiverSCA: (v.receiverSCA ?? "").trim(),
    totalDeposited: (v.totalDeposited ?? "").trim(),
    ratePerSecond: (v.ratePerSecond ?? "").trim(),
  };
  if ((v.webhookUrl ?? "").trim() !== "") body.webhookUrl = v.webhookUrl.trim();
  return body;
}

type CreateChecked =
  | {
    ok: true;
    input: CreateStreamInput;
    preview: Awaited<ReturnType<typeof streams.previewStream>>;
  }
  | { ok: false; response: Response | Promise<Response> };

async function checkCreate(
  c: DashContext,
  deps: Deps,
  schema: ReturnType<typeof createStreamBody>,
  values: Record<string, string>,
): Promise<CreateChecked> {
  const body = fields(values);
  const rate = String(body.ratePerSecond);
  const duration = (values.duration ?? "").trim();
  const extra: Record<string, string> = {};
  if (rate !== "" && duration !== "") extra.duration = TEXT.rateOrDuration;
  else if (rate === "" && duration === "") extra.ratePerSecond = TEXT.rateOrDurationMissing;
  else if (rate === "" && duration !== "") {
    const seconds = /^[0-9]{1,9}$/.test(duration)
      ? BigInt(duration) * (UNIT_SECONDS[values.durationUnit] ?? 0n)
      : 0n;
    const total = tryParseUsdc(body.totalDeposited);
    if (seconds <= 0n) extra.duration = TEXT.duration;
    // The rate the duration gives (whole base units per second); the API's rate text if none.
    else if (total !== null) body.ratePerSecond = formatUsdc(total / seconds);
  }
  const parsed = parseFields(schema, body);
  const errors = { ...(parsed.ok ? {} : parsed.errors), ...extra };
  if (!parsed.ok && rate === "" && duration !== "" && errors.ratePerSecond && !extra.duration) {
    // No rate typed: the derived one failed, so the duration is what to change.
    errors.duration = errors.ratePerSecond;
    delete errors.ratePerSecond;
  }
  if (!parsed.ok || Object.keys(extra).length) {
    return { ok: false, response: render(c, deps, formError(values, errors), 400) };
  }
  const preview = await attempt(() =>
    streams.previewStream(deps, merchantOf(c), dashProfileOf(c), parsed.data)
  );
  if (!preview.ok) {
    return {
      ok: false,
      response: render(c, deps, formError(values, {}, preview.error.message), preview.error.status),
    };
  }
  return { ok: true, input: parsed.data, preview: preview.value };
}

/** The create form again, with its values, field errors and the first error as the notice. */
function formError(
  values: Record<string, string>,
  errors: Record<string, string>,
  text?: string,
): Partial<StreamsViewProps> {
  const form: StreamForm = { values, errors };
  const first = text ?? Object.values(errors)[0];
  return { form, notice: first ? { kind: "error", text: first } : undefined };
}

async function streamItems(c: DashContext, deps: Deps): Promise<StreamItem[]> {
  const merchant = merchantOf(c);
  const profile = dashProfileOf(c);
  const [list, wallets] = await Promise.all([
    streams.listStreams(deps, merchant.id, profile, {}),
    walletSet(deps, merchant.id),
  ]);
  const now = deps.clock.now().getTime();
  return list.streams.map((s) => ({
    ...s,
    elapsedSeconds: Math.max(0, Math.floor((now - Date.parse(s.startedAt)) / 1000)),
    canWithdraw: wallets.has(s.receiverSCA.toLowerCase()),
    canStop: wallets.has(s.senderSCA.toLowerCase()),
  }));
}

async function walletSet(deps: Deps, merchantId: string): Promise<Set<string>> {
  return new Set((await walletAddresses(deps, merchantId)).map((w) => w.address));
}

async function render(
  c: DashContext,
  deps: Deps,
  extra: Partial<StreamsViewProps> = {},
  status?: ContentfulStatusCode,
) {
  const merchant = merchantOf(c);
  const profile = dashProfileOf(c);
  const [items, wallets] = await Promise.all([
    streamItems(c, deps),
    extra.review ? [] : listWallets(deps, merchant, [profile]),
  ]);
  return page(c, {
    title: "Streams",
    section: "streams",
    status,
    body: (
      <StreamsView
        csrf={c.get("csrfToken")}
        streams={items}
        wallets={wallets.map((w) => ({
          address: w.address,
          label: walletChoiceLabel(w, profile),
        }))}
        {...extra}
      />
    ),
  });
}
