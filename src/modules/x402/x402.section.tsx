/**
 * x402 in the dashboard: listings with calls and revenue, a listing form (the API's schema and
 * texts), the payout address's wallet and gateway balances, a withdrawal reviewed before it is
 * sent, and the latest paid calls.
 */
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { Deps } from "../../deps.ts";
import { M, MF } from "../../http/messages.ts";
import { parseFields } from "../../http/contract.ts";
import { checksum } from "../../chain/address.ts";
import { formatUsdc, parseUsdc } from "../../money.ts";
import * as service from "./x402.service.ts";
import * as gateway from "./x402.gateway.ts";
import {
  createListingBody,
  payerSignedWithdrawBody,
  payerWithdrawalStartBody,
  sellerWithdrawStartBody,
  withdrawBody,
} from "./x402.schemas.ts";
import * as withdrawals from "./x402.withdrawals.ts";
import { merchantSettlement } from "./x402.batched.views.ts";
import { type X402Balances, X402View, type X402ViewProps } from "../../../views/dashboard/x402.tsx";
import {
  attempt,
  type DashContext,
  formBody,
  type Merchant,
  merchantOf,
  page,
  single,
} from "../dashboard/dashboard.http.tsx";
import type { DashboardSection } from "../dashboard/section.ts";

export const x402Section: DashboardSection = {
  id: "x402",
  label: "x402",
  path: "/dashboard/x402",
  order: 37,
  routes(app, deps) {
    app.get("/x402", (c) => render(c, deps));

    app.post("/x402/listings", async (c) => {
      const raw = await formBody(c);
      const methods = Array.isArray(raw.methods) ? raw.methods : raw.methods ? [raw.methods] : [];
      const one = single(raw);
      const values = {
        slug: (one.slug ?? "").trim(),
        upstreamUrl: (one.upstreamUrl ?? "").trim(),
        price: (one.price ?? "").trim(),
        description: (one.description ?? "").trim(),
        methods,
      };
      const parsed = parseFields(createListingBody(deps.config.WEBHOOK_TARGETS), {
        ...values,
        description: values.description || undefined,
      });
      if (!parsed.ok) {
        return render(c, deps, { listingForm: { values, errors: parsed.errors } }, 400);
      }
      const r = await attempt(() => service.createListing(deps, merchantOf(c), parsed.data));
      if (!r.ok) {
        const notice = { kind: "error" as const, text: r.error.message };
        return render(c, deps, { listingForm: { values, errors: {} }, notice }, r.error.status);
      }
      return render(c, deps, { notice: { kind: "ok", text: M.dashListingCreated } });
    });

    app.post("/x402/withdraw/start", async (c) => {
      const one = single(await formBody(c));
      const values = { amount: (one.amount ?? "").trim() };
      const parsed = parseFields(sellerWithdrawStartBody, values);
      if (!parsed.ok) return render(c, deps, { startForm: { values, errors: parsed.errors } }, 400);
      const r = await attempt(() =>
        withdrawals.startSellerWithdrawal(deps, merchantOf(c), parsed.data)
      );
      if (!r.ok) {
        const errors = { amount: r.error.message };
        return render(c, deps, { startForm: { values, errors } }, r.error.status);
      }
      const text = MF.x402WithdrawalStarted(r.value.amount, minutesUtc(r.value.withdrawableAt));
      return render(c, deps, { notice: { kind: "ok", text } });
    });

    // An external payout wallet's signed withdrawal (or start), from the page's script: relayed
    // as POST /api/x402/payer/withdraw(/start) does, for the payout address only.
    app.post("/x402/withdraw/signed", async (c) => {
      const m = merchantOf(c);
      const one = single(await formBody(c));
      const start = one.kind === "start";
      const authorization = {
        account: m.walletAddress ?? "",
        value: one.value ?? "",
        validBefore: one.validBefore ?? "",
        nonce: one.nonce ?? "",
        ...(start ? {} : { to: m.walletAddress ?? "" }),
      };
      const body = { authorization, signature: one.signature ?? "" };
      const error = (text: string, status: ContentfulStatusCode) =>
        render(c, deps, { notice: { kind: "error", text } }, status);
      if (m.walletProvider === "MANAGED" || !m.walletAddress) {
        return error(M.x402RelayWithdrawBody, 400);
      }
      if (start) {
        const parsed = payerWithdrawalStartBody.safeParse(body);
        if (!parsed.success) return error(M.x402RelayWithdrawBody, 400);
        const r = await attempt(() => withdrawals.relayPayerWithdrawalStart(deps, parsed.data));
        if (!r.ok) return error(r.error.message, r.error.status);
        const text = MF.x402WithdrawalStarted(r.value.amount, minutesUtc(r.value.withdrawableAt));
        return render(c, deps, { notice: { kind: "ok", text } });
      }
      const parsed = payerSignedWithdrawBody.safeParse(body);
      if (!parsed.success) return error(M.x402RelayWithdrawBody, 400);
      const r = await attempt(() => withdrawals.relayPayerWithdraw(deps, parsed.data));
      if (!r.ok) return error(r.error.message, r.error.status);
      return render(c, deps, { notice: { kind: "ok", text: MF.x402Withdrawn(r.value.amount) } });
    });

    app.post("/x402/withdraw/review", async (c) => {
      const checked = await checkWithdraw(c, deps);
      if (!checked.ok) return checked.response;
      return render(c, deps, {
        review: { amount: checked.amount, destinationAddress: checked.destination },
      });
    });

    app.post("/x402/withdraw", async (c) => {
      const checked = await checkWithdraw(c, deps);
      if (!checked.ok) return checked.response;
      const r = await attempt(() =>
        gateway.withdraw(deps, merchantOf(c), {
          amount: checked.units,
          destinationChain: gateway.SOURCE_CHAIN,
          destinationAddress: checked.destination,
        })
      );
      return r.ok
        ? render(c, deps, { notice: { kind: "ok", text: MF.x402Withdrawn(r.value.amount) } })
        : render(c, deps, { notice: { kind: "error", text: r.error.message } }, r.error.status);
    });
  },
};

