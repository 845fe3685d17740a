/**
 * /gateway: an outside payer's own page for its x402 gateway balance. Its browser wallet signs,
 * the service's relayer sends (POST /api/x402/payer/deposit, /withdraw/start, /withdraw), so a
 * wallet holding USDC and no gas funds the balance its agent pays from, and takes it back out.
 * The page's script (views/assets/gateway.js) reads the balance from GET /api/x402/payer/balance.
 */
import { raw } from "hono/html";
import { Layout } from "../layout.tsx";
import { assetUrl } from "../../src/http/assets.ts";

export interface GatewayPageView {
  network: string;
  chainId: number;
  chainName: string;
  vault: string;
  usdc: string;
  /** USDC's EIP-712 domain name and version (what a ReceiveWithAuthorization is signed under). */
  usdcName: string;
  usdcVersion: string;
  /** The vault's withdrawal delay in seconds (0: available is withdrawable at once). */
  delaySeconds: number;
}

export function GatewayPage(props: { view: GatewayPageView }) {
  const v = props.view;
  const config = JSON.stringify(v).replaceAll("<", "\\u003c");
  const hours = Math.round((v.delaySeconds / 3600) * 10) / 10;
  return (
    <Layout
      title="Your x402 gateway balance"
      head={<link rel="stylesheet" href={assetUrl("checkout.css")} />}
    >
      <main class="checkout gateway">
        <header>
          <h1>Your x402 gateway balance</h1>
          <p class="description">
            Agents pay per call from a USDC balance in the gateway vault. Fund it and take it back
            out here by signing in your wallet: the service sends the transactions and pays the gas.
          </p>
          <p class="network">on {v.chainName}</p>
        </header>
        <section class="pay-panel">
          <button id="connect-button" type="button" class="primary">Connect wallet</button>
        </section>
        <section id="balance-panel" aria-labelledby="balance-title" hidden>
          <h2 id="balance-title">Balance</h2>
          <dl class="quote" data-testid="gateway-balances">
            <dt>Address</dt>
            <dd>
              <code id="gw-address"></code>
            </dd>
            <dt>Wallet (USDC you hold)</dt>
            <dd data-balance="wallet"></dd>
            <dt>Gateway available</dt>
            <dd data-balance="available"></dd>
            <dt>Promised to paid calls not yet settled</dt>
            <dd data-balance="outgoing"></dd>
            <dt>Withdrawing</dt>
            <dd data-balance="withdrawing"></dd>
            <dt>Withdrawable now</dt>
            <dd data-balance="withdrawable"></dd>
            <dt>Withdrawing matures</dt>
            <dd data-balance="matures"></dd>
          </dl>
        </section>
        <section id="actions-panel" class="bridge" aria-label="Deposit and withdraw" hidden>
          <h2>Deposit</h2>
          <label for="deposit-amount">Amount to deposit (USDC, at least 1)</label>
          <input id="deposit-amount" inputmode="decimal" autocomplete="off" maxlength={40} />
          <button id="deposit-button" type="button" class="primary">Sign and deposit</button>
          <h2>Withdraw</h2>
          {v.delaySeconds > 0 && (
            <p class="note">
              This vault pays a withdrawal {hours}{" "}
              h after it starts: start it first, then withdraw once it matures.
            </p>
          )}
          <label for="withdraw-amount">Amount to withdraw (USDC)</label>
          <input id="withdraw-amount" inputmode="decimal" autocomplete="off" maxlength={40} />
          {v.delaySeconds > 0 && (
            <button id="start-button" type="button" class="secondary">
              Sign and start withdrawal
            </button>
          )}
          <button id="withdraw-button" type="button" class="primary">Sign and withdraw</button>
        </section>
        <p id="progress" class="progress" role="status" aria-live="polite"></p>
        <noscript>
          <p class="notice">This page needs JavaScript and a browser wallet.</p>
        </noscript>
      </main>
      <script id="gateway-data" type="application/json">{raw(config)}</script>
      <script src={assetUrl("gateway.js")} defer></script>
    </Layout>
  );
}
