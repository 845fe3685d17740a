/**
 * The payout wallet: details, USDC balance per chain, a new managed wallet, and linking an
 * external wallet with a SIWE signature made in the browser wallet. The challenge's nonce
 * travels in the same `wallet_connect_nonce` cookie as the API's, scoped to this page's routes.
 * Successful changes answer 303 to the wallet page (which htmx follows), so the page always
 * shows the merchant as stored.
 */
import { getCookie } from "hono/cookie";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { Deps } from "../../deps.ts";
import { M } from "../../http/messages.ts";
import {
  clearCookie,
  setSessionCookie,
  WALLET_NONCE_COOKIE,
  WALLET_NONCE_SECONDS,
} from "../../http/session-token.ts";
import { formatUsdc } from "../../money.ts";
import { PROFILE_DEFS } from "../../chain/profiles.ts";
import * as wallet from "./merchants.wallet.ts";
import { EXTERNAL_WALLET_KINDS } from "./merchants.schemas.ts";
import {
  type BalanceItem,
  Balances,
  WalletView,
  type WalletViewProps,
} from "../../../views/dashboard/wallet.tsx";
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

const NONCE_PATH = "/dashboard/wallet";

const DONE: Record<string, string> = {
  managed: M.walletManagedCreated,
  linked: M.dashWalletLinked,
};

export const walletSection: DashboardSection = {
  id: "wallet",
  label: "Wallet",
  path: "/dashboard/wallet",
  order: 50,
  routes(app, deps) {
    app.get("/wallet", (c) => {
      const done = DONE[c.req.query("done") ?? ""];
      return render(c, { notice: done ? { kind: "ok", text: done } : undefined });
    });

    app.get("/wallet/balances", async (c) => {
      if (!isPartial(c)) return render(c);
      return fragment(c, <Balances balances={await balances(deps, c)} />);
    });

    app.post("/wallet/managed", async (c) => {
      const r = await attempt(() => wallet.switchToManaged(deps, merchantOf(c), "MANAGED"));
      if (!r.ok) {
        return render(c, { notice: { kind: "error", text: r.error.message } }, r.error.status);
      }
      return c.redirect("/dashboard/wallet?done=managed", 303);
    });

    // JSON for the page script: the SIWE message to sign, or the catalog's error text.
    app.post("/wallet/challenge", async (c) => {
      const { address } = single(await formBody(c));
      const r = await attempt(() =>
        wallet.linkChallenge(deps, merchantOf(c), address || undefined)
      );
      if (!r.ok) return c.json({ success: false, error: r.error.message }, r.error.status);
      setSessionCookie(
        c,
        deps.config,
        WALLET_NONCE_COOKIE,
        r.value.nonce,
        WALLET_NONCE_SECONDS,
        NONCE_PATH,
      );
      return c.json({ success: true, message: r.value.message });
    });

    app.post("/wallet/link", async (c) => {
      const body = single(await formBody(c));
      const nonce = getCookie(c, WALLET_NONCE_COOKIE);
      clearCookie(c, deps.config, WALLET_NONCE_COOKIE, NONCE_PATH);
      const r = await attempt(() => wallet.linkWallet(deps, merchantOf(c), nonce, body));
      if (!r.ok) {
        return render(c, { notice: { kind: "error", text: r.error.message } }, r.error.status);
      }
      return c.redirect("/dashboard/wallet?done=linked", 303);
    });
  },
};

function render(
  c: DashContext,
  extra: Partial<WalletViewProps> = {},
  status?: ContentfulStatusCode,
) {
  return page(c, {
    title: "Wallet",
    section: "wallet",
    status,
    body: (
      <WalletView
        csrf={c.get("csrfToken")}
        wallet={wallet.walletView(merchantOf(c))}
        kinds={EXTERNAL_WALLET_KINDS}
        {...extra}
      />
    ),
  });
}

/** The payout address's USDC on every configured chain; a chain that fails says so. */
async function balances(deps: Deps, c: DashContext): Promise<BalanceItem[]> {
  const address = merchantOf(c).walletAddress as `0x${string}` | null;
  if (!address) return [];
  return await Promise.all(
    deps.chain.profiles().map(async (p) => {
      const item = { chain: PROFILE_DEFS[p].label, chainId: deps.chain.chainId(p) };
      try {
        return { ...item, amount: formatUsdc(await deps.chain.usdcBalance(p, address)) };
      } catch (e) {
        deps.log.warn("balance unavailable", { profile: p, error: e });
        return { ...item, error: M.chainUnavailable };
      }
    }),
  );
}
