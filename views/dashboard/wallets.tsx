/**
 * The merchant's managed wallets: each with its USDC per chain, a withdraw form that asks for
 * confirmation before anything is sent, and (local chains in development) a faucet button; a
 * form to create another wallet.
 */
import type { Child } from "hono/jsx";
import {
  Badge,
  CsrfInput,
  EmptyState,
  Field,
  Notice,
  type NoticeData,
  Select,
  Submit,
} from "./shell.tsx";

export interface WalletItem {
  id: string;
  address: string;
  label: string | null;
  payout: boolean;
  balances: Record<string, string | null>;
}

export interface WithdrawReview {
  walletId: string;
  amount: string;
  destinationAddress: string;
  chain: string;
  /** The wallet the USDC leaves, its label, and what it holds (less withdrawals in flight). */
  from: string;
  fromLabel: string | null;
  balance: string;
  /** Sent with the confirmation, so a double submit sends once. */
  requestKey: string;
}

export interface WalletsViewProps {
  csrf: string;
  wallets: WalletItem[];
  /** Chain profiles with their labels, in display order. */
  chains: { name: string; label: string }[];
  /** Profiles whose faucet button is shown (local chains in development). */
  faucet: string[];
  notice?: NoticeData;
  /** A withdrawal waiting for the merchant's confirmation. */
  review?: WithdrawReview;
  /** Field errors of a withdraw form, for the wallet it belongs to. */
  form?: { walletId: string; values: Record<string, string>; errors: Record<string, string> };
  /** Error text of the create form's label. */
  labelError?: string;
  /** The payout wallet's part (views/dashboard/wallet.tsx), shown first. */
  payout?: Child;
}

export function WalletsView(props: WalletsViewProps) {
  return (
    <section aria-labelledby="wallets-title">
      <h1 id="wallets-title">Wallets</h1>
      <Notice notice={props.notice} />
      {props.review && <ReviewPanel {...props} review={props.review} />}
      {props.payout}
      <h2 id="managed-title">Managed wallets</h2>
      {props.wallets.length === 0
        ? (
          <EmptyState title="No managed wallets yet.">
            <p>Create one below; the service keeps its key encrypted.</p>
          </EmptyState>
        )
        : props.wallets.map((w) => <WalletPanel key={w.id} {...props} wallet={w} />)}
      <div class="panel">
        <h3>New wallet</h3>
        <form
          method="post"
          action="/dashboard/wallets"
          hx-post="/dashboard/wallets"
          hx-target="#main"
        >
          <CsrfInput token={props.csrf} />
          <Field name="label" label="Label (optional)" maxLength={100} error={props.labelError} />
          <Submit busy="Creating…">Create wallet</Submit>
        </form>
      </div>
    </section>
  );
}

function WalletPanel(props: WalletsViewProps & { wallet: WalletItem }) {
  const w = props.wallet;
  const form = props.form?.walletId === w.id ? props.form : undefined;
  const fid = (name: string) => `f-${name}-${w.id}`;
  return (
    <div class="panel" data-wallet-id={w.id}>
      <h3>
        {w.label ?? "Wallet"} {w.payout && <Badge tone="ok">Payout</Badge>}
      </h3>
      <dl class="facts">
        <dt>Address</dt>
        <dd>
          <code data-testid="wallet-address">{w.address}</code>
        </dd>
        <dt>ID</dt>
        <dd>
          <code>{w.id}</code>
        </dd>
      </dl>
      <ul class="balances">
        {props.chains.map((c) => (
          <li>
            <span class="chain">{c.label}</span>
            <strong class="amount" data-chain={c.name}>
              {w.balances[c.name] ?? "unavailable"} USDC
            </strong>
            {props.faucet.includes(c.name) && (
              <form
                method="post"
                action={`/dashboard/wallets/${w.id}/faucet`}
                hx-post={`/dashboard/wallets/${w.id}/faucet`}
                hx-target="#main"
                class="inline"
              >
                <CsrfInput token={props.csrf} />
                <input type="hidden" name="chain" value={c.name} />
                <Submit busy="Minting…">Faucet: 100 test USDC</Submit>
              </form>
            )}
          </li>
        ))}
      </ul>
      <form
        method="post"
        action={`/dashboard/wallets/${w.id}/withdraw/review`}
        hx-post={`/dashboard/wallets/${w.id}/withdraw/review`}
        hx-target="#main"
      >
        <CsrfInput token={props.csrf} />
        <h4>Withdraw</h4>
        <Field
          name="amount"
          id={fid("amount")}
          label="Amount (USDC)"
          inputMode="decimal"
          value={form?.values.amount}
          error={form?.errors.amount}
        />
        <Field
          name="destinationAddress"
          id={fid("destinationAddress")}
          label="To address"
          spellcheck={false}
          value={form?.values.destinationAddress}
          error={form?.errors.destinationAddress}
        />
        <Select
          name="chain"
          id={fid("chain")}
          label="Chain"
          value={form?.values.chain}
          options={props.chains.map((c) => ({ value: c.name, label: c.label }))}
          error={form?.errors.chain}
        />
        <Submit busy="Checking…">Review withdrawal</Submit>
      </form>
    </div>
  );
}

function ReviewPanel(props: WalletsViewProps & { review: WithdrawReview }) {
  const r = props.review;
  const chain = props.chains.find((c) => c.name === r.chain)?.label ?? r.chain;
  return (
    <div class="panel" data-withdraw-review>
      <h2>Confirm the withdrawal</h2>
      <p>
        Send <strong>{r.amount} USDC</strong> on {chain} from {r.fromLabel ? `${r.fromLabel} ` : ""}
        <code>{r.from}</code> (holding {r.balance} USDC) to <code>{r.destinationAddress}</code>?
        {" "}
        Withdrawals cannot be reversed.
      </p>
      <form
        method="post"
        action={`/dashboard/wallets/${r.walletId}/withdraw`}
        hx-post={`/dashboard/wallets/${r.walletId}/withdraw`}
        hx-target="#main"
        hx-disabled-elt="find button"
      >
        <CsrfInput token={props.csrf} />
        <input type="hidden" name="amount" value={r.amount} />
        <input type="hidden" name="destinationAddress" value={r.destinationAddress} />
        <input type="hidden" name="chain" value={r.chain} />
        <input type="hidden" name="requestKey" value={r.requestKey} />
        <Submit busy="Sending…">Confirm and send</Submit> <a href="/dashboard/wallets">Cancel</a>
      </form>
    </div>
  );
}
