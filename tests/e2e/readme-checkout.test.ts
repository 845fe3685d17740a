/**
 * The README's "Using it", as a new user follows it: a merchant account, a payment link,
 * `deno task faucet <address> 100` with no flags (the real CLI, attached to the running service
 * like `deno task start`'s operator commands), and the checkout URL opened in Chromium with a
 * freshly generated wallet that never had native gas. The page turns to Paid with one signature
 * and no transaction from the payer.
 */
import assert from "node:assert/strict";
import type { Browser } from "playwright-core";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { startTestService } from "../helpers/service.ts";
import { api, createMerchant } from "../helpers/accounts.ts";
import { browserTest, launchBrowser, screenshot, watchPage } from "../helpers/browser.ts";
import { installWallet } from "../helpers/wallet-provider.ts";
import { startReceiver } from "../helpers/receiver.ts";
import { waitFor } from "../helpers/poll.ts";

Deno.test(
  browserTest(
    "README's Using it: a fresh wallet, the faucet with no flags, pay, Paid",
    async () => {
      const svc = await startTestService({ env: { RATE_LIMITS: "off" }, persistChains: true });
      const receiver = startReceiver();
      let browser: Browser | undefined;
      try {
        const m = await createMerchant(svc, { businessName: "My Shop" });
        const merchantWallet = m.walletAddress!.toLowerCase() as `0x${string}`;
        const link = await api(svc)("POST", "/api/merchant/payment-link", {
          cookie: m.cookie,
          body: { amount: "12.50", description: "Two coffees", webhookUrl: `${receiver.url}/hook` },
        });
        assert.equal(link.status, 201, link.text);
        const checkoutUrl = link.json.checkoutUrl as string;
        const reference = link.json.reference as string;

        const key = generatePrivateKey();
        const address = privateKeyToAccount(key).address;
        const who = address.toLowerCase() as `0x${string}`;
        const chain = svc.deps.chain;
        const client = chain.runtime("production").client;
        assert.equal(await chain.nativeBalance("production", who), 0n);
        assert.equal(await client.getTransactionCount({ address }), 0);

        // `deno task faucet 0xYourBrowserWallet 100`, against this deployment's DATA_DIR.
        const config = svc.deps.config;
        const out = await new Deno.Command(Deno.execPath(), {
          args: ["run", "--allow-all", "src/cli/faucet.ts", address, "100"],
          env: {
            DATABASE_URL: svc.db.url,
            DATA_DIR: config.DATA_DIR,
            JWT_SECRET: config.JWT_SECRET!,
            WALLET_MASTER_KEY: config.WALLET_MASTER_KEY!,
            APP_ENV: "test",
            LOG_LEVEL: "error",
          },
          stdout: "piped",
          stderr: "piped",
        }).output();
        const text = new TextDecoder().decode(out.stdout);
        assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
        assert.match(text, new RegExp(`Minted 100 USDC to ${address} on production\\.`));
        assert.equal(await chain.usdcBalance("production", who), 100_000_000n);
        const gasGranted = await chain.nativeBalance("production", who);
        assert.ok(gasGranted > 0n, "the faucet gives native gas on a local node");

        const merchantBefore = await chain.usdcBalance("production", merchantWallet);
        browser = await launchBrowser();
        const page = await browser.newPage();
        const problems = watchPage(page);
        // A fresh browser wallet: it knows no chain of ours, the page adds it.
        const wallet = await installWallet(page, {
          privateKey: key,
          chains: {},
          initialChainId: "0x1",
        });
        await page.goto(checkoutUrl);
        await page.getByRole("button", { name: "Pay with wallet" }).click();
        await page.locator("#status[data-status=SUCCESS]").waitFor({ timeout: 30_000 });
        const paidAt = Date.now();
        await screenshot(page, "readme-checkout-paid");
        assert.match(await page.locator("#status").textContent() ?? "", /Paid/);
        assert.equal(
          await page.locator("#status a", { hasText: "View the transaction" }).count(),
          1,
        );

        const signatures = wallet.requests.filter((r) => r.method === "eth_signTypedData_v4");
        assert.equal(signatures.length, 1, "one signature");
        assert.ok(!wallet.requests.some((r) => r.method === "eth_sendTransaction"));
        console.log(
          `README checkout: ${signatures.length} signature, signature → Paid ${
            paidAt - signatures[0].at
          } ms`,
        );

        // The payer sent nothing and spent no gas; the merchant got exactly the amount.
        assert.equal(await client.getTransactionCount({ address }), 0);
        assert.equal(await chain.nativeBalance("production", who), gasGranted);
        assert.equal(await chain.usdcBalance("production", who), 87_500_000n);
        assert.equal(
          await chain.usdcBalance("production", merchantWallet) - merchantBefore,
          12_500_000n,
        );
        const deliveries = await waitFor(async () => {
          const r = await api(svc)("GET", `/api/webhooks/deliveries?reference=${reference}`, {
            cookie: m.cookie,
          });
          assert.equal(r.status, 200, r.text);
          const list = r.json.deliveries as { event: string; status: string }[];
          return list.length && list.every((d) => d.status === "delivered") ? list : null;
        }, { what: "the payment.settled delivery" });
        assert.deepEqual(deliveries.map((d) => d.event), ["payment.settled"]);
        assert.equal(receiver.received.filter((r) => r.path === "/hook").length, 1);
        assert.deepEqual(problems, []);
      } finally {
        await browser?.close();
        await receiver.close();
        await svc.close();
      }
    },
  ),
);
