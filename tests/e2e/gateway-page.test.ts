/**
 * /gateway, an outside payer's own page, in a real Chromium with an injected test wallet that
 * holds USDC and never any gas: connect, deposit (an EIP-3009 ReceiveWithAuthorization signed in
 * the wallet, relayed), refusals shown in place, and a withdrawal back to the wallet (the vault's
 * `Withdraw`, signed and relayed); then, on a vault with a delay, a start, and the withdrawal once
 * it matured. Screenshots go to test-output/screenshots/gateway-*.png.
 */
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { startTestService } from "../helpers/service.ts";
import { browserTest, launchBrowser, screenshot, watchPage } from "../helpers/browser.ts";
import { installWallet, normaliseChainId } from "../helpers/wallet-provider.ts";
import { useDelayedVault, X402_PROFILE } from "../helpers/x402.ts";
import { M } from "../../src/http/messages.ts";

const USDC = 1_000_000n;
/** Expected in the console: the refusals' 400 answers, shown in the page. */
const EXPECTED = [/status of 400 \(Bad Request\)/];

async function progress(page: Page, text: string | RegExp) {
  await page.locator("#progress").filter({ hasText: text }).waitFor({ timeout: 20_000 });
}

const balance = (page: Page, name: string) => page.locator(`[data-balance="${name}"]`).innerText();

Deno.test(browserTest("gateway page: a wallet with no gas deposits and withdraws", async (t) => {
  const svc = await startTestService({ env: { RATE_LIMITS: "off" } });
  const browser = await launchBrowser();
  try {
    const chain = svc.deps.chain;
    const rt = chain.runtime(X402_PROFILE);
    const key = generatePrivateKey();
    const address = privateKeyToAccount(key).address.toLowerCase() as `0x${string}`;
    await chain.mintUsdc({ profile: X402_PROFILE, to: address, amount: 5n * USDC });
    const page = await browser.newPage({ viewport: { width: 900, height: 1100 } });
    page.setDefaultTimeout(20_000);
    const problems = watchPage(page, { ignore: EXPECTED });
    const testnet = normaliseChainId(chain.chainId(X402_PROFILE));
    await installWallet(page, {
      privateKey: key,
      chains: { [testnet]: rt.rpcUrl },
      initialChainId: testnet,
    });

    await t.step("connect: the wallet's USDC, an empty gateway balance", async () => {
      await page.goto(`${svc.baseUrl}/gateway`);
      await page.getByRole("heading", { name: "Your x402 gateway balance" }).waitFor();
      await page.getByRole("button", { name: "Connect wallet" }).click();
      await progress(page, /Connected/);
      assert.equal(await balance(page, "wallet"), "5.000000 USDC");
      assert.equal(await balance(page, "available"), "0.000000 USDC");
      assert.equal(
        await page.getByRole("button", { name: "Sign and start withdrawal" }).count(),
        0,
      );
    });

    await t.step("deposit: too little refused in place, then 3 USDC relayed", async () => {
      await page.getByLabel("Amount to deposit (USDC, at least 1)").fill("0.5");
      await page.getByRole("button", { name: "Sign and deposit" }).click();
      await progress(page, M.x402RelayMinimum);
      await page.getByLabel("Amount to deposit (USDC, at least 1)").fill("3");
      await page.getByRole("button", { name: "Sign and deposit" }).click();
      await progress(page, "Deposited 3.000000 USDC.");
      assert.equal(await balance(page, "wallet"), "2.000000 USDC");
      assert.equal(await balance(page, "available"), "3.000000 USDC");
      await screenshot(page, "gateway-01-deposited");
    });

    await t.step("withdraw: more than there refused with what is, then 1 USDC back", async () => {
      await page.getByLabel("Amount to withdraw (USDC)").fill("4");
      await page.getByRole("button", { name: "Sign and withdraw" }).click();
      await progress(page, `${M.x402WithdrawExceeds} (3.000000 USDC)`);
      await page.getByLabel("Amount to withdraw (USDC)").fill("1");
      await page.getByRole("button", { name: "Sign and withdraw" }).click();
      await progress(page, /^Withdrew 1\.000000 USDC to 0x/);
      assert.equal(await balance(page, "wallet"), "3.000000 USDC");
      assert.equal(await balance(page, "available"), "2.000000 USDC");
      assert.equal(await balance(page, "withdrawable"), "2.000000 USDC");
      await screenshot(page, "gateway-02-withdrawn");
    });

    await t.step("a vault with a delay: start, then withdraw once it matured", async () => {
      await useDelayedVault(svc, 3600n, [address], 2n * USDC);
      await page.goto(`${svc.baseUrl}/gateway`);
      await page.getByRole("button", { name: "Connect wallet" }).click();
      await progress(page, /Connected/);
      assert.equal(await balance(page, "available"), "2.000000 USDC");
      await page.getByLabel("Amount to withdraw (USDC)").fill("2");
      await page.getByRole("button", { name: "Sign and start withdrawal" }).click();
      await progress(page, /^Withdrawal of 2\.000000 USDC started: withdrawable from /);
      assert.equal(await balance(page, "withdrawing"), "2.000000 USDC");
      assert.notEqual(await balance(page, "matures"), "—");
      await rt.client.request({ method: "evm_increaseTime" as never, params: [3601] as never });
      await rt.client.request({ method: "evm_mine" as never, params: [] as never });
      await page.getByRole("button", { name: "Sign and withdraw" }).click();
      await progress(page, /^Withdrew 2\.000000 USDC to 0x/);
      assert.equal(await balance(page, "wallet"), "5.000000 USDC");
      assert.equal(await balance(page, "withdrawing"), "0.000000 USDC");
      await screenshot(page, "gateway-03-delayed");
    });

    assert.equal(await rt.client.getBalance({ address }), 0n, "never any gas");
    assert.deepEqual(problems, []);
  } finally {
    await browser.close();
    await svc.close();
  }
}));
