/**
 * Hosted checkout "Pay from another chain" with the shopper's own wallet, in a real Chromium with
 * an injected EIP-1193 wallet. The wallet holds USDC only on Base_Sepolia (a local anvil the
 * service starts on first use) and nothing on the settlement chain, no gas anywhere: it reviews
 * the fee and the burn, the page adds and switches to Base_Sepolia through our /rpc proxy, the
 * shopper signs once, the service relays the burn, attests and mints, and the page turns to
 * Paid. Then a fast transfer whose relay is down: the page falls back to approve + burn from the
 * wallet (which has gas), reports the burn and turns to Paid.
 */
import assert from "node:assert/strict";
import type { Browser } from "playwright-core";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { startTestService, type TestService } from "../helpers/service.ts";
import { api, createMerchant } from "../helpers/accounts.ts";
import { browserTest, launchBrowser, screenshot, watchPage } from "../helpers/browser.ts";
import { installWallet } from "../helpers/wallet-provider.ts";

const SOURCE = "Base_Sepolia";
const MAINNET = "0x1";

async function testnetCheckout(svc: TestService, amount: string) {
  const call = api(svc);
  const m = await createMerchant(svc, { businessName: `Cross Chain Café ${amount}` });
  const key = ((await call("POST", "/api/keys", {
    cookie: m.cookie,
    body: { type: "secret", environment: "test" },
  })).json.key as { key: string }).key;
  const init = await call("POST", "/api/payments/initialize", {
    headers: { "x-api-key": key },
    body: { amount, webhookUrl: "http://127.0.0.1:9/hook" },
  });
  assert.equal(init.status, 201, init.text);
  const reference = init.json.reference as string;
  const [p] = await svc.db.sql`select pay_to from payments where reference = ${reference}`;
  return { reference, url: init.json.checkoutUrl as string, payTo: p.payTo as `0x${string}` };
}

