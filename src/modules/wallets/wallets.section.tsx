/**
 * Wallets, the one section for the merchant's money: the payout wallet (marked, its balance, a new
 * managed one, linking an external wallet: merchants.section.tsx's routes), the managed wallets
 * with their balances, a new one, withdraw (review, then confirm; the confirmation carries a
 * request key so a double submit sends once), and in test mode on local chains in development a
 * faucet button beside each wallet. Balances, withdrawals and the faucet are on the session's
 * mode's chain only (test: testnet, live: production), like a key's environment for the API.
 */
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { Deps } from "../../deps.ts";
import { M } from "../../http/messages.ts";
import { parseFields } from "../../http/contract.ts";
import { PROFILE_DEFS, type ProfileName } from "../../chain/profiles.ts";
import * as wallets from "./wallets.service.ts";
import { createWalletBody, withdrawBody } from "./wallets.schemas.ts";
import { WalletsView, type WalletsViewProps } from "../../../views/dashboard/wallets.tsx";
import {
  attempt,
  type DashContext,
  dashProfileOf,
  formBody,
  merchantOf,
  modeOf,
  page,
  single,
} from "../dashboard/dashboard.http.tsx";
import { payoutDone, PayoutWallet, payoutWalletRoutes } from "../merchants/merchants.section.tsx";
import { DomainError } from "../../errors.ts";
import type { DashboardSection } from "../dashboard/section.ts";

export const walletsSection: DashboardSection = {
  id: "wallets",
  label: "Wallets",
  path: "/dashboard/wallets",
  order: 50,
  routes(app, deps) {
    payoutWalletRoutes(app, deps, (c, notice, status) => render(c, deps, { notice }, status));

    app.get("/wallets", (c) => render(c, deps, { notice: payoutDone(c.req.query("done")) }));

    app.post("/wallets", async (c) => {
      const parsed = parseFields(createWalletBody, single(await formBody(c)));
      if (!parsed.ok) return render(c, deps, { labelError: parsed.errors.label }, 400);
      await wallets.createWallet(deps, merchantOf(c), parsed.data);
      return render(c, deps, { notice: { kind: "ok", text: M.dashWalletCreated } });
    });

    app.post("/wallets/:id/withdraw/review", async (c) => {
      const id = c.req.param("id");
      const values = single(await formBody(c));
      const checked = await check(c, deps, id, values);
      if (!checked.ok) return checked.response;
      // Checked as the withdrawal will be (the balance less what is in flight), nothing signed.
      const preview = await attempt(() =>
        wallets.previewWithdraw(deps, merchantOf(c), checked.profile, {
          ...checked.input,
          walletId: id,
        })
      );
      if (!preview.ok) {
        const balance = preview.error.body.balance
          ? ` Balance: ${preview.error.body.balance} USDC.`
          : "";
        return render(
          c,
          deps,
          { notice: { kind: "error", text: preview.error.message + balance } },
          preview.error.status,
        );
      }
      return render(c, deps, {
        review: {
          walletId: id,
          amount: values.amount,
          destinationAddress: values.destinationAddress,
          chain: checked.profile,
          from: preview.value.source,
          fromLabel: preview.value.label,
          balance: preview.value.balance,
          requestKey: crypto.randomUUID(),
        },
      });
    });

    app.post("/wallets/:id/withdraw", async (c) => {
      const id = c.req.param("id");
      const values = single(await formBody(c));
      const checked = await check(c, deps, id, values);
      if (!checked.ok) return checked.response;
      const r = await attempt(() =>
        wallets.withdraw(
          deps,
          merchantOf(c),
          checked.profile,
          { ...checked.input, walletId: id },
          values.requestKey || undefined,
        )
      );
      if (!r.ok) {
        const balance = r.error.body.balance ? ` Balance: ${r.error.body.balance} USDC.` : "";
        return render(
          c,
          deps,
          { notice: { kind: "error", text: r.error.message + balance } },
          r.error.status,
        );
      }
      return render(c, deps, {
        notice: {
          kind: "ok",
          text:
            `${M.dashWithdrawn} ${r.value.amount} USDC to ${r.value.recipient}: ${r.value.txHash}`,
        },
      });
    });

    app.post("/wallets/:id/faucet", async (c) => {
      const { chain } = single(await formBody(c));
      const r = await attempt(async () => {
        // Test mode only, on its chain: live mode has no faucet.
        if (!faucetChains(c, deps).includes(chain as ProfileName)) {
          await wallets.getWallet(deps, merchantOf(c), c.req.param("id"));
          throw new DomainError("dev_faucet_unavailable");
        }
        return await wallets.faucet(deps, merchantOf(c), c.req.param("id"), chain);
      });
      return r.ok
        ? render(c, deps, { notice: { kind: "ok", text: M.dashFaucetMinted } })
        : render(c, deps, { notice: { kind: "error", text: r.error.message } }, r.error.status);
    });
  },
};

type Checked =
  | { ok: true; profile: ProfileName; input: { amount: bigint; destinationAddress: string } }
  | { ok: false; response: Response | Promise<Response> };

/** The withdraw form's fields, the chain, and that the wallet is the merchant's. */
async function check(
  c: DashContext,
  deps: Deps,
  walletId: string,
  values: Record<string, string>,
): Promise<Checked> {
  const owned = await attempt(() => wallets.getWallet(deps, merchantOf(c), walletId));
  if (!owned.ok) {
    const notice = { kind: "error" as const, text: owned.error.message };
    return { ok: false, response: render(c, deps, { notice }, owned.error.status) };
  }
  // Trimmed, as the payment link form trims: " 5 " typed or pasted is 5.
  const parsed = parseFields(withdrawBody, {
    amount: (values.amount ?? "").trim(),
    destinationAddress: (values.destinationAddress ?? "").trim(),
  });
  // The session's mode's chain only: the other environment's chain is not offered nor accepted.
  const profile = deps.chain.profiles().find((p) => p === values.chain && p === dashProfileOf(c));
  const errors = parsed.ok ? {} : { ...parsed.errors };
  if (!profile) errors.chain = M.chainNotConfigured;
  if (!parsed.ok || !profile) {
    const form = { walletId, values, errors };
    return { ok: false, response: render(c, deps, { form }, 400) };
  }
  return { ok: true, profile, input: parsed.data };
}

async function render(
  c: DashContext,
  deps: Deps,
  extra: Partial<WalletsViewProps> = {},
  status?: ContentfulStatusCode,
) {
  const list = await wallets.listWallets(deps, merchantOf(c));
  const mode = dashProfileOf(c);
  return page(c, {
    title: "Wallets",
    section: "wallets",
    status,
    body: (
      <WalletsView
        csrf={c.get("csrfToken")}
        wallets={list}
        chains={deps.chain.profiles().filter((p) => p === mode).map((p) => ({
          name: p,
          label: PROFILE_DEFS[p].label,
        }))}
        faucet={faucetChains(c, deps)}
        payout={<PayoutWallet c={c} />}
        {...extra}
      />
    ),
  });
}

/** The faucet's chains: in test mode, its chain when local in development; none in live mode. */
function faucetChains(c: DashContext, deps: Deps): ProfileName[] {
  if (modeOf(c) !== "test") return [];
  return wallets.faucetProfiles(deps).filter((p) => p === dashProfileOf(c));
}
