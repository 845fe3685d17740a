/**
 * The hosted checkout page and its status partial. Data comes in as a view model; the page
 * script (/assets/checkout.js) talks to the payer's browser wallet.
 */
import type { PaymentStatus } from "../../src/modules/payments/payments.rules.ts";
import type { Child } from "hono/jsx";
import { raw } from "hono/html";
import { Layout } from "../layout.tsx";
import { assetUrl } from "../../src/http/assets.ts";
import { CrossChainPanel } from "./cross-chain.tsx";
import { PROFILE_DEFS, SOURCE_CHAINS } from "../../src/chain/profiles.ts";

export interface CheckoutView {
  reference: string;
  merchantName: string;
  amount: string;
  currency: string;
  description: string | null;
  status: PaymentStatus;
  payable: boolean;
  expiresAt: string;
  secondsLeft: number;
  payer: string | null;
  chainTxHash: string | null;
  explorerUrl: string | null;
  settledAfterExpiry: boolean;
  failureReason: string | null;
  url: string;
  /** Development on a local chain: the page offers "Get test USDC". */
  devFaucet: boolean;
  /** A payable payment on the bridge's destination chain: "Pay from another chain". */
  crossChain: { reference: string; amount: string; payTo: string; devFaucet: boolean } | null;
  chain: {
    profile: string;
    name: string;
    chainId: number;
    chainIdHex: string;
    rpcUrl: string;
    explorerUrl: string;
  };
}

function Shell(props: { title: string; children?: Child }) {
  return (
    <Layout
      title={props.title}
      head={
        <>
          {/* No inline code or styles from htmx: the page's CSP forbids both (src/app.ts). */}
          <meta
            name="htmx-config"
            content={JSON.stringify({ includeIndicatorStyles: false, allowEval: false })}
          />
          <link rel="stylesheet" href={assetUrl("checkout.css")} />
          <script src={assetUrl("htmx.min.js")} defer></script>
          <script src={assetUrl("live.js")} defer></script>
        </>
      }
    >
      {props.children}
    </Layout>
  );
}

export function CheckoutPage(props: { view: CheckoutView; qrSvg: string }) {
  const v = props.view;
  const config = JSON.stringify({
    reference: v.reference,
    amount: v.amount,
    currency: v.currency,
    devFaucet: v.devFaucet,
    chain: v.chain,
  }).replaceAll("<", "\\u003c");
  return (
    <Shell title={`Pay ${v.amount} ${v.currency} to ${v.merchantName}`}>
      <main class="checkout">
        <header>
          <p class="merchant">{v.merchantName}</p>
          <h1 class="amount">
            {v.amount} <span class="currency">{v.currency}</span>
          </h1>
          {v.description && <p class="description">{v.description}</p>}
          <p class="network">on {v.chain.name}</p>
        </header>
        <StatusBlock view={v} />
        <section id="pay-panel" class="pay-panel" hidden={!v.payable}>
          {/* Hidden until checkout.js runs: without it the buttons would do nothing. */}
          <button id="pay-button" type="button" class="primary" hidden>Pay with wallet</button>
          <p id="progress" class="progress" role="status" aria-live="polite"></p>
          <button id="fallback-button" type="button" class="secondary" hidden>
            Pay with a wallet transaction instead
          </button>
          {v.devFaucet && (
            <p class="dev-faucet" hidden>
              <button id="faucet-button" type="button" class="secondary">Get test USDC</button>
              <span class="note">Development only: funds the connected wallet on this chain.</span>
            </p>
          )}
        </section>
        {v.crossChain && (
          <CrossChainPanel
            view={{
              ...v.crossChain,
              sources: SOURCE_CHAINS.map((id) => ({ id, label: PROFILE_DEFS[id].label })),
            }}
          />
        )}
        {v.payable && (
          <section id="qr" class="qr" aria-label="Pay from a phone">
            <p>Or open this page in a phone wallet:</p>
            <div class="qr-code" role="img" aria-label={`QR code of ${v.url}`}>
              {raw(props.qrSvg)}
            </div>
            <p class="link">
              <a href={v.url}>{v.url}</a>
            </p>
          </section>
        )}
        <noscript>
          <p class="notice">Paying from this page needs JavaScript and a browser wallet.</p>
        </noscript>
      </main>
      <script id="checkout-data" type="application/json">{raw(config)}</script>
      <script src={assetUrl("checkout.js")} defer></script>
    </Shell>
  );
}

/** Seconds between polls when the event stream is unavailable (views/assets/live.js). */
export const STATUS_POLL_SECONDS = 2;

/**
 * The part that updates itself while the payment is pending: refreshed when its event stream
 * (`/checkout/{reference}/events`) announces another status, polled only when the stream fails.
 */
export function StatusBlock(props: { view: CheckoutView }) {
  const v = props.view;
  const live = v.status === "PENDING";
  return (
    <section
      id="status"
      class={`status status-${v.status.toLowerCase()}`}
      data-status={v.status}
      data-payable={String(v.payable)}
      data-payer={v.payer ?? undefined}
      aria-live="polite"
      {...(live
        ? {
          "hx-get": `/checkout/${v.reference}/status`,
          "hx-trigger": "live:refresh",
          "hx-swap": "outerHTML",
          "data-live-stream": `/checkout/${v.reference}/events`,
          "data-live-event": "status",
          "data-live-poll": String(STATUS_POLL_SECONDS),
        }
        : {})}
    >
      {v.status === "PENDING" && v.payable && (
        <p>
          Waiting for payment. Time left:{" "}
          <time id="time-left" data-seconds={String(v.secondsLeft)} datetime={v.expiresAt}>
            {formatLeft(v.secondsLeft)}
          </time>
        </p>
      )}
      {v.status === "PENDING" && v.payable && v.failureReason && (
        <p class="notice" role="status">
          {v.failureReason} The payment is still open: you can pay again.
        </p>
      )}
      {v.status === "PENDING" && !v.payable && <p>This payment is expiring.</p>}
      {v.status === "SUCCESS" && (
        <div>
          <h2>Paid</h2>
          <p>
            Thank you. {v.amount} {v.currency} reached {v.merchantName}
            {v.settledAfterExpiry
              ? " (after the payment had expired; the merchant has been notified)"
              : ""}.
          </p>
          {v.payer && (
            <p class="payer">
              From <code>{v.payer}</code>
            </p>
          )}
          {v.explorerUrl && (
            <p>
              <a href={v.explorerUrl} target="_blank" rel="noopener">View the transaction</a>
            </p>
          )}
        </div>
      )}
      {v.status === "EXPIRED" && (
        <div>
          <h2>Expired</h2>
          <p>This payment can no longer be paid. Ask {v.merchantName} for a new link.</p>
        </div>
      )}
      {v.status === "FAILED" && (
        <div>
          <h2>Payment failed</h2>
          <p>
            {v.failureReason ?? "The payment did not go through."} Ask {v.merchantName}{" "}
            for a new link.
          </p>
        </div>
      )}
    </section>
  );
}

export function NotFoundPage(props: { reference: string }) {
  return (
    <Shell title="Payment not found">
      <main class="checkout">
        <h1>Payment not found</h1>
        <p>
          There is no payment <code>{props.reference}</code>. Check the link you were given.
        </p>
      </main>
    </Shell>
  );
}

export function formatLeft(seconds: number): string {
  if (seconds <= 0) return "expired";
  const h = Math.floor(seconds / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const s = seconds % 60;
  return h > 0 ? `${h}h ${String(m).padStart(2, "0")}m` : `${m}:${String(s).padStart(2, "0")}`;
}
