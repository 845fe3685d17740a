/**
 * "Pay from another chain" on the hosted checkout page. First the shopper's own browser wallet:
 * pick the chain the USDC is on, review the fee and the burn, then one signature (relayed by the
 * service, no gas) or approve + burn from the wallet; the page follows burn → attestation → mint
 * → Paid (/assets/checkout-bridge.js). Below it, the service-wallet form for consumers who use
 * one (views/bridge/bridge.tsx).
 */
import { raw } from "hono/html";
import { assetUrl } from "../../src/http/assets.ts";
import { BridgeForm } from "../bridge/bridge.tsx";

export interface CrossChainView {
  reference: string;
  amount: string;
  payTo: string;
  devFaucet: boolean;
  sources: { id: string; label: string }[];
}

export function CrossChainPanel(props: { view: CrossChainView }) {
  const v = props.view;
  const config = JSON.stringify({
    reference: v.reference,
    amount: v.amount,
    devFaucet: v.devFaucet,
  }).replaceAll("<", "\\u003c");
  return (
    <section id="cross-chain" class="cross-chain">
      <details>
        <summary>Pay from another chain</summary>
        <div id="xchain" class="bridge">
          <p class="note">
            Pay with USDC from your own wallet on another chain (Circle CCTP). The bridge fee is
            added to what you burn, so the merchant receives {v.amount} USDC in full.
          </p>
          <label>
            Your USDC is on
            <select id="xchain-from" name="sourceChain">
              {v.sources.map((s) => <option key={s.id} value={s.id}>{s.label}</option>)}
            </select>
          </label>
          <label class="inline">
            <input id="xchain-fast" type="checkbox" name="fast" /> Fast transfer (a small fee)
          </label>
          <button id="xchain-review" type="button" class="secondary">
            Connect wallet and review
          </button>
          <dl id="xchain-quote" class="quote" hidden>
            <dt>The merchant receives</dt>
            <dd id="xchain-amount"></dd>
            <dt>Bridge fee</dt>
            <dd id="xchain-fee"></dd>
            <dt>
              You burn on <span id="xchain-chain"></span>
            </dt>
            <dd id="xchain-burn"></dd>
            <dt>Your balance there</dt>
            <dd id="xchain-balance"></dd>
            <dt>How</dt>
            <dd id="xchain-mode"></dd>
          </dl>
          <button id="xchain-pay" type="button" class="primary" hidden>Pay</button>
          <button id="xchain-fallback" type="button" class="secondary" hidden>
            Pay with wallet transactions instead
          </button>
          <p id="xchain-message" class="progress" role="status" aria-live="polite"></p>
          <ol id="xchain-steps" class="bridge-steps" hidden>
            <li data-step="burn">Burn on the source chain</li>
            <li data-step="attest">Attestation</li>
            <li data-step="mint">Mint on Settle Testnet</li>
          </ol>
          <p id="xchain-state" class="bridge-state" data-status="" aria-live="polite"></p>
          {v.devFaucet && (
            <p class="dev-faucet">
              <button id="xchain-faucet" type="button" class="secondary">
                Get test USDC on this chain
              </button>
              <span class="note">
                Development only: funds the connected wallet on a local chain.
              </span>
            </p>
          )}
          <script id="xchain-data" type="application/json">{raw(config)}</script>
          <script src={assetUrl("checkout-bridge.js")} defer></script>
        </div>
        <h3 class="alt">Or pay from a service wallet</h3>
        <BridgeForm
          view={{
            sources: v.sources,
            devFaucet: v.devFaucet,
            payment: { reference: v.reference, amount: v.amount, payTo: v.payTo },
          }}
        />
      </details>
    </section>
  );
}
