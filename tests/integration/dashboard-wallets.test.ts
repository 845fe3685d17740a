/**
 * The dashboard's Wallets section over HTTP: list with balances, create, the faucet beside each
 * wallet on local chains in test mode only, withdraw only after a confirmation step (once per
 * confirmation) on the mode's chain only, CSRF, and another merchant's wallet out of reach.
 */
import assert from "node:assert/strict";
import { startTestService } from "../helpers/service.ts";
import { dashboardClient } from "../helpers/dashboard-client.ts";
import { api, createMerchant } from "../helpers/accounts.ts";
import { M } from "../../src/http/messages.ts";
import { checksum } from "../../src/chain/address.ts";

const DEST = "0x5B38Da6a701c568545dCfcB03FcB875f56beddC4";

Deno.test("dashboard: Wallets section", async (t) => {
  const svc = await startTestService({ env: { RATE_LIMITS: "off" } });
  const d = dashboardClient(svc);
  const call = api(svc);
  const chain = svc.deps.chain;
  try {
    const m = await createMerchant(svc);
    const other = await createMerchant(svc);
    const payout = await call("GET", "/api/merchant/wallet", { cookie: m.cookie });
    const payoutId = (payout.json.wallet as { managedWalletId: string }).managedWalletId;
    const b = await d.open(m, "/dashboard/wallets");

    await t.step("live mode: production's balance, no faucet", async () => {
      const r = await d.get(b, "/dashboard/wallets");
      assert.equal(r.status, 200);
      assert.doesNotMatch(r.text, /Faucet/);
      assert.match(r.text, /data-chain="production"/);
      assert.doesNotMatch(r.text, /data-chain="testnet"/);
      const f = await d.post(b, `/dashboard/wallets/${payoutId}/faucet`, { chain: "production" });
      assert.equal(f.status, 404);
      assert.ok(f.text.includes(M.devFaucetUnavailable));
      const switched = await d.post(b, "/dashboard/mode", {
        mode: "test",
        back: "/dashboard/wallets",
      });
      assert.equal(switched.status, 303);
      assert.equal(switched.headers.get("location"), "/dashboard/wallets");
    });

    await t.step(
      "test mode lists the payout wallet with balances and a faucet button on its local chain",
      async () => {
        const r = await d.get(b, "/dashboard/wallets");
        assert.equal(r.status, 200);
        assert.match(r.headers.get("content-type")!, /text\/html/);
        assert.ok(r.text.includes(m.walletAddress!), "the payout address is shown");
        assert.match(r.text, /Payout/);
        assert.equal(
          (r.text.match(/Faucet: 100 test USDC/g) ?? []).length,
          1,
          "testnet only",
        );
        assert.match(r.text, /id="test-banner"/);
        assert.match(r.text, /href="\/dashboard\/wallets"[^>]*>Wallets</);
      },
    );

    await t.step("creates a wallet; a form without the CSRF token is refused", async () => {
      const refused = await d.post(b, "/dashboard/wallets", { label: "Ops" }, { token: null });
      assert.equal(refused.status, 403);
      const r = await d.post(b, "/dashboard/wallets", { label: "Ops" });
      assert.equal(r.status, 200, r.text);
      assert.ok(r.text.includes(M.dashWalletCreated));
      const list = await call("GET", "/api/wallets", { cookie: m.cookie });
      assert.deepEqual((list.json.wallets as { label: string | null }[]).map((w) => w.label), [
        null,
        "Ops",
      ]);
    });

    await t.step("the faucet mints 100 test USDC into the wallet", async () => {
      const r = await d.post(b, `/dashboard/wallets/${payoutId}/faucet`, { chain: "testnet" });
      assert.equal(r.status, 200, r.text);
      assert.ok(r.text.includes(M.dashFaucetMinted));
      const addr = m.walletAddress!.toLowerCase() as `0x${string}`;
      assert.equal(await chain.usdcBalance("testnet", addr), 100_000_000n);
      assert.match(r.text, /data-chain="testnet">100\.000000 USDC/);
    });

    await t.step("withdraw: review first (nothing sent), then confirm sends once", async () => {
      const dest = DEST.toLowerCase() as `0x${string}`;
      const bad = await d.post(b, `/dashboard/wallets/${payoutId}/withdraw/review`, {
        amount: "1e3",
        destinationAddress: DEST,
        chain: "testnet",
      });
      assert.equal(bad.status, 400);
      assert.ok(bad.text.includes(M.withdrawAmount));
      const live = await d.post(b, `/dashboard/wallets/${payoutId}/withdraw/review`, {
        amount: "30",
        destinationAddress: DEST,
        chain: "production",
      });
      assert.equal(live.status, 400, "test mode does not act on the production chain");
      assert.ok(live.text.includes(M.chainNotConfigured));
      // Spaces around what was typed or pasted are not part of it (the link form trims too).
      const review = await d.post(b, `/dashboard/wallets/${payoutId}/withdraw/review`, {
        amount: " 30 ",
        destinationAddress: ` ${DEST} `,
        chain: "testnet",
      });
      assert.equal(review.status, 200, review.text);
      assert.match(review.text, /Confirm the withdrawal/);
      // The review names the wallet the USDC leaves and what it holds.
      assert.ok(review.text.includes(checksum(m.walletAddress!)), "the source wallet is named");
      assert.match(review.text, /holding 100\.000000 USDC/);
      // More than the wallet holds is refused at the review, before the final confirm.
      const tooMuch = await d.post(b, `/dashboard/wallets/${payoutId}/withdraw/review`, {
        amount: "100000",
        destinationAddress: DEST,
        chain: "testnet",
      });
      assert.equal(tooMuch.status, 400, tooMuch.text);
      assert.ok(tooMuch.text.includes(`${M.withdrawInsufficient} Balance: 100.000000 USDC.`));
      assert.doesNotMatch(tooMuch.text, /Confirm the withdrawal/);
      assert.equal(await chain.usdcBalance("testnet", dest), 0n, "nothing sent by the review");
      const requestKey = /name="requestKey" value="([^"]+)"/.exec(review.text)?.[1];
      assert.ok(requestKey);
      const fields = { amount: "30", destinationAddress: DEST, chain: "testnet", requestKey };
      const sent = await d.post(b, `/dashboard/wallets/${payoutId}/withdraw`, fields);
      assert.equal(sent.status, 200, sent.text);
      assert.ok(sent.text.includes(M.dashWithdrawn));
      const twice = await d.post(b, `/dashboard/wallets/${payoutId}/withdraw`, fields);
      assert.equal(twice.status, 200, twice.text);
      assert.equal(
        await chain.usdcBalance("testnet", dest),
        30_000_000n,
        "a double submit sends once",
      );
      const over = await d.post(b, `/dashboard/wallets/${payoutId}/withdraw`, {
        ...fields,
        amount: "71",
        requestKey: crypto.randomUUID(),
      });
      assert.equal(over.status, 400);
      assert.ok(over.text.includes(`${M.withdrawInsufficient} Balance: 70.000000 USDC.`));
    });

    await t.step("another merchant's wallet is not found in the dashboard either", async () => {
      const ob = await d.open(other, "/dashboard/wallets");
      const r = await d.post(ob, `/dashboard/wallets/${payoutId}/withdraw`, {
        amount: "1",
        destinationAddress: DEST,
        chain: "testnet",
        requestKey: crypto.randomUUID(),
      });
      assert.equal(r.status, 404);
      assert.ok(r.text.includes(M.walletNotFound));
      const f = await d.post(ob, `/dashboard/wallets/${payoutId}/faucet`, { chain: "testnet" });
      assert.equal(f.status, 404);
    });
  } finally {
    await svc.close();
  }
});