Deno.test(
  browserTest("checkout: pay from the shopper's own wallet on another chain", async (t) => {
    const svc = await startTestService({ env: { RATE_LIMITS: "off" } });
    const chain = svc.deps.chain;
    let browser: Browser | undefined;
    const events = async (reference: string) =>
      (await svc.db.sql`
        select event from webhook_deliveries where reference = ${reference} order by event`)
        .map((e) => e.event);
    try {
      await chain.ensure(SOURCE);
      browser = await launchBrowser();

      await t.step("one signature from a wallet with USDC on Base_Sepolia only", async () => {
        const key = generatePrivateKey();
        const shopper = privateKeyToAccount(key).address;
        await chain.mintUsdc({ profile: SOURCE, to: shopper, amount: 10_000_000n });
        const p = await testnetCheckout(svc, "4.25");
        const merchantBefore = await chain.usdcBalance("testnet", p.payTo);
        const nativeBefore = await chain.nativeBalance(SOURCE, shopper);
        assert.equal(nativeBefore, 0n);
        assert.equal(await chain.usdcBalance("testnet", shopper), 0n);
        assert.equal(await chain.nativeBalance("testnet", shopper), 0n);

        const page = await browser!.newPage();
        // Before a service-wallet session exists its form asks for one: the expected 401.
        const problems = watchPage(page, { ignore: [/status of 401/] });
        // The wallet is on another network and knows neither Base_Sepolia nor ours.
        const wallet = await installWallet(page, {
          privateKey: key,
          chains: {},
          initialChainId: MAINNET,
        });
        await page.goto(p.url);
        await page.getByText("Pay from another chain").click();
        await page.locator("#xchain-from").selectOption(SOURCE);
        await page.getByRole("button", { name: "Connect wallet and review" }).click();
        await page.locator("#xchain-quote").waitFor({ timeout: 30_000 });
        assert.equal(await page.locator("#xchain-amount").textContent(), "4.250000 USDC");
        assert.equal(await page.locator("#xchain-fee").textContent(), "0.000000 USDC");
        assert.equal(await page.locator("#xchain-burn").textContent(), "4.250000 USDC");
        assert.equal(await page.locator("#xchain-balance").textContent(), "10.000000 USDC");
        assert.equal(await page.locator("#xchain-mode").textContent(), "One signature, no gas");
        await screenshot(page, "checkout-bridge-1-review");
        await page.getByRole("button", { name: "Pay 4.250000 USDC from Base Sepolia" }).click();
        await page.locator("#status[data-status=SUCCESS]").waitFor({ timeout: 45_000 });
        await page.locator("#xchain-state[data-status=minted]").waitFor({ timeout: 15_000 });
        await screenshot(page, "checkout-bridge-2-paid");
        assert.match(
          await page.locator("#xchain-steps [data-step=mint]").textContent() ?? "",
          /Minted 4\.250000 USDC on Settle Testnet/,
        );

        const methods = wallet.requests.map((r) => r.method);
        assert.equal(methods.filter((m) => m === "eth_signTypedData_v4").length, 1);
        assert.ok(!methods.includes("eth_sendTransaction"), methods.join(","));
        const added = wallet.requests.find((r) => r.method === "wallet_addEthereumChain")!
          .params as [{ chainId: string; rpcUrls: string[] }];
        assert.deepEqual([added[0].chainId, added[0].rpcUrls[0]], [
          "0x14a34",
          `${svc.baseUrl}/rpc/${SOURCE}`,
        ]);
        assert.equal(wallet.chainId(), "0x14a34");

        const [paid] = await svc.db.sql`
          select status, payer from payments where reference = ${p.reference}`;
        assert.deepEqual([paid.status, paid.payer], ["SUCCESS", shopper.toLowerCase()]);
        assert.equal(
          await chain.usdcBalance("testnet", p.payTo) - merchantBefore,
          4_250_000n,
          "the merchant got exactly the amount",
        );
        assert.deepEqual(await events(p.reference), ["payment.auto_settled", "payment.settled"]);
        assert.equal(await chain.usdcBalance(SOURCE, shopper), 5_750_000n, "burned 4.25");
        assert.equal(await chain.nativeBalance(SOURCE, shopper), nativeBefore, "no gas spent");
        assert.equal(await chain.usdcBalance("testnet", shopper), 0n);
        assert.deepEqual(problems, []);
        await page.close();
      });

      await t.step(
        "fast, relay down: the page falls back to approve + burn from the wallet",
        async () => {
          const key = generatePrivateKey();
          const shopper = privateKeyToAccount(key).address;
          // USDC and gas on Base_Sepolia (the wallet sends two transactions there).
          await chain.faucet(SOURCE, shopper, 10_000_000n);
          const p = await testnetCheckout(svc, "2.50");
          const merchantBefore = await chain.usdcBalance("testnet", p.payTo);
          const page = await browser!.newPage();
          const problems = watchPage(page, {
            ignore: [/status of 401/, /status of 503/],
          });
          await page.route("**/bridge-relay", (route) =>
            route.fulfill({
              status: 503,
              contentType: "application/json",
              body: JSON.stringify({ success: false, error: "Service unavailable." }),
            }));
          const wallet = await installWallet(page, {
            privateKey: key,
            chains: { "0x14a34": `${svc.baseUrl}/rpc/${SOURCE}` },
            initialChainId: "0x14a34",
          });
          await page.goto(p.url);
          await page.getByText("Pay from another chain").click();
          await page.locator("#xchain-from").selectOption(SOURCE);
          await page.locator("#xchain-fast").check();
          await page.getByRole("button", { name: "Connect wallet and review" }).click();
          await page.locator("#xchain-quote").waitFor({ timeout: 30_000 });
          // 1 bps fast fee on top: 2.5 arrive.
          assert.equal(await page.locator("#xchain-fee").textContent(), "0.000251 USDC");
          assert.equal(await page.locator("#xchain-burn").textContent(), "2.500251 USDC");
          await page.getByRole("button", { name: "Pay 2.500251 USDC from Base Sepolia" }).click();
          await page.locator("#xchain-message").filter({ hasText: /relay is unavailable/ })
            .waitFor({ timeout: 20_000 });
          await screenshot(page, "checkout-bridge-3-fallback");
          await page.getByRole("button", { name: "Pay with wallet transactions instead" }).click();
          await page.locator("#status[data-status=SUCCESS]").waitFor({ timeout: 45_000 });
          await page.locator("#xchain-state[data-status=minted]").waitFor({ timeout: 15_000 });
          await screenshot(page, "checkout-bridge-4-paid-by-wallet");

          const sent = wallet.requests.filter((r) => r.method === "eth_sendTransaction");
          assert.equal(sent.length, 2, "approve, then the burn");
          const [row] = await svc.db.sql`
            select burn_mode, burn_tx_hash, transfer_speed from bridge_transfers
            where payment_reference = ${p.reference}`;
          assert.deepEqual([row.burnMode, row.transferSpeed], ["payer_wallet", "fast"]);
          const [paid] = await svc.db.sql`
            select status, payer from payments where reference = ${p.reference}`;
          assert.deepEqual([paid.status, paid.payer], ["SUCCESS", shopper.toLowerCase()]);
          assert.equal(await chain.usdcBalance("testnet", p.payTo) - merchantBefore, 2_500_000n);
          assert.equal(await chain.usdcBalance(SOURCE, shopper), 10_000_000n - 2_500_251n);
          assert.deepEqual(await events(p.reference), [
            "payment.auto_settled",
            "payment.settled",
          ]);
          assert.deepEqual(problems, []);
          await page.close();
        },
      );
    } finally {
      await browser?.close();
      await svc.close();
    }
  }),
);
