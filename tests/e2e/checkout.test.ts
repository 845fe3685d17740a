/**
 * The hosted checkout page in a real Chromium with an injected test wallet: it adds and switches
 * to the payment's chain, signs the permit, sends the router transaction and turns to Paid
 * without a reload; and the clear states for expired, unknown, wrong network, insufficient
 * balance, a rejected signature and no wallet at all. Screenshots in test-output/screenshots/.
 */
import assert from "node:assert/strict";
import type { Browser, Page } from "playwright-core";
import { startTestService, type TestService } from "../helpers/service.ts";
import { api, createMerchant, type TestMerchant } from "../helpers/accounts.ts";
import { browserTest, launchBrowser, screenshot, watchPage } from "../helpers/browser.ts";
import { installWallet } from "../helpers/wallet-provider.ts";
import { ANVIL_KEYS } from "../helpers/anvil.ts";
import { payer } from "../helpers/payer.ts";
import { waitFor } from "../helpers/poll.ts";
import { generatePrivateKey } from "viem/accounts";
import { expireDue } from "../../src/modules/payments/payments.service.ts";

const MAINNET = "0x1";

async function newLink(svc: TestService, m: TestMerchant, amount: string): Promise<string> {
  const r = await api(svc)("POST", "/api/merchant/payment-link", {
    cookie: m.cookie,
    body: { amount, description: "Order #1042 — two mugs" },
  });
  assert.equal(r.status, 201, r.text);
  return r.json.checkoutUrl as string;
}

async function progressText(page: Page, pattern: RegExp) {
  await page.locator("#progress").filter({ hasText: pattern }).waitFor({ timeout: 20_000 });
  return await page.locator("#progress").textContent();
}