/** An ISO 8601 time in the page's own format (shell.tsx `Time`): minutes, UTC. */
const minutesUtc = (iso: string) => `${iso.slice(0, 16).replace("T", " ")} UTC`;

type CheckedWithdraw =
  | { ok: true; amount: string; units: bigint; destination: string }
  | { ok: false; response: Response | Promise<Response> };

/** The withdraw form against the API's schema and the withdrawable balance. */
async function checkWithdraw(c: DashContext, deps: Deps): Promise<CheckedWithdraw> {
  const one = single(await formBody(c));
  const values = {
    amount: (one.amount ?? "").trim(),
    destinationAddress: (one.destinationAddress ?? "").trim(),
  };
  const parsed = parseFields(withdrawBody, {
    amount: values.amount,
    destinationAddress: values.destinationAddress || undefined,
  });
  const fail = (errors: Record<string, string>, status: ContentfulStatusCode = 400) => ({
    ok: false as const,
    response: render(c, deps, { withdrawForm: { values, errors } }, status),
  });
  if (!parsed.ok) return fail(parsed.errors);
  const m = merchantOf(c);
  const balance = await attempt(() => gateway.sellerBalance(deps, m));
  if (!balance.ok) {
    return {
      ok: false,
      response: render(c, deps, { notice: { kind: "error", text: balance.error.message } }, 400),
    };
  }
  if (parseUsdc(balance.value.gateway.withdrawable, { allowZero: true }) < parsed.data.amount) {
    return fail({ amount: M.x402WithdrawExceeds });
  }
  return {
    ok: true,
    amount: formatUsdc(parsed.data.amount, { decimals: "fixed" }),
    units: parsed.data.amount,
    destination: checksum(parsed.data.destinationAddress ?? m.walletAddress!),
  };
}

async function balancesOf(deps: Deps, m: Merchant): Promise<X402Balances | null> {
  if (!m.walletAddress) return null;
  const r = await attempt(() => gateway.sellerBalance(deps, m));
  if (!r.ok) return null;
  const delay = await attempt(() => withdrawals.vaultDelay(deps, m.walletAddress!));
  const profile = service.X402_PROFILE;
  return {
    ...(m.walletProvider !== "MANAGED"
      ? {
        signing: {
          vault: checksum(deps.chain.contract(profile, "GatewayVault")),
          chainId: deps.chain.chainId(profile),
        },
      }
      : {}),
    sellerAddress: r.value.sellerAddress,
    wallet: r.value.wallet.balance,
    ...r.value.gateway,
    pending: r.value.pending.incoming,
    ...(delay.ok && delay.value.seconds > 0n
      ? {
        delaySeconds: Number(delay.value.seconds),
        ...(r.value.gateway.withdrawing !== "0.000000" && delay.value.withdrawableAt
          ? { withdrawableAt: delay.value.withdrawableAt }
          : {}),
      }
      : {}),
  };
}

async function render(
  c: DashContext,
  deps: Deps,
  extra: Partial<X402ViewProps> = {},
  status?: ContentfulStatusCode,
) {
  const m = merchantOf(c);
  const [listings, calls, balances, settlement] = await Promise.all([
    service.merchantListings(deps, m.id),
    service.merchantPayments(deps, m.id, 20),
    balancesOf(deps, m),
    merchantSettlement(deps.sql, m.id),
  ]);
  const profile = deps.chain.has(service.X402_PROFILE) ? service.X402_PROFILE : null;
  const txUrl = (h: string | null) => h && profile ? deps.chain.explorerTxUrl(profile, h) : null;
  return page(c, {
    title: "x402",
    section: "x402",
    status,
    body: (
      <X402View
        csrf={c.get("csrfToken")}
        listings={listings.map((l) => ({
          ...l,
          resourceUrl: `${deps.config.BASE_URL}/x402/${l.slug}`,
        }))}
        calls={calls.map((p) => ({
          createdAt: p.createdAt.toISOString(),
          listingSlug: p.listingSlug,
          scheme: p.scheme,
          payer: checksum(p.payer),
          amount: formatUsdc(p.amount, { decimals: "fixed" }),
          status: p.status,
          agentId: p.agentId,
          explorerUrl: p.txHash && profile ? deps.chain.explorerTxUrl(profile, p.txHash) : null,
        }))}
        balances={balances}
        settlement={{
          pending: settlement.pending,
          charges: settlement.charges.map(({ txHash, ...c }) => ({
            ...c,
            payer: checksum(c.payer),
            explorerUrl: txUrl(txHash),
          })),
          batches: settlement.batches.map(({ txHash, ...b }) => ({
            ...b,
            explorerUrl: txUrl(txHash),
          })),
        }}
        {...extra}
      />
    ),
  });
}
