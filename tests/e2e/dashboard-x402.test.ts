/**
 * The dashboard's x402 section in headless Chromium against the whole service: log in, list an
 * API (inline errors first), see paid calls and revenue after buyers pay through the API, and
 * withdraw from the gateway (too much refused inline; a reviewed withdrawal sent and the balance
 * updated on chain); on a vault with a withdrawal delay, start one (too much refused inline); and
 * a merchant whose payout wallet is its own (external) withdraws by signing in its browser wallet,
 * starting and then withdrawing on that vault without ever holding gas.
 * Screenshots go to test-output/screenshots/dash-x402-*.png.
 */
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { startTestService } from "../helpers/service.ts";
import { api, cookieFrom, createMerchant } from "../helpers/accounts.ts";
import { installWallet, normaliseChainId } from "../helpers/wallet-provider.ts";
import { waitFor } from "../helpers/poll.ts";
import { browserTest, launchBrowser, screenshot, watchPage } from "../helpers/browser.ts";
import {
  externalBuyer,
  gatewayProof,
  registerAgent,
  useDelayedVault,
  X402_PROFILE,
} from "../helpers/x402.ts";
import { M, MF } from "../../src/http/messages.ts";

/** Expected in the console: the forms' 400 answers shown inline. */
const EXPECTED = [/status of 400 \(Bad Request\)/];

async function settled(page: Page) {
  await waitFor(async () => (await page.locator(".htmx-added").count()) === 0, {
    what: "htmx to settle",
  });
}