Deno.test(
  browserTest("checkout page: pay from a browser wallet and every clear state", async (t) => {
    const svc = await startTestService({ env: { RATE_LIMITS: "off" } });
    let browser: Browser | undefined;
    try {
      const m = await createMerchant(svc, { businessName: "Mug Shop" });
      const production = svc.deps.chain.runtime("production");
      await svc.deps.chain.mintUsdc({
        profile: "production",
        to: "0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc", // anvil account 2
        amount: 500_000_000n,
      });
      browser = await launchBrowser();
      /** A new link opened in a tab whose wallet (on the payment's chain) holds `privateKey`. */
      const openWithWallet = async (amount: string, privateKey: `0x${string}`) => {
        const url = await newLink(svc, m, amount);
        const page = await browser!.newPage();
        await installWallet(page, {
          privateKey,
          chains: { "0x13b2": production.rpcUrl },
          initialChainId: "0x13b2",
        });
        await page.goto(url);
        return { url, page };
      };

      await t.step(
        "pays gasless: adds the chain, switches, signs once, sends nothing, turns to Paid",
        async () => {
          const url = await newLink(svc, m, "42.50");
          const page = await browser!.newPage();
          const problems = watchPage(page);
          // The wallet starts on another chain and does not know ours: the page must add it.
          const wallet = await installWallet(page, {
            privateKey: ANVIL_KEYS[2],
            chains: {},
            initialChainId: MAINNET,
          });
          await page.goto(url);
          assert.equal(await page.locator("h1.amount").textContent(), "42.50 USDC");
          assert.match(await page.locator(".merchant").textContent() ?? "", /Mug Shop/);
          assert.match(
            await page.locator("#time-left").textContent() ?? "",
            /^(24h 00m|23h 5\dm)$/,
          );
          assert.equal(await page.locator(".qr-code svg").count(), 1);
          await screenshot(page, "checkout-1-pending");
          await page.getByRole("button", { name: "Pay with wallet" }).click();
          await page.locator("#status[data-status=SUCCESS]").waitFor({ timeout: 30_000 });
          await screenshot(page, "checkout-2-paid");
          assert.match(await page.locator("#status").textContent() ?? "", /Paid/);
          assert.equal(await page.locator("#pay-panel").isHidden(), true);
          const methods = wallet.requests.map((r) => r.method);
          for (
            const m of [
              "eth_requestAccounts",
              "wallet_switchEthereumChain",
              "wallet_addEthereumChain",
              "eth_signTypedData_v4",
            ]
          ) {
            assert.ok(methods.includes(m), `${m} in ${methods.join(",")}`);
          }
          // Gasless: one signature, and the wallet sends no transaction.
          assert.equal(methods.filter((x) => x === "eth_signTypedData_v4").length, 1);
          assert.ok(!methods.includes("eth_sendTransaction"), methods.join(","));
          const added = wallet.requests.find((r) => r.method === "wallet_addEthereumChain")!
            .params as [{ rpcUrls: string[]; chainId: string }];
          assert.equal(added[0].chainId, "0x13b2");
          assert.equal(added[0].rpcUrls[0], `${svc.baseUrl}/rpc/production`);
          const ref = url.split("/").at(-1)!;
          const [p] = await svc.db
            .sql`select status, payer, chain_tx_hash from payments where reference = ${ref}`;
          assert.equal(p.status, "SUCCESS");
          assert.equal(p.payer, wallet.address.toLowerCase());
          const receipt = await production.client.getTransactionReceipt({ hash: p.chainTxHash });
          assert.equal(receipt.status, "success");
          assert.deepEqual(problems, []);
          await page.close();
        },
      );

      await t.step(
        "relay unavailable: the page offers the permit + transaction fallback",
        async () => {
          const url = await newLink(svc, m, "3.25");
          const page = await browser!.newPage();
          await page.route("**/relay", (route) =>
            route.fulfill({
              status: 503,
              contentType: "application/json",
              body: JSON.stringify({ success: false, error: "Service unavailable." }),
            }));
          const wallet = await installWallet(page, {
            privateKey: ANVIL_KEYS[2],
            chains: { "0x13b2": production.rpcUrl },
            initialChainId: "0x13b2",
          });
          await page.goto(url);
          await page.getByRole("button", { name: "Pay with wallet" }).click();
          await progressText(page, /gasless relay is unavailable.*Nothing was paid/);
          await screenshot(page, "checkout-2b-relay-unavailable");
          await page.getByRole("button", { name: "Pay with a wallet transaction instead" })
            .click();
          await page.locator("#status[data-status=SUCCESS]").waitFor({ timeout: 30_000 });
          const methods = wallet.requests.map((r) => r.method);
          assert.equal(methods.filter((x) => x === "eth_signTypedData_v4").length, 2);
          assert.equal(methods.filter((x) => x === "eth_sendTransaction").length, 1);
          await page.close();
        },
      );

      await t.step("a phone screen", async () => {
        const url = await newLink(svc, m, "5");
        const page = await browser!.newPage({ viewport: { width: 390, height: 844 } });
        await page.goto(url);
        const width = await page.evaluate(() =>
          (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } })
            .document
            .documentElement.scrollWidth
        );
        assert.ok(width <= 390, `no horizontal scroll on a phone (${width}px)`);
        await screenshot(page, "checkout-3-phone");
        await page.close();
      });

      await t.step("wrong network: the user refuses to switch", async () => {
        const url = await newLink(svc, m, "1");
        const page = await browser!.newPage();
        await installWallet(page, {
          privateKey: ANVIL_KEYS[2],
          chains: { [MAINNET]: production.rpcUrl },
          initialChainId: MAINNET,
          reject: ["wallet_switchEthereumChain"],
        });
        await page.goto(url);
        await page.getByRole("button", { name: "Pay with wallet" }).click();
        assert.match(await progressText(page, /Wrong network/) ?? "", /Settle \(chain 5042\)/);
        await screenshot(page, "checkout-4-wrong-network");
        await page.close();
      });

      await t.step("insufficient balance", async () => {
        const { page } = await openWithWallet("1000000", ANVIL_KEYS[3]);
        await page.getByRole("button", { name: "Pay with wallet" }).click();
        assert.match(
          await progressText(page, /Insufficient balance/) ?? "",
          /0 USDC and the payment is 1000000\.00 USDC/,
        );
        await screenshot(page, "checkout-5-insufficient");
        await page.close();
      });

      await t.step("the payer rejects the signature: nothing is paid", async () => {
        const url = await newLink(svc, m, "2");
        const page = await browser!.newPage();
        const wallet = await installWallet(page, {
          privateKey: ANVIL_KEYS[2],
          chains: { "0x13b2": production.rpcUrl },
          initialChainId: "0x13b2",
          reject: ["eth_signTypedData_v4"],
        });
        await page.goto(url);
        await page.getByRole("button", { name: "Pay with wallet" }).click();
        await progressText(page, /Signature rejected\. Nothing was paid\./);
        assert.ok(!wallet.requests.some((r) => r.method === "eth_sendTransaction"));
        await screenshot(page, "checkout-6-rejected");
        await page.close();
      });

      await t.step("no browser wallet", async () => {
        const url = await newLink(svc, m, "3");
        const page = await browser!.newPage();
        await page.goto(url);
        await page.getByRole("button", { name: "Pay with wallet" }).click();
        await progressText(page, /No browser wallet found/);
        await page.close();
      });

      await t.step("expired: the page turns inactive", async () => {
        const url = await newLink(svc, m, "4");
        const page = await browser!.newPage();
        await page.goto(url);
        svc.clock.advance(24 * 3600 * 1000 + 1000);
        await expireDue(svc.deps);
        // The status block polls and turns to Expired without a reload; the pay button goes.
        await page.locator("#status[data-status=EXPIRED]").waitFor({ timeout: 10_000 });
        assert.equal(await page.locator("#pay-panel").isHidden(), true);
        await screenshot(page, "checkout-7-expired");
        await page.close();
        svc.clock.set(new Date());
      });

      await t.step(
        "another wallet pays first: this tab is told so, not shown Paid as its own",
        async () => {
          const first = payer(svc, generatePrivateKey());
          await first.fund(10_000_000n);
          const { url, page } = await openWithWallet("5", ANVIL_KEYS[2]);
          const ref = url.split("/checkout/")[1];
          // The other wallet's relay is broadcast but held unmined, so this tab can still try.
          const rpc = production.client as unknown as {
            request(a: { method: string; params?: unknown[] }): Promise<unknown>;
          };
          // Every relayer holds gas already: a top-up it would wait for could not be mined.
          for (const r of production.relayers) {
            await rpc.request({
              method: "anvil_setBalance",
              params: [r.address, "0x56bc75e2d63100000"], // 100 ETH
            });
          }
          await rpc.request({ method: "evm_setAutomine", params: [false] });
          let relayed: Promise<{ status: number; json: Record<string, string> }> | undefined;
          try {
            // Answered once mined: started, then waited for as broadcast.
            let early: { status: number; json: unknown } | undefined;
            relayed = first.relay(ref, await first.authorize(ref));
            relayed.then((r) => early = r, () => {});
            // Recorded (signed, then broadcast): from then on the payment is that wallet's.
            await waitFor(
              async () => {
                if (early) throw new Error(`the relay answered early: ${JSON.stringify(early)}`);
                return (await svc.db.sql`select 1 from chain_transactions
                  where intent_key = ${`checkout-relay:${ref}`}
                    and status in ('signed', 'broadcast')`).length === 1;
              },
              { what: "the other wallet's relay recorded" },
            );
            await page.getByRole("button", { name: "Pay with wallet" }).click();
            await progressText(page, /already being paid from another wallet\. Nothing was taken/);
          } finally {
            await rpc.request({ method: "evm_setAutomine", params: [true] });
            await rpc.request({ method: "evm_mine" });
          }
          const answered = await relayed!;
          assert.equal(answered.status, 200, JSON.stringify(answered.json));
          await page.locator("#status[data-status=SUCCESS]").waitFor({ timeout: 20_000 });
          assert.match(
            await progressText(page, /paid from another wallet/) ?? "",
            new RegExp(`\\(${first.address.toLowerCase()}\\)\\. Nothing was taken from yours\\.`),
          );
          assert.equal(await page.locator("#pay-button").isHidden(), true);
          await screenshot(page, "checkout-9-paid-by-another-wallet");
          await page.close();
        },
      );

      await t.step("the service unreachable: temporary, nothing paid", async () => {
        const { page } = await openWithWallet("6", ANVIL_KEYS[2]);
        // A proxy's 502 page where the service's answer should be.
        await page.route(
          "**/pay-data*",
          (route) =>
            route.fulfill({ status: 502, contentType: "text/html", body: "<h1>Bad Gateway</h1>" }),
        );
        await page.getByRole("button", { name: "Pay with wallet" }).click();
        await progressText(page, /could not be reached\. Nothing was paid\. Try again/);
        assert.equal(await page.locator("#pay-button").isVisible(), true);
        await page.close();
      });

      await t.step("unknown reference → 404 page", async () => {
        const page = await browser!.newPage();
        const res = await page.goto(`${svc.baseUrl}/checkout/pay_ref_doesnotexist00000000`);
        assert.equal(res?.status(), 404);
        assert.match(await page.locator("h1").textContent() ?? "", /Payment not found/);
        await screenshot(page, "checkout-8-not-found");
        await page.close();
      });
    } finally {
      await browser?.close();
      await svc.close();
    }
  }),
);
