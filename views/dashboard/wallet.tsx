/**
 * The payout wallet: what it is, its USDC balance per chain (loaded after the page), switching
 * to a new managed wallet, and linking an external wallet by signing a SIWE message in the
 * browser wallet (the page script drives EIP-1193; see views/assets/dashboard.js).
 */
import {
  CopyField,
  CsrfInput,
  EmptyState,
  Notice,
  type NoticeData,
  Select,
  Spinner,
  Submit,
} from "./shell.tsx";

export interface WalletInfo {
  walletProvider: string;
  walletAddress: string | null;
  managedWalletId: string | null;
}

export interface WalletViewProps {
  csrf: string;
  wallet: WalletInfo;
  kinds: readonly string[];
  notice?: NoticeData;
}

export const PROVIDER_LABEL: Record<string, string> = {
  MANAGED: "Managed by this service",
  EXTENSION_WALLET: "Browser extension wallet",
  LINK_WALLET: "Linked wallet",
  HOSTED_WALLET: "Hosted wallet",
};

/**
 * The payout wallet's part of the Wallets page (views/dashboard/wallets.tsx): a section under the
 * page's heading, its panels one level below.
 */
export function WalletView(props: WalletViewProps) {
  const w = props.wallet;
  const managed = w.walletProvider === "MANAGED" && !!w.managedWalletId;
  return (
    <section aria-labelledby="wallet-title" class="payout-wallet">
      <h2 id="wallet-title">Payout wallet</h2>
      <Notice notice={props.notice} />

      <div class="panel">
        <h3>Current wallet</h3>
        {w.walletAddress
          ? (
            <dl class="facts">
              <dt>Provider</dt>
              <dd data-testid="wallet-provider">
                {PROVIDER_LABEL[w.walletProvider] ?? w.walletProvider}{" "}
                <code class="muted">{w.walletProvider}</code>
              </dd>
              <dt>Address</dt>
              <dd>
                <CopyField
                  id="wallet-address"
                  label="Payout address"
                  value={w.walletAddress}
                  hideLabel
                />
              </dd>
              {w.managedWalletId && (
                <>
                  <dt>Managed wallet ID</dt>
                  <dd>
                    <code>{w.managedWalletId}</code>
                  </dd>
                </>
              )}
            </dl>
          )
          : (
            <EmptyState title="No payout wallet yet.">
              <p>
                Create a managed wallet or link your own below; payments need one to settle.
              </p>
            </EmptyState>
          )}
      </div>

      {w.walletAddress && (
        <div class="panel">
          <h3 id="balances-title">USDC balance</h3>
          <div
            id="balances"
            hx-get="/dashboard/wallet/balances"
            hx-trigger="load"
            hx-swap="outerHTML"
            aria-labelledby="balances-title"
            aria-busy="true"
            class="htmx-request"
          >
            <p class="muted">
              <Spinner label="Loading balances…" /> Loading balances…
            </p>
          </div>
        </div>
      )}

      <div class="panel">
        <h3>Use a new managed wallet</h3>
        {managed
          ? <p class="muted">Your payouts already go to a wallet this service manages for you.</p>
          : (
            <form
              method="post"
              action="/dashboard/wallet/managed"
              hx-post="/dashboard/wallet/managed"
              hx-target="#main"
              hx-disabled-elt="find button"
              hx-confirm="Create a new managed wallet and send future payouts to it?"
            >
              <CsrfInput token={props.csrf} />
              <p>
                The service creates a wallet, keeps its key encrypted, and pays out to it.
              </p>
              <Submit busy="Creating the wallet…">Switch to a new managed wallet</Submit>
            </form>
          )}
      </div>

      <div
        class="panel"
        data-wallet
        data-challenge-url="/dashboard/wallet/challenge"
        data-link-url="/dashboard/wallet/link"
      >
        <h3>Link an external wallet</h3>
        <p>
          Connect the wallet in your browser and sign a Sign-In with Ethereum message to prove you
          own it. No transaction is sent and nothing is charged.
        </p>
        <Select
          name="walletKind"
          id="f-walletKind"
          label="Kind of wallet"
          value="EXTENSION_WALLET"
          options={props.kinds.map((k) => ({ value: k, label: PROVIDER_LABEL[k] ?? k }))}
        />
        <p>
          <button type="button" data-wallet-link>
            Connect and sign
            <Spinner label="Waiting for your wallet…" />
          </button>
        </p>
        <div class="notice" data-wallet-status role="status" aria-live="polite" hidden></div>
      </div>
    </section>
  );
}

export interface BalanceItem {
  chain: string;
  chainId: number;
  amount?: string;
  error?: string;
}

export function Balances(props: { balances: BalanceItem[] }) {
  return (
    <div id="balances">
      {props.balances.length === 0
        ? <p class="muted">This mode's chain is not configured.</p>
        : (
          <ul class="balances">
            {props.balances.map((b) => (
              <li>
                <span class="chain">
                  {b.chain} <span class="muted">(chain {b.chainId})</span>
                </span>
                {b.error
                  ? <span class="field-error">{b.error}</span>
                  : (
                    <strong class="amount" data-chain-id={String(b.chainId)}>
                      {b.amount} USDC
                    </strong>
                  )}
              </li>
            ))}
          </ul>
        )}
    </div>
  );
}
