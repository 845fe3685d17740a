/**
 * The payout wallet's part of the Wallets section (src/modules/wallets/wallets.section.tsx, which
 * registers these routes and renders the page): details, USDC balance on the session's mode's
 * chain, a new managed wallet, and linking an external wallet with a SIWE signature made in the
 * browser wallet. The challenge's nonce travels in the same `wallet_connect_nonce` cookie as the
 * API's, scoped to these routes. Successful changes answer 303 to the Wallets page (which htmx
 * follows), so the page always shows the merchant as stored. The old /dashboard/wallet page
 * redirects there.
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
  dashProfileOf,
  formBody,
  fragment,
  isPartial,
  merchantOf,
  single,
} from "../dashboard/dashboard.http.tsx";
import type { DashboardApp } from "../dashboard/section.ts";

const NONCE_PATH = "/dashboard/wallet";
const WALLETS_PATH = "/dashboard/wallets";

const DONE: Record<string, string> = {
  managed: M.walletManagedCreated,
  linked: M.dashWalletLinked,
};

/** Renders the Wallets page with extra props for the payout part (a notice). */
export type WalletsPage = (
  c: DashContext,
  notice?: WalletViewProps["notice"],
  status?: ContentfulStatusCode,
) => Response | Promise<Response>;

export function payoutWalletRoutes(app: DashboardApp, deps: Deps, render: WalletsPage) {
  app.get("/wallet", (c) => {
    const done = c.req.query("done");
    return c.redirect(
      done ? `${WALLETS_PATH}?done=${encodeURIComponent(done)}` : WALLETS_PATH,
      302,
    );
  });

  app.get("/wallet/balances", async (c) => {
    if (!isPartial(c)) return c.redirect(WALLETS_PATH, 302);
    return fragment(c, <Balances balances={await balances(deps, c)} />);
  });

  app.post("/wallet/managed", async (c) => {
    const r = await attempt(() => wallet.switchToManaged(deps, merchantOf(c), "MANAGED"));
    if (!r.ok) return render(c, { kind: "error", text: r.error.message }, r.error.status);
    return c.redirect(`${WALLETS_PATH}?done=managed`, 303);
  });

  // JSON for the page script: the SIWE message to sign, or the catalog's error text.
  app.post("/wallet/challenge", async (c) => {
    const { address } = single(await formBody(c));
    const r = await attempt(() => wallet.linkChallenge(deps, merchantOf(c), address || undefined));
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
    if (!r.ok) return render(c, { kind: "error", text: r.error.message }, r.error.status);
    return c.redirect(`${WALLETS_PATH}?done=linked`, 303);
  });
}

/** The text a `?done=` after a payout wallet change shows. */
export function payoutDone(done: string | undefined): WalletViewProps["notice"] {
  const text = DONE[done ?? ""];
  return text ? { kind: "ok", text } : undefined;
}

/** The payout wallet's part of the Wallets page. */
export function PayoutWallet(props: { c: DashContext; notice?: WalletViewProps["notice"] }) {
  return (
    <WalletView
      csrf={props.c.get("csrfToken")}
      wallet={wallet.walletView(merchantOf(props.c))}
      kinds={EXTERNAL_WALLET_KINDS}
      notice={props.notice}
    />
  );
}

/**
 * The payout address's USDC on the session's mode's chain (testnet in test mode, production in
 * live mode); a chain that fails says so.
 */
async function balances(deps: Deps, c: DashContext): Promise<BalanceItem[]> {
  const address = merchantOf(c).walletAddress as `0x${string}` | null;
  if (!address) return [];
  const mode = dashProfileOf(c);
  return await Promise.all(
    deps.chain.profiles().filter((p) => p === mode).map(async (p) => {
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
