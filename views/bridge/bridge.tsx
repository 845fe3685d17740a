/**
 * The bridge form (CCTP): on the consumer page (/bridge) and inside hosted checkout ("Pay from
 * another chain"). The page script (/assets/bridge.js) signs in a service wallet, shows its
 * balance on the chosen source chain, starts the transfer through POST /api/cctp/transfer and
 * follows its status live: burn, attestation (with its wait), mint.
 */
import { raw } from "hono/html";
import { Layout } from "../layout.tsx";
import { assetUrl } from "../../src/http/assets.ts";

export interface BridgeFormView {
  sources: { id: string; label: string }[];
  /** Development: a "Get test USDC" button for the source chain (local nodes only). */
  devFaucet: boolean;
  /** Cross-chain checkout: the payment this pays (amount and payee fixed). */
  payment?: { reference: string; amount: string; payTo: string };
}

export function BridgeForm(props: { view: BridgeFormView }) {
  const v = props.view;
  const config = JSON.stringify(v).replaceAll("<", "\\u003c");
  return (
    <div id="bridge" class="bridge" data-mode={v.payment ? "checkout" : "consumer"}>
      <p class="bridge-wallet">
        Your service wallet: <code id="bridge-wallet">not signed in</code>
      </p>
      <button id="bridge-session" type="button" class="secondary" hidden>
        Start a wallet session
      </button>
      <label>
        From chain
        <select id="bridge-from" name="fromChain">
          {v.sources.map((s) => <option key={s.id} value={s.id}>{s.label}</option>)}
        </select>
      </label>
      <p class="bridge-balance">
        Balance: <span id="bridge-balance">—</span>
      </p>
      {!v.payment && (
        <>
          <label>
            Amount (USDC)
            <input id="bridge-amount" name="amount" inputmode="decimal" placeholder="10.00" />
          </label>
          <label>
            Recipient on Settle Testnet
            <input id="bridge-recipient" name="recipient" placeholder="0x…" spellcheck={false} />
          </label>
        </>
      )}
      {v.devFaucet && (
        <p class="dev-faucet">
          <button id="bridge-faucet" type="button" class="secondary">
            Get test USDC on this chain
          </button>
          <span class="note">Development only: local chains.</span>
        </p>
      )}
      <button id="bridge-submit" type="button" class="primary" disabled>
        {v.payment ? `Pay ${v.payment.amount} USDC from this chain` : "Bridge to Settle Testnet"}
      </button>
      <p id="bridge-message" class="progress" role="status" aria-live="polite"></p>
      <ol id="bridge-steps" class="bridge-steps" hidden>
        <li data-step="burn">Burn on the source chain</li>
        <li data-step="attest">Attestation</li>
        <li data-step="mint">Mint on Settle Testnet</li>
      </ol>
      <p id="bridge-state" class="bridge-state" data-status="" aria-live="polite"></p>
      <script id="bridge-data" type="application/json">{raw(config)}</script>
      <script src={assetUrl("bridge.js")} defer></script>
    </div>
  );
}

export function BridgePage(props: { view: BridgeFormView }) {
  return (
    <Layout
      title="Bridge USDC to Settle Testnet"
      head={<link rel="stylesheet" href={assetUrl("checkout.css")} />}
    >
      <main class="checkout">
        <h1>Bridge USDC</h1>
        <p class="network">
          Burn USDC on a source chain and receive it on Settle Testnet (CCTP v2).
        </p>
        <BridgeForm view={props.view} />
      </main>
    </Layout>
  );
}
