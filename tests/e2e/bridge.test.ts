/**
 * The bridge in a real Chromium, on one service and one source chain (Base_Sepolia, its anvil
 * started on first use): the consumer page bridges with live progress, then hosted checkout
 * pays a Settle_Testnet payment "from another chain" and turns to Paid.
 */
import assert from "node:assert/strict";
import type { Browser } from "playwright-core";
import { startTestService } from "../helpers/service.ts";
import { api, createMerchant } from "../helpers/accounts.ts";
import { browserTest, launchBrowser, screenshot, watchPage } from "../helpers/browser.ts";
import { payer } from "../helpers/payer.ts";
import { ANVIL_KEYS } from "../helpers/anvil.ts";

Deno.test(
  browserTest(
    "bridge pages: consumer bridge with live progress; pay from another chain",
    async (t) => {
      const svc = await startTestService({ env: { RATE_LIMITS: "off" } });
      let browser: Browser | undefined;
      try {
        browser = await launchBrowser();
        const page = await browser.newPage();
        // Before a session exists the page asks for it and gets the expected 401.
        const problems = watchPage(page, { ignore: [/status of 401/] });
        let wallet = "";
        /** A new merchant's checkout on Settle_Testnet (a test secret key's chain). */
        const testnetCheckout = async (businessName: string, amount: string) => {
          const m = await createMerchant(svc, { businessName });
          const testKey = ((await api(svc)("POST", "/api/keys", {
            cookie: m.cookie,
            body: { type: "secret", environment: "test" },
          })).json.key as { key: string }).key;
          const init = await api(svc)("POST", "/api/payments/initialize", {
            headers: { "x-api-key": testKey },
            body: { amount },
          });
          assert.equal(init.status, 201, init.text);
          return init;
        };

        await t.step(
          "consumer page: session, test USDC, bridge, live progress to minted",
          async () => {
            await page.goto(`${svc.baseUrl}/bridge`);
            await page.getByRole("button", { name: "Start a wallet session" }).click();
            await page.locator("#bridge-wallet").filter({ hasText: /^0x[0-9a-fA-F]{40}$/ })
              .waitFor();
            wallet = (await page.locator("#bridge-wallet").textContent())!;
            await page.locator("#bridge-from").selectOption("Base_Sepolia");
            await page.getByRole("button", { name: "Get test USDC on this chain" }).click();
            await page.locator("#bridge-balance").filter({ hasText: "100.000000 USDC" }).waitFor({
              timeout: 30_000,
            });
            assert.equal(await page.locator("#bridge-recipient").inputValue(), wallet);
            await page.locator("#bridge-amount").fill("12.5");
            await page.getByRole("button", { name: "Bridge to Settle Testnet" }).click();
            await page.locator("#bridge-steps [data-step=burn][data-state=done]").waitFor({
              timeout: 30_000,
            });
            await page.locator("#bridge-state[data-status=minted]").waitFor({ timeout: 30_000 });
            await screenshot(page, "bridge-1-minted");
            assert.match(
              await page.locator("#bridge-steps [data-step=mint]").textContent() ?? "",
              /Minted 12\.500000 USDC on Settle Testnet/,
            );
            const [{ mintTxHash }] = await svc.db.sql`select mint_tx_hash from bridge_transfers`;
            assert.equal(
              await page.locator("#bridge-steps [data-step=mint] a").getAttribute("href"),
              `${svc.baseUrl}/explorer/testnet/tx/${mintTxHash}`,
            );
            await page.locator("#bridge-balance").filter({ hasText: "87.500000 USDC" }).waitFor();
            assert.equal(
              await svc.deps.chain.usdcBalance("testnet", wallet as `0x${string}`),
              12_500_000n,
            );
          },
        );

        await t.step("checkout: pay a Settle_Testnet payment from Base_Sepolia", async () => {
          const init = await testnetCheckout("Cross Chain Café", "4.25");
          // The first chain's balance answers after the chosen one's (a slow node, a busy
          // machine): the page shows the chosen chain's balance, not the late answer.
          let chosenAnswered = () => {};
          const answered = new Promise<void>((resolve) => chosenAnswered = resolve);
          const late: string[] = [];
          await page.route("**/bridge/balance?*", async (route) => {
            const chain = new URL(route.request().url()).searchParams.get("chain");
            if (chain === "Base_Sepolia") {
              await route.fulfill({ response: await route.fetch() });
              chosenAnswered();
            } else {
              late.push(chain ?? "");
              await answered;
              await route.continue();
            }
          });
          await page.goto(init.json.checkoutUrl as string);
          await page.getByText("Pay from another chain").click();
          await page.locator("#bridge-wallet").filter({ hasText: wallet }).waitFor();
          await page.locator("#bridge-from").selectOption("Base_Sepolia");
          await page.locator("#bridge-balance").filter({ hasText: "87.500000 USDC" }).waitFor();
          assert.deepEqual(late.length, 1, "the first chain's balance was asked for first");
          // Both answers read (the late one last): the chosen chain's balance still shows.
          await page.locator("#bridge-balance[data-answers='2']").waitFor();
          await page.unroute("**/bridge/balance?*");
          assert.equal(await page.locator("#bridge-balance").textContent(), "87.500000 USDC");
          await page.getByRole("button", { name: "Pay 4.250000 USDC from this chain" }).click();
          await page.locator("#status[data-status=SUCCESS]").waitFor({ timeout: 30_000 });
          await page.locator("#bridge-state[data-status=minted]").waitFor();
          await screenshot(page, "bridge-2-checkout-paid");
          assert.equal(
            await page.getByRole("button", { name: "Pay 4.250000 USDC from this chain" })
              .isHidden(),
            true,
          );
          const [p] = await svc.db.sql`
          select status, payer from payments where reference = ${init.json.reference as string}`;
          assert.deepEqual([p.status, p.payer], ["SUCCESS", wallet.toLowerCase()]);
        });
        await t.step(
          "checkout paid from the payment's own chain: the cross-chain offer goes away",
          async () => {
            const init = await testnetCheckout("Same Chain Shop", "1.50");
            const fresh = await browser!.newPage();
            const sessionAsks: string[] = [];
            fresh.on("request", (r) => {
              if (r.url().includes("/api/consumer/session")) sessionAsks.push(r.url());
            });
            try {
              await fresh.goto(init.json.checkoutUrl as string);
              await fresh.getByText("Pay from another chain").waitFor();
              const alice = payer(svc, ANVIL_KEYS[2], "testnet");
              await alice.fund(10_000_000n);
              await alice.pay(init.json.reference as string);
              await fresh.locator("#status[data-status=SUCCESS]").waitFor({ timeout: 30_000 });
              await fresh.locator("#cross-chain").waitFor({ state: "hidden" });
              assert.deepEqual(sessionAsks, [], "no session asked for while the offer stayed shut");
            } finally {
              await fresh.close();
            }
          },
        );
        assert.deepEqual(problems, []);
      } finally {
        await browser?.close();
        await svc.close();
      }
    },
  ),
);
