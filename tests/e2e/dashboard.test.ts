/**
 * The merchant dashboard in headless Chromium against the whole service: sign up, read the code
 * from a real SMTP server, verify (the key shown once), log out and in, create / revoke / rotate
 * keys through confirmation dialogs, link an external wallet by signing SIWE in an injected
 * EIP-1193 wallet, switch back to a managed wallet, replay a failed webhook delivery once the
 * receiver recovers, log out. Every page is screenshotted to test-output/screenshots/.
 */
import assert from "node:assert/strict";
import { Webhook } from "standardwebhooks";
import type { Page } from "playwright-core";
import { startTestService } from "../helpers/service.ts";
import { api } from "../helpers/accounts.ts";
import { startReceiver } from "../helpers/receiver.ts";
import { waitFor } from "../helpers/poll.ts";
import { startSmtp } from "../helpers/smtp.ts";
import { ANVIL_KEYS } from "../helpers/anvil.ts";
import { browserTest, launchBrowser, screenshot, watchPage } from "../helpers/browser.ts";
import { installWallet, normaliseChainId } from "../helpers/wallet-provider.ts";
import { M } from "../../src/http/messages.ts";
import { emit, getSecret, sweepDue } from "../../src/modules/webhooks/webhooks.service.ts";

/** Confirms (or cancels) the dashboard's <dialog>, checking what it asks. */
async function answerDialog(page: Page, expect: RegExp, answer: "ok" | "cancel") {
  const dialog = page.locator("#confirm-dialog");
  await dialog.waitFor({ state: "visible" });
  assert.match(await page.locator("#confirm-text").innerText(), expect);
  await dialog.getByRole("button", { name: answer === "ok" ? "Confirm" : "Cancel" }).click();
  await dialog.waitFor({ state: "hidden" });
}