Deno.test("dashboard: no faucet button on a configured chain", async () => {
  const svc = await startTestService({ env: { RATE_LIMITS: "off", CHAINS: "testnet" } });
  const peer = await startTestService({
    env: { RATE_LIMITS: "off", CHAINS: "testnet" },
    sameDeploymentAs: svc,
  });
  try {
    assert.equal(peer.deps.chain.isLocal("testnet"), false, "the peer reaches the node by URL");
    const m = await createMerchant(peer);
    const d = dashboardClient(peer);
    const b = await d.open(m, "/dashboard/wallets");
    const mode = await d.post(b, "/dashboard/mode", { mode: "test" });
    assert.equal(mode.status, 303);
    const r = await d.get(b, "/dashboard/wallets");
    assert.equal(r.status, 200);
    assert.match(r.text, /id="test-banner"/);
    assert.doesNotMatch(r.text, /Faucet/);
    const payout = await api(peer)("GET", "/api/merchant/wallet", { cookie: m.cookie });
    const id = (payout.json.wallet as { managedWalletId: string }).managedWalletId;
    const f = await d.post(b, `/dashboard/wallets/${id}/faucet`, { chain: "testnet" });
    // Refused as a faucet that is not there, not as a server error (an outside audit saw 500).
    assert.equal(f.status, 404);
    assert.ok(f.text.includes(M.devFaucetUnavailable));
  } finally {
    await peer.close();
    await svc.close();
  }
});
