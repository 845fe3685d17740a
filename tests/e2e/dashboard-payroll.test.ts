/**
 * The dashboard's Payroll section in headless Chromium against the whole service: upload a CSV
 * with bad lines (each line's error in the preview, no run button), then a good one, run it and
 * watch its progress bar move from PROCESSING to COMPLETED (anvil's automining held off, then
 * released), the history with explorer links; and an external-wallet merchant sending its
 * pending sign requests from an injected browser wallet until the batch completes.
 * Screenshots: test-output/screenshots/payroll-*.png.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import type { Page } from "playwright-core";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { startTestService } from "../helpers/service.ts";
import { api, cookieFrom, createMerchant, type TestMerchant } from "../helpers/accounts.ts";
import { waitFor } from "../helpers/poll.ts";
import { rpc } from "../helpers/chain.ts";
import { browserTest, launchBrowser, screenshot, watchPage } from "../helpers/browser.ts";
import { installWallet, normaliseChainId } from "../helpers/wallet-provider.ts";

const P = "production";
const USDC = 1_000_000n;
const EXPECTED = [/status of 400 \(Bad Request\)/, /ERR_ABORTED/];

const fresh = () => privateKeyToAccount(generatePrivateKey()).address;

async function logIn(page: Page, base: string, m: TestMerchant) {
  await page.goto(`${base}/dashboard/payroll`);
  await page.getByLabel("Email", { exact: true }).fill(m.email);
  await page.getByLabel("Password", { exact: true }).fill(m.password);
  await page.getByRole("button", { name: "Log in" }).click();
  await page.getByRole("heading", { name: "Payroll", exact: true }).waitFor();
}

async function upload(page: Page, csv: string) {
  await page.getByLabel("CSV file").setInputFiles({
    name: "payroll.csv",
    mimeType: "text/csv",
    buffer: Buffer.from(csv),
  });
  await page.getByRole("button", { name: "Preview" }).click();
  await page.getByTestId("payroll-preview").waitFor();
}

Deno.test(
  browserTest("dashboard payroll in Chromium: CSV, run, progress, sign requests", async (t) => {
    const svc = await startTestService({ env: { RATE_LIMITS: "off" } });
    const browser = await launchBrowser();
    const chain = svc.deps.chain;
    const rpcUrl = chain.runtime(P).rpcUrl;
    try {
      const base = svc.baseUrl;

      await t.step("CSV preview, run, a moving progress bar, history", async () => {
        const m = await createMerchant(svc);
        await chain.mintUsdc({
          profile: P,
          to: m.walletAddress! as `0x${string}`,
          amount: 50n * USDC,
        });
        const page = await (await browser.newContext()).newPage();
        page.setDefaultTimeout(20_000);
        const problems = watchPage(page, { ignore: EXPECTED });
        await logIn(page, base, m);
        await page.getByText("No payroll batches yet.").waitFor();

        const a = fresh(), b = fresh(), c = fresh();
        await upload(
          page,
          `recipient,amount,label\n${a},1.5,Alice\n0x1234,2,Bob\n${b},1.1234567,\n`,
        );
        const checks = page.getByTestId("line-check");
        assert.equal(await checks.count(), 3);
        assert.equal(await checks.nth(0).innerText(), "OK");
        assert.match(await checks.nth(1).innerText(), /recipient must be a 0x address/);
        assert.match(await checks.nth(2).innerText(), /amount must be a USDC amount/);
        assert.equal(
          await page.locator("[data-line='3']").count(),
          1,
          "line numbers count the header",
        );
        assert.equal(await page.getByRole("button", { name: /Run payroll/ }).count(), 0);
        await screenshot(page, "payroll-preview-errors");

        // More than the payout wallet holds: said above the lines, and nothing to run.
        await page.getByRole("link", { name: "Start over" }).click();
        await upload(page, `${a},5000,Big\n`);
        assert.match(
          await page.getByRole("alert").innerText(),
          /holds 50\.000000 USDC; this file pays 5000\.000000 USDC/,
        );
        assert.equal(await page.getByRole("button", { name: /Run payroll/ }).count(), 0);

        await page.getByRole("link", { name: "Start over" }).click();
        await upload(page, `${a},1.5,Alice\n${b},2.25\n${c},3,Carol\n`);
        assert.match(
          await page.getByTestId("preview-summary").innerText(),
          /3 lines, all valid; total 6\.750000 USDC/,
        );
        assert.match(
          await page.getByTestId("preview-payer").innerText(),
          /Paid from the payout wallet 0x[0-9a-fA-F]{40}, holding 50\.000000 USDC\./,
        );

        // Held blocks: the batch stays PROCESSING (its permit waits for a block) until released.
        await rpc(rpcUrl, "evm_setAutomine", [false]);
        try {
          await page.getByRole("button", { name: /Run payroll \(6\.750000 USDC\)/ }).click();
          await page.getByText(/Payroll payroll_\S+ started\./).waitFor();
          const panel = page.locator("[data-batch]").first();
          await panel.getByText("PROCESSING").waitFor();
          assert.equal(await panel.getByTestId("payroll-progress").getAttribute("value"), "0");
          await screenshot(page, "payroll-processing");
        } finally {
          await rpc(rpcUrl, "evm_setAutomine", [true]);
          await rpc(rpcUrl, "evm_mine", []);
        }
        const panel = page.locator("[data-batch]").first();
        await panel.getByText("COMPLETED").waitFor({ timeout: 30_000 });
        assert.equal(await panel.getByTestId("payroll-progress").getAttribute("value"), "100");
        assert.match(
          await panel.getByTestId("payroll-counts").innerText(),
          /3 of 3: 3 paid, 0 failed/,
        );
        await panel.getByText("Recipients").click();
        const links = panel.getByRole("link", { name: "paid" });
        assert.equal(await links.count(), 3);
        assert.match(await links.first().getAttribute("href") ?? "", /\/tx\/0x[0-9a-f]{64}$/);
        assert.equal(await chain.usdcBalance(P, b), 2_250_000n);
        await screenshot(page, "payroll-completed");
        assert.deepEqual(problems, []);
      });

      await t.step(
        "external wallet: pending sign requests sent from the browser wallet",
        async () => {
          const e = await createMerchant(svc);
          const key = generatePrivateKey();
          const wallet = privateKeyToAccount(key);
          const call = api(svc);
          const ch = await call("GET", `/api/merchant/wallet/connect?address=${wallet.address}`, {
            cookie: e.cookie,
          });
          const message = ch.json.message as string;
          const linked = await call("POST", "/api/merchant/wallet/connect", {
            cookie: `${e.cookie}; ${cookieFrom(ch.headers, "wallet_connect_nonce")}`,
            body: {
              address: wallet.address,
              message,
              signature: await wallet.signMessage({ message }),
              walletKind: "EXTENSION_WALLET",
            },
          });
          assert.equal(linked.status, 200, linked.text);
          await chain.mintUsdc({ profile: P, to: wallet.address, amount: 10n * USDC });
          await chain.grantGas(P, wallet.address);
          const x = fresh(), y = fresh();
          const run = await call("POST", "/api/payroll/run", {
            headers: { "x-api-key": e.apiKey },
            body: {
              recipients: [{ recipientSCA: x, amount: "1" }, { recipientSCA: y, amount: "2" }],
            },
          });
          assert.equal(run.json.status, "AWAITING_SIGNATURES", run.text);

          const page = await (await browser.newContext()).newPage();
          page.setDefaultTimeout(20_000);
          const problems = watchPage(page, { ignore: EXPECTED });
          const production = normaliseChainId(chain.chainId(P));
          await installWallet(page, {
            privateKey: key,
            chains: { [production]: rpcUrl },
            initialChainId: production,
          });
          await logIn(page, base, e);
          const rows = page.locator("[data-sign-request]");
          assert.equal(await rows.count(), 2);
          await screenshot(page, "payroll-sign-requests");
          for (let i = 0; i < 2; i++) {
            await page.locator("[data-sign-send]").first().click();
            await page.getByText(/Payment verified on chain/).waitFor();
            await waitFor(
              async () => (await page.locator("[data-sign-request]").count()) === 1 - i,
              {
                what: "one request fewer",
              },
            );
          }
          await page.locator("[data-batch]").first().getByText("COMPLETED").waitFor();
          assert.equal(await chain.usdcBalance(P, x), USDC);
          assert.equal(await chain.usdcBalance(P, y), 2n * USDC);
          await screenshot(page, "payroll-signed");
          assert.deepEqual(problems, []);
        },
      );
    } finally {
      await browser.close();
      await svc.close();
    }
  }),
);