Deno.test(browserTest("dashboard x402 in Chromium: list, calls, revenue, withdraw", async (t) => {
  const svc = await startTestService({ env: { RATE_LIMITS: "off" } });
  const upstream = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    () => Response.json({ answer: 42 }),
  );
  const browser = await launchBrowser();
  try {
    const m = await createMerchant(svc);
    const sellerAddr = m.walletAddress!;
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    page.setDefaultTimeout(20_000);
    const problems = watchPage(page, { ignore: EXPECTED });
    const base = svc.baseUrl;

    await t.step("log in and open x402: empty listings, zero balances", async () => {
      await page.goto(`${base}/dashboard/x402`);
      await page.getByLabel("Email", { exact: true }).fill(m.email);
      await page.getByLabel("Password", { exact: true }).fill(m.password);
      await page.getByRole("button", { name: "Log in" }).click();
      await page.waitForURL(`${base}/dashboard/x402`);
      await page.getByRole("heading", { name: "x402 pay-per-call" }).waitFor();
      assert.equal(await page.locator('nav a[aria-current="page"]').innerText(), "x402");
      await page.getByText("No listings yet.").waitFor();
      assert.equal(
        await page.getByRole("link", { name: "/gateway" }).getAttribute("href"),
        "/gateway",
        "buyers are pointed at their own page",
      );
      assert.equal(await page.locator("[data-balance=available]").innerText(), "0.000000 USDC");
      await screenshot(page, "dash-x402-01-empty");
    });

    await t.step("list an API: inline errors, then the listing", async () => {
      await settled(page);
      await page.getByLabel("Slug").fill("Bad Slug");
      await page.getByLabel("Price per call (USDC)").fill("0.05");
      await page.getByLabel("Upstream URL").fill(`http://127.0.0.1:${upstream.addr.port}/answer`);
      await page.getByRole("button", { name: "Create listing" }).click();
      await page.locator("#f-slug-error").waitFor();
      assert.equal(await page.locator("#f-slug-error").innerText(), M.x402Slug);
      await screenshot(page, "dash-x402-02-invalid");
      await settled(page);
      await page.getByLabel("Slug").fill("answers");
      await page.getByLabel("POST").check();
      await page.getByLabel("Description (optional)").fill("The answer");
      await page.getByRole("button", { name: "Create listing" }).click();
      await page.getByText(M.dashListingCreated).waitFor();
      const row = page.locator("tr[data-listing=answers]");
      await row.waitFor();
      assert.equal(await row.locator("[data-cell=price]").innerText(), "0.050000 USDC");
      assert.match(await row.innerText(), /GET, POST/);
      assert.equal(await row.locator("[data-cell=calls]").innerText(), "0");
    });

    await t.step("buyers pay through the API: calls and revenue show", async () => {
      const call = api(svc);
      const buyer = await externalBuyer(svc, generatePrivateKey(), 10n * 1_000_000n);
      await buyer.deposit(1_000_000n);
      // The buyer is also an ERC-8004 agent (its own wallet), so it may pay as that agent.
      const agentId = await registerAgent(svc, buyer.account);
      for (let i = 0; i < 3; i++) {
        const { proof } = await gatewayProof(svc, buyer.account, {
          to: sellerAddr,
          value: 50_000n,
        });
        const r = await call("POST", "/api/x402/pay", {
          body: { slug: "answers", method: "GET", paymentProof: proof },
          headers: i === 0 ? { "X-Agent-ID": agentId } : {},
        });
        assert.equal(r.status, 200, r.text);
      }
      await page.goto(`${base}/dashboard/x402`);
      const row = page.locator("tr[data-listing=answers]");
      assert.equal(await row.locator("[data-cell=calls]").innerText(), "3");
      assert.equal(await row.locator("[data-cell=revenue]").innerText(), "0.150000 USDC");
      assert.equal(await page.locator("[data-balance=available]").innerText(), "0.150000 USDC");
      assert.equal(await page.locator("[data-balance=withdrawable]").innerText(), "0.150000 USDC");
      assert.equal(await page.locator("tr[data-call-status=SUCCESS]").count(), 3);
      await page.getByText(agentId).waitFor();
      await screenshot(page, "dash-x402-03-revenue");
    });

    await t.step("withdraw: too much refused inline; reviewed, then sent", async () => {
      await settled(page);
      await page.getByLabel("Withdraw amount (USDC)").fill("0.2");
      await page.getByRole("button", { name: "Review withdrawal" }).click();
      await page.locator("#f-withdraw-amount-error").waitFor();
      assert.equal(
        await page.locator("#f-withdraw-amount-error").innerText(),
        M.x402WithdrawExceeds,
      );
      await settled(page);
      const dest = privateKeyToAccount(generatePrivateKey()).address;
      await page.getByLabel("Withdraw amount (USDC)").fill("0.1");
      await page.getByLabel("Destination address (optional)").fill(dest);
      await page.getByRole("button", { name: "Review withdrawal" }).click();
      await page.locator("[data-x402-review=withdraw]").waitFor();
      assert.match(await page.locator("[data-x402-review=withdraw]").innerText(), /0\.100000 USDC/);
      assert.equal(
        await svc.deps.chain.usdcBalance(X402_PROFILE, dest.toLowerCase() as `0x${string}`),
        0n,
        "the review sends nothing",
      );
      await screenshot(page, "dash-x402-04-review");
      await settled(page);
      await page.getByRole("button", { name: "Confirm withdrawal" }).click();
      await page.getByText("Withdrew 0.100000 USDC from the gateway.").waitFor();
      assert.equal(
        await svc.deps.chain.usdcBalance(X402_PROFILE, dest.toLowerCase() as `0x${string}`),
        100_000n,
      );
      assert.equal(await page.locator("[data-balance=available]").innerText(), "0.050000 USDC");
      await screenshot(page, "dash-x402-05-withdrawn");
      assert.equal(
        await page.getByRole("form", { name: "Start a withdrawal" }).count(),
        0,
        "no delay: nothing to start",
      );
    });

    await t.step(
      "a vault with a delay: a withdrawal started, too much refused inline",
      async () => {
        await useDelayedVault(svc, 3600n, [sellerAddr.toLowerCase() as `0x${string}`], 2_000_000n);
        await page.goto(`${base}/dashboard/x402`);
        await page.getByRole("form", { name: "Start a withdrawal" }).waitFor();
        assert.equal(await page.locator("[data-balance=available]").innerText(), "2.000000 USDC");
        await settled(page);
        await page.getByLabel("Start withdrawing (USDC)").fill("3");
        await page.getByRole("button", { name: "Start withdrawal" }).click();
        await page.locator("#f-start-amount-error").waitFor();
        assert.equal(
          await page.locator("#f-start-amount-error").innerText(),
          M.x402WithdrawStartExceeds,
        );
        await settled(page);
        await page.getByLabel("Start withdrawing (USDC)").fill("1.5");
        await page.getByRole("button", { name: "Start withdrawal" }).click();
        await page.getByText(/Withdrawal of 1\.500000 USDC started: withdrawable from /).waitFor();
        assert.equal(await page.locator("[data-balance=withdrawing]").innerText(), "1.500000 USDC");
        assert.equal(await page.locator("[data-balance=available]").innerText(), "0.500000 USDC");
        assert.equal(
          await page.locator("[data-balance=withdrawable]").innerText(),
          "0.000000 USDC",
        );
        await page.locator("[data-balance=withdrawable-at] time").waitFor();
        await screenshot(page, "dash-x402-06-withdrawal-started");
      },
    );

    await t.step(
      "an external payout wallet withdraws by signature, with no gas: start, then withdraw",
      async () => {
        const call = api(svc);
        const chain = svc.deps.chain;
        const rt = chain.runtime(X402_PROFILE);
        const e = await createMerchant(svc);
        const key = generatePrivateKey();
        const wallet = privateKeyToAccount(key);
        const ch = await call("GET", `/api/merchant/wallet/connect?address=${wallet.address}`, {
          cookie: e.cookie,
        });
        const linked = await call("POST", "/api/merchant/wallet/connect", {
          cookie: `${e.cookie}; ${cookieFrom(ch.headers, "wallet_connect_nonce")}`,
          body: {
            address: wallet.address,
            message: ch.json.message,
            signature: await wallet.signMessage({ message: ch.json.message as string }),
            walletKind: "EXTENSION_WALLET",
          },
        });
        assert.equal(linked.status, 200, linked.text);
        const payout = wallet.address.toLowerCase() as `0x${string}`;
        const buyer = await externalBuyer(svc, generatePrivateKey(), 3_000_000n);
        await buyer.depositFor(payout, 3_000_000n); // on the vault with a delay, from above

        const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
        const p = await ctx.newPage();
        p.setDefaultTimeout(20_000);
        const seen = watchPage(p, { ignore: EXPECTED });
        const testnet = normaliseChainId(chain.chainId(X402_PROFILE));
        await installWallet(p, {
          privateKey: key,
          chains: { [testnet]: rt.rpcUrl },
          initialChainId: testnet,
        });
        await p.goto(`${base}/dashboard/x402`);
        await p.getByLabel("Email", { exact: true }).fill(e.email);
        await p.getByLabel("Password", { exact: true }).fill(e.password);
        await p.getByRole("button", { name: "Log in" }).click();
        await p.getByRole("group", { name: "Withdraw with your wallet" }).waitFor();
        assert.equal(await p.getByRole("button", { name: "Review withdrawal" }).count(), 0);
        assert.equal(await p.locator("[data-balance=available]").innerText(), "3.000000 USDC");
        const amount = p.getByLabel("Amount to withdraw (USDC)");
        const status = p.locator("[data-x402-signed-status]");

        await amount.fill("1.1234567");
        await p.getByRole("button", { name: "Sign and start withdrawal" }).click();
        await status.getByText(M.dashSignedAmount).waitFor();
        await amount.fill("4");
        await p.getByRole("button", { name: "Sign and start withdrawal" }).click();
        await p.getByText(M.x402WithdrawStartExceeds).waitFor();
        await settled(p);
        await p.getByLabel("Amount to withdraw (USDC)").fill("2");
        await p.getByRole("button", { name: "Sign and start withdrawal" }).click();
        await p.getByText(/Withdrawal of 2\.000000 USDC started: withdrawable from /).waitFor();
        assert.equal(await p.locator("[data-balance=withdrawing]").innerText(), "2.000000 USDC");
        await screenshot(p, "dash-x402-07-signed-start");

        await rt.client.request({ method: "evm_increaseTime" as never, params: [3601] as never });
        await rt.client.request({ method: "evm_mine" as never, params: [] as never });
        await p.goto(`${base}/dashboard/x402`);
        assert.equal(await p.locator("[data-balance=withdrawable]").innerText(), "2.000000 USDC");
        await settled(p);
        await p.getByLabel("Amount to withdraw (USDC)").fill("2");
        await p.getByRole("button", { name: "Sign and withdraw" }).click();
        await p.getByText(MF.x402Withdrawn("2.000000")).waitFor();
        assert.equal(await p.locator("[data-balance=withdrawing]").innerText(), "0.000000 USDC");
        assert.equal(await p.locator("[data-balance=available]").innerText(), "1.000000 USDC");
        assert.equal(await chain.usdcBalance(X402_PROFILE, payout), 2_000_000n);
        assert.equal(await rt.client.getBalance({ address: payout }), 0n, "never any gas");
        await screenshot(p, "dash-x402-08-signed-withdrawn");
        assert.deepEqual(seen, []);
        await ctx.close();
      },
    );

    assert.deepEqual(problems, []);
    await context.close();
  } finally {
    await browser.close();
    await upstream.shutdown();
    await svc.close();
  }
}));