Deno.test(browserTest("merchant dashboard in Chromium", async (t) => {
  const smtp = await startSmtp();
  const receiver = startReceiver();
  const svc = await startTestService({ env: { SMTP_URL: smtp.url, RATE_LIMITS: "off" } });
  const call = api(svc);
  const browser = await launchBrowser();
  try {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    await context.grantPermissions(["clipboard-read", "clipboard-write"], {
      origin: svc.baseUrl,
    });
    const page = await context.newPage();
    page.setDefaultTimeout(20_000);
    // Our forms answer 4xx with their inline errors; Chromium logs those loads. 5xx stays fatal.
    const problems = watchPage(page, {
      ignore: [/status of 4\d\d/, /net::ERR_ABORTED/],
    });
    const production = normaliseChainId(svc.deps.chain.chainId("production"));
    const wallet = await installWallet(page, {
      privateKey: ANVIL_KEYS[2],
      chains: {
        [production]: svc.deps.chain.runtime("production").rpcUrl,
        [normaliseChainId(svc.deps.chain.chainId("testnet"))]: svc.deps.chain.runtime("testnet")
          .rpcUrl,
      },
      initialChainId: production,
    });
    const base = svc.baseUrl;
    const email = "owner@dash.example";
    const password = "a long enough password";
    let merchantKey = "";
    const cookie = async () => {
      const c = (await context.cookies(base)).find((c) => c.name === "merchant_token");
      return c ? `merchant_token=${c.value}` : "";
    };

    await t.step("a visitor is sent to the login page; the skip link works", async () => {
      await page.goto(`${base}/dashboard/keys`);
      assert.equal(page.url(), `${base}/dashboard/login?next=%2Fdashboard%2Fkeys`);
      assert.equal(await page.title(), "Log in · Settlement");
      await page.keyboard.press("Tab");
      assert.equal(
        await page.evaluate("document.activeElement?.textContent"),
        "Skip to content",
      );
      await page.keyboard.press("Enter");
      assert.equal(await page.evaluate("document.activeElement?.id"), "main");
      await screenshot(page, "01-login");
    });

    await t.step("sign up", async () => {
      await page.getByRole("link", { name: "Create an account" }).click();
      await page.waitForURL(`${base}/dashboard/signup`);
      await page.getByLabel("Email", { exact: true }).fill(email);
      await page.getByLabel("Business name").fill("Dash Shop");
      await page.getByLabel("Password", { exact: true }).fill(password);
      await page.getByLabel("Payout wallet").selectOption("MANAGED");
      await screenshot(page, "02-signup");
      await page.getByRole("button", { name: "Create account" }).click();
      await page.getByRole("heading", { name: "Verify your email" }).waitFor();
      assert.equal(page.url(), `${base}/dashboard/verify`);
      assert.ok((await page.locator("main").innerText()).includes(M.codeSent));
      assert.equal(await page.getByLabel("Email", { exact: true }).inputValue(), email);
      await screenshot(page, "03-verify");
    });

    await t.step("verify: a wrong code inline, then the key shown once", async () => {
      const mail = await waitFor(() => smtp.inbox.find((m) => m.to === email), {
        what: "the verification mail",
      });
      const code = /code is ([A-Z0-9]{6})\./.exec(mail.raw.replace(/=\r?\n/g, ""))![1];
      await page.getByLabel("Verification code").fill("ZZZZZ9");
      await page.getByLabel("Password", { exact: true }).fill(password);
      await page.getByRole("button", { name: "Verify" }).click();
      await page.locator("#f-code-error").waitFor();
      assert.equal(await page.locator("#f-code-error").innerText(), M.invalidCode);
      assert.equal(await page.getByLabel("Verification code").getAttribute("aria-invalid"), "true");
      await screenshot(page, "04-verify-wrong-code");

      await page.getByLabel("Verification code").fill(code);
      await page.getByLabel("Password", { exact: true }).fill(password);
      await page.getByRole("button", { name: "Verify" }).click();
      await page.getByRole("heading", { name: "Your account is verified" }).waitFor();
      merchantKey = await page.locator("#merchant-key").inputValue();
      assert.match(merchantKey, /^svc_live_[0-9a-f]{48}$/);
      assert.ok((await page.locator("main").innerText()).includes(M.keyWarning));
      await page.getByRole("button", { name: /^Copy/ }).click();
      await page.getByRole("button", { name: /^Copied/ }).waitFor();
      assert.equal(await page.evaluate("navigator.clipboard.readText()"), merchantKey);
      const works = await call("GET", "/api/merchant/dashboard", {
        headers: { "x-api-key": merchantKey },
      });
      assert.equal(works.status, 200);
      await screenshot(page, "05-key-shown-once");
    });

    await t.step("continue signed in; the key is not shown again", async () => {
      await page.getByRole("link", { name: "Continue to your dashboard" }).click();
      await page.waitForURL(`${base}/dashboard`);
      await page.getByRole("heading", { name: "Overview" }).waitFor();
      assert.ok(!(await page.content()).includes(merchantKey));
      await page.getByRole("navigation", { name: "Dashboard sections" })
        .getByRole("link", { name: "API keys" }).click();
      await page.waitForURL(`${base}/dashboard/keys`);
      await page.getByRole("heading", { name: "API keys" }).waitFor();
      assert.ok(!(await page.content()).includes(merchantKey));
      assert.equal(
        await page.locator('nav a[aria-current="page"]').innerText(),
        "API keys",
      );
      await screenshot(page, "06-keys");
    });

    await t.step("log out, then log in again (a wrong password inline, `next` kept)", async () => {
      await page.getByRole("button", { name: "Log out" }).click();
      await page.waitForURL(`${base}/dashboard/login?loggedOut=1`);
      assert.ok((await page.locator("main").innerText()).includes(M.loggedOut));
      await page.goto(`${base}/dashboard/webhooks`);
      assert.equal(page.url(), `${base}/dashboard/login?next=%2Fdashboard%2Fwebhooks`);
      await page.getByLabel("Email", { exact: true }).fill(email);
      await page.getByLabel("Password", { exact: true }).fill("not my password");
      await page.getByRole("button", { name: "Log in" }).click();
      await page.locator("#f-password-error").waitFor();
      assert.equal(await page.locator("#f-password-error").innerText(), M.badLogin);
      await screenshot(page, "07-login-wrong-password");
      await page.getByLabel("Password", { exact: true }).fill(password);
      await page.getByRole("button", { name: "Log in" }).click();
      await page.waitForURL(`${base}/dashboard/webhooks`);
      await page.getByRole("heading", { name: "Webhooks" }).waitFor();
      // Section navigation swaps the main region and pushes the URL.
      await page.getByRole("navigation", { name: "Dashboard sections" })
        .getByRole("link", { name: "API keys" }).click();
      await page.waitForURL(`${base}/dashboard/keys`);
      await page.getByRole("heading", { name: "API keys" }).waitFor();
      assert.equal(await page.title(), "API keys · Settlement");
      assert.equal(await page.locator('nav a[aria-current="page"]').innerText(), "API keys");
    });

    let secretKey = "";
    await t.step("create a key (shown once), revoke it after a confirmation", async () => {
      await page.getByLabel("Type").selectOption("secret");
      await page.getByLabel("Environment").selectOption("test");
      await page.getByLabel("Label (optional)").fill("backend");
      await page.getByLabel("payments").check();
      await page.getByRole("button", { name: "Create key" }).click();
      await page.locator("#new-key").waitFor();
      secretKey = await page.locator("#new-key").inputValue();
      assert.match(secretKey, /^svc_sec_test_[0-9a-f]{48}$/);
      const row = page.locator("tr", { hasText: "backend" });
      assert.match(await row.innerText(), /active/);
      assert.match(await row.innerText(), /scopes: payments/);
      await screenshot(page, "08-key-created");

      await row.getByRole("button", { name: /^Revoke/ }).click();
      await answerDialog(page, /^Revoke backend \(svc_sec_test_/, "cancel");
      assert.match(await row.innerText(), /active/, "cancelling changes nothing");
      await row.getByRole("button", { name: /^Revoke/ }).click();
      await answerDialog(page, /stops working at once/, "ok");
      await page.getByText(M.keyRevoked).waitFor();
      assert.match(await page.locator("tr", { hasText: "backend" }).innerText(), /revoked/);
      assert.ok(!(await page.content()).includes(secretKey), "the key is gone from the page");
      const refused = await call("GET", "/api/merchant/dashboard", {
        headers: { "x-api-key": secretKey },
      });
      assert.equal(refused.status, 404);
      await screenshot(page, "09-key-revoked");
    });

    await t.step("rotate the merchant key", async () => {
      const row = page.locator("tr", { hasText: "Merchant" });
      await row.getByRole("button", { name: /^Rotate/ }).click();
      await answerDialog(page, /^Rotate svc_live_/, "ok");
      await page.getByRole("heading", { name: "Your new merchant key" }).waitFor();
      const rotated = await page.locator("#new-key").inputValue();
      assert.match(rotated, /^svc_live_[0-9a-f]{48}$/);
      assert.notEqual(rotated, merchantKey);
      const old = await call("GET", "/api/merchant/dashboard", {
        headers: { "x-api-key": merchantKey },
      });
      assert.equal(old.status, 404, "the old merchant key stops working");
      const fresh = await call("GET", "/api/merchant/dashboard", {
        headers: { "x-api-key": rotated },
      });
      assert.equal(fresh.status, 200);
      await screenshot(page, "10-key-rotated");
    });

    let managedAddress = "";
    await t.step("the wallet page: managed wallet and its USDC balances", async () => {
      const w = await call("GET", "/api/merchant/wallet", { cookie: await cookie() });
      managedAddress = (w.json.wallet as { walletAddress: string }).walletAddress;
      await svc.deps.chain.mintUsdc({
        profile: "production",
        to: managedAddress.toLowerCase() as `0x${string}`,
        amount: 12_500_000n,
      });
      await page.getByRole("navigation", { name: "Dashboard sections" })
        .getByRole("link", { name: "Wallets", exact: true }).click();
      await page.getByRole("heading", { name: "Payout wallet" }).waitFor();
      assert.equal(await page.locator("#wallet-address").inputValue(), managedAddress);
      assert.match(await page.getByTestId("wallet-provider").innerText(), /MANAGED/);
      await page.locator(`[data-chain-id="${svc.deps.chain.chainId("production")}"]`).waitFor();
      assert.equal(
        await page.locator(`[data-chain-id="${svc.deps.chain.chainId("production")}"]`).innerText(),
        "12.5 USDC",
      );
      // Live mode: the production chain's balance only, never testnet's.
      assert.equal(
        await page.locator(`[data-chain-id="${svc.deps.chain.chainId("testnet")}"]`).count(),
        0,
      );
      await screenshot(page, "11-wallet-managed");
    });

    await t.step("link an external wallet by signing in the browser wallet", async () => {
      wallet.rejectNext("personal_sign");
      await page.getByRole("button", { name: "Connect and sign" }).click();
      const status = page.locator("[data-wallet-status]");
      await status.getByText(M.dashWalletRejected).waitFor();
      await screenshot(page, "12-wallet-rejected");

      await page.getByRole("button", { name: "Connect and sign" }).click();
      await page.getByText(M.dashWalletLinked).waitFor();
      assert.match(await page.getByTestId("wallet-provider").innerText(), /EXTENSION_WALLET/);
      assert.equal(await page.locator("#wallet-address").inputValue(), wallet.address);
      assert.equal(await page.getByText("Managed wallet ID").count(), 0);
      const methods = wallet.requests.map((r) => r.method);
      assert.deepEqual(methods.filter((m) => m === "personal_sign").length, 2);
      assert.ok(methods.includes("eth_requestAccounts"));
      const w = await call("GET", "/api/merchant/wallet", { cookie: await cookie() });
      assert.deepEqual(w.json.wallet, {
        walletProvider: "EXTENSION_WALLET",
        walletAddress: wallet.address,
        managedWalletId: null,
      });
      await screenshot(page, "13-wallet-linked");
    });

    await t.step("switch back to a new managed wallet", async () => {
      await page.getByRole("button", { name: "Switch to a new managed wallet" }).click();
      await answerDialog(page, /new managed wallet/, "ok");
      await page.getByText(M.walletManagedCreated).waitFor();
      assert.match(await page.getByTestId("wallet-provider").innerText(), /MANAGED/);
      const address = await page.locator("#wallet-address").inputValue();
      assert.match(address, /^0x[0-9a-fA-F]{40}$/);
      assert.notEqual(address, wallet.address);
      assert.notEqual(address, managedAddress, "a brand-new wallet");
      await page.getByText("Managed wallet ID").waitFor();
      await screenshot(page, "14-wallet-new-managed");
    });

    await t.step("webhooks: a failed delivery, replayed once the receiver recovers", async () => {
      const me = await call("GET", "/api/merchant/me", { cookie: await cookie() });
      const merchantId = (me.json.merchant as { id: string }).id;
      receiver.respond = () => 500;
      const id = await svc.deps.sql.begin((tx) =>
        emit(svc.deps, tx, {
          merchantId,
          url: `${receiver.url}/hooks`,
          event: "payment.settled",
          payload: { reference: "pay_dash_1", amount: 12.5, currency: "USDC" },
        })
      );
      // The first attempt fails; then each retry falls due on the test clock until the last.
      await waitFor(async () => {
        const [row] = await svc.deps.sql<{ status: string; nextAttemptAt: Date | null }[]>`
          select status, next_attempt_at from webhook_deliveries where id = ${id}`;
        if (row.status === "undelivered") return true;
        if (row.status === "pending" && row.nextAttemptAt && receiver.received.length > 0) {
          const wait = row.nextAttemptAt.getTime() - svc.clock.now().getTime();
          if (wait > 0) svc.clock.advance(wait);
          await sweepDue(svc.deps);
        }
        return false;
      }, { what: "the delivery to be undelivered", timeoutMs: 30_000 });
      assert.equal(receiver.received.length, 4);

      await page.getByRole("navigation", { name: "Dashboard sections" })
        .getByRole("link", { name: "Webhooks" }).click();
      await page.getByRole("heading", { name: "Webhooks" }).waitFor();
      const row = page.locator(`#delivery-${id}`);
      assert.equal(await row.getAttribute("data-status"), "undelivered");
      assert.match(await row.innerText(), /payment\.settled/);
      assert.match(await row.innerText(), /pay_dash_1/);
      assert.match(await row.locator('[data-label="Last code"]').innerText(), /500/);
      await row.locator("summary").click();
      assert.equal(await row.locator(".history li").count(), 4);
      assert.match(await row.locator(".history li").first().innerText(), /failed · HTTP 500/);
      await screenshot(page, "15-webhooks-failed");

      // The signing secret: hidden, revealed, rolled after a confirmation.
      assert.equal(await page.locator("#secret-value").count(), 0);
      await page.getByRole("button", { name: "Reveal secret" }).click();
      await page.locator("#secret-value").waitFor();
      const before = await page.locator("#secret-value").inputValue();
      assert.equal(before, await getSecret(svc.deps, merchantId));
      await page.getByRole("button", { name: "Roll secret" }).click();
      await answerDialog(page, /^Roll the signing secret\?/, "ok");
      await page.getByText(M.dashSecretRolled).waitFor();
      const rolled = await page.locator("#secret-value").inputValue();
      assert.match(rolled, /^whsec_/);
      assert.notEqual(rolled, before);
      assert.equal(rolled, await getSecret(svc.deps, merchantId));
      await screenshot(page, "16-webhooks-secret-rolled");
      await page.getByRole("button", { name: "Hide secret" }).click();
      await page.getByRole("button", { name: "Reveal secret" }).waitFor();

      receiver.respond = () => 200;
      await row.getByRole("button", { name: /^Replay/ }).click();
      await page.getByText(`${M.dashReplayed} ${id}: delivered`, { exact: false }).waitFor();
      assert.equal(await page.locator(`#delivery-${id}`).getAttribute("data-status"), "delivered");
      assert.equal(receiver.received.length, 5);
      const last = receiver.received[4];
      assert.equal(last.headers["webhook-id"], id, "a replay keeps the webhook-id");
      // Signed with the new secret. (Webhook#verify would refuse the test clock's timestamp,
      // which runs ahead of real time after the retries above, so the signature is recomputed.)
      const at = new Date(Number(last.headers["webhook-timestamp"]) * 1000);
      const expected = new Webhook(rolled).sign(id, at, last.body);
      assert.ok(last.headers["webhook-signature"].split(" ").includes(expected));
      assert.equal(JSON.parse(last.body).event, "payment.settled");
      await screenshot(page, "17-webhooks-replayed");
    });

    await t.step("on a phone", async () => {
      await page.setViewportSize({ width: 390, height: 844 });
      for (const [path, name] of [["keys", "18-phone-keys"], ["webhooks", "19-phone-webhooks"]]) {
        await page.goto(`${base}/dashboard/${path}`);
        await page.locator("h1").waitFor();
        const overflow = await page.evaluate<number>(
          "document.documentElement.scrollWidth - document.documentElement.clientWidth",
        );
        assert.ok(overflow <= 1, `${path}: no sideways scrolling (${overflow}px)`);
        await screenshot(page, name);
      }
      await page.goto(`${base}/dashboard/wallet`);
      await page.locator("#balances .balances").waitFor();
      await screenshot(page, "20-phone-wallet");
      await page.setViewportSize({ width: 1280, height: 900 });
    });

    await t.step(
      "a form sent after logging out in another tab: said, and what was typed kept",
      async () => {
        await page.goto(`${base}/dashboard/keys`);
        await page.getByText("Create a key").click(); // its panel is closed once keys exist
        await page.getByLabel("Label (optional)").fill("typed before the logout");
        await page.getByLabel("Environment").selectOption("test");
        const other = await context.newPage();
        await other.goto(`${base}/dashboard`);
        await other.getByRole("button", { name: "Log out" }).click();
        await other.waitForURL(`${base}/dashboard/login?loggedOut=1`);
        await other.close();
        await page.getByRole("button", { name: "Create key" }).click();
        await page.waitForURL(`${base}/dashboard/login?next=%2Fdashboard%2Fkeys&ended=1`);
        assert.ok((await page.locator("main").innerText()).includes(M.sessionEnded));
        await page.getByLabel("Email", { exact: true }).fill(email);
        await page.getByLabel("Password", { exact: true }).fill(password);
        await page.getByRole("button", { name: "Log in" }).click();
        await page.waitForURL(`${base}/dashboard/keys`);
        await page.locator("#flash").getByText(M.dashDraftRestored).waitFor();
        assert.equal(
          await page.getByLabel("Label (optional)").inputValue(),
          "typed before the logout",
        );
        assert.equal(await page.getByLabel("Environment").inputValue(), "test");
        const [{ n }] = await svc.db.sql`
        select count(*)::int as n from api_keys where label = 'typed before the logout'`;
        assert.equal(n, 0, "nothing was created without a session");
        // Sent now, the draft is gone: the page shown again later starts empty.
        await page.getByRole("button", { name: "Create key" }).click();
        await page.getByText("typed before the logout").first().waitFor();
        await page.goto(`${base}/dashboard/keys`);
        await page.getByText("Create a key").click();
        assert.equal(await page.getByLabel("Label (optional)").inputValue(), "");
        await screenshot(page, "20b-session-ended-restored");
      },
    );

    await t.step("log out", async () => {
      await page.getByRole("button", { name: "Log out" }).click();
      await page.waitForURL(`${base}/dashboard/login?loggedOut=1`);
      await page.goto(`${base}/dashboard/wallet`);
      assert.equal(page.url(), `${base}/dashboard/login?next=%2Fdashboard%2Fwallet`);
      await screenshot(page, "21-logged-out");
    });

    assert.deepEqual(problems, [], "no script errors, CSP violations or failed requests");
  } finally {
    await browser.close();
    await svc.close();
    await receiver.close();
    await smtp.close();
  }
}));
