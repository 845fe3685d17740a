/**
 * The dashboard's payment pages in headless Chromium against the whole service: log in, create a
 * payment link (inline errors first, keyboard submit, copy, QR code), pay it on the hosted
 * checkout page from an injected test wallet in a second tab, watch the Overview turn it to
 * SUCCESS and its totals change without a reload, open the payment's page and replay its
 * webhook, filter and search the Payments table, and look at every page on a phone. Every page
 * is screenshotted to test-output/screenshots/dash-2-*.png.
 */
import assert from "node:assert/strict";
import type { Locator, Page } from "playwright-core";
import { startTestService } from "../helpers/service.ts";
import { api, createMerchant } from "../helpers/accounts.ts";
import { startReceiver } from "../helpers/receiver.ts";
import { waitFor } from "../helpers/poll.ts";
import { ANVIL_KEYS } from "../helpers/anvil.ts";
import { browserTest, launchBrowser, screenshot, watchPage } from "../helpers/browser.ts";
import { installWallet, normaliseChainId } from "../helpers/wallet-provider.ts";
import { M } from "../../src/http/messages.ts";

/** Expected in the console: the link form's 400 answers (inline errors), and a poll cut short
 * by a navigation. Anything else (CSP violations, script errors, 5xx) is a failure. */
const EXPECTED = [
  /status of 400 \(Bad Request\)/,
  /requestfailed: GET \S+\/dashboard\/(overview\/live|payments\/\S+\/status)\?v=\S+ net::ERR_ABORTED/,
];

async function noSidewaysScroll(page: Page, what: string) {
  const overflow = await page.evaluate<number>(
    "document.documentElement.scrollWidth - document.documentElement.clientWidth",
  );
  assert.ok(overflow <= 1, `${what}: no sideways scrolling (${overflow}px)`);
}

/** The image has loaded and decoded (an SVG from our origin, allowed by the CSP). */
async function imageLoaded(img: Locator) {
  await waitFor(() =>
    img.evaluate((el) => {
      const i = el as unknown as { complete: boolean; naturalWidth: number };
      return i.complete && i.naturalWidth > 0;
    }), { what: "the QR image" });
}

/** htmx has swapped the new content in and wired it up (its settle step drops `htmx-added`);
 * before that, a form's events would go unheard. */
async function settled(page: Page) {
  await waitFor(async () => (await page.locator(".htmx-added").count()) === 0, {
    what: "htmx to settle",
  });
}

function nav(page: Page, name: string) {
  return page.getByRole("navigation", { name: "Dashboard sections" }).getByRole("link", { name });
}

Deno.test(browserTest("dashboard payments in Chromium: link, pay, settle live", async (t) => {
  const receiver = startReceiver();
  const svc = await startTestService({ env: { RATE_LIMITS: "off" } });
  const browser = await launchBrowser();
  try {
    const m = await createMerchant(svc, { businessName: "Teapot Shop" });
    const production = normaliseChainId(svc.deps.chain.chainId("production"));
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    await context.grantPermissions(["clipboard-read", "clipboard-write"], {
      origin: svc.baseUrl,
    });
    const page = await context.newPage();
    page.setDefaultTimeout(20_000);
    const problems = watchPage(page, { ignore: EXPECTED });
    const base = svc.baseUrl;
    let reference = "";
    let checkoutUrl = "";

    await t.step("log in; a new merchant's overview is empty", async () => {
      await page.goto(`${base}/dashboard`);
      assert.equal(page.url(), `${base}/dashboard/login?next=%2Fdashboard`);
      await page.getByLabel("Email", { exact: true }).fill(m.email);
      await page.getByLabel("Password", { exact: true }).fill(m.password);
      await page.getByRole("button", { name: "Log in" }).click();
      await page.waitForURL(`${base}/dashboard`);
      await page.getByRole("heading", { name: "Overview" }).waitFor();
      assert.equal(await page.title(), "Overview · Settlement");
      assert.equal(await page.locator('nav a[aria-current="page"]').innerText(), "Overview");
      await page.getByText("No payments yet.").waitFor();
      await settled(page);
      assert.equal(await page.locator("[data-stat=totalPayments]").getAttribute("data-value"), "0");
      assert.equal(await page.locator(".volume-chart rect.bar-zero").count(), 30);
      // The chart is an image with a title and a description; its numbers are a table.
      const chart = page.getByRole("img", { name: /Daily settled volume in USDC/ });
      assert.match(
        await chart.getAttribute("aria-labelledby") ?? "",
        /chart-title chart-desc/,
      );
      await screenshot(page, "dash-2-01-overview-empty");
    });

    await t.step(
      "create a payment link: inline errors, then the link with copy and QR",
      async () => {
        await nav(page, "Payment links").click();
        await page.waitForURL(`${base}/dashboard/links`);
        await page.getByRole("heading", { name: "Payment links", level: 1 }).waitFor();
        await settled(page);
        await page.getByText("No payment links yet.").waitFor();
        await page.getByLabel("Amount (USDC)").fill("12,50");
        await page.getByLabel("Webhook URL (optional)").fill("ftp://hooks.example/x");
        await page.getByRole("button", { name: "Create link" }).click();
        await page.locator("#f-amount-error").waitFor();
        assert.equal(await page.locator("#f-amount-error").innerText(), M.paymentAmount);
        assert.equal(await page.locator("#f-webhookUrl-error").innerText(), M.webhookUrlInvalid);
        assert.equal(await page.getByLabel("Amount (USDC)").getAttribute("aria-invalid"), "true");
        // Focus goes to the first invalid field.
        assert.equal(await page.evaluate("document.activeElement?.id"), "f-amount");
        await screenshot(page, "dash-2-02-links-invalid");

        // Fix it with the keyboard and submit with Enter.
        await page.keyboard.press("ControlOrMeta+a");
        await page.keyboard.type("42.50");
        await page.keyboard.press("Tab");
        await page.keyboard.type("Order #7 — a teapot");
        await page.keyboard.press("Tab");
        await page.keyboard.press("ControlOrMeta+a");
        await page.keyboard.type(`${receiver.url}/hook`);
        await page.keyboard.press("Enter");
        await page.locator("#created-link").waitFor();
        assert.ok((await page.locator("main").innerText()).includes(M.dashLinkCreated));
        reference = (await page.locator("#created-link").getAttribute("data-reference"))!;
        assert.match(reference, /^pay_ref_[0-9A-Za-z]{20}$/);
        checkoutUrl = await page.locator("#new-link-url").inputValue();
        assert.equal(checkoutUrl, `${base}/checkout/${reference}`);
        await page.locator("#created-link").getByRole("button", { name: /^Copy/ }).click();
        await page.locator("#created-link").getByRole("button", { name: /^Copied/ }).waitFor();
        assert.equal(await page.evaluate("navigator.clipboard.readText()"), checkoutUrl);
        // The QR code is an SVG from our origin and decodes as an image.
        await imageLoaded(page.locator("#created-link img.qr-image"));
        const row = page.locator(`#links-table tr[data-reference="${reference}"]`);
        assert.equal(await row.getAttribute("data-status"), "PENDING");
        assert.match(await row.innerText(), /42\.50/);
        assert.match(await row.innerText(), /Order #7 — a teapot/);
        await page.evaluate("navigator.clipboard.writeText('')");
        await row.getByRole("button", { name: `Copy the link of ${reference}` }).click();
        assert.equal(await page.evaluate("navigator.clipboard.readText()"), checkoutUrl);
        await row.locator("summary").click();
        await row.locator("details.qr img").waitFor();
        await imageLoaded(row.locator("details.qr img"));
        await screenshot(page, "dash-2-03-link-created");
      },
    );

    // A second payment so the filters have something to tell apart.
    const other = await api(svc)("POST", "/api/merchant/payment-link", {
      cookie: m.cookie,
      body: { amount: "5", description: "Spare lid" },
    });
    assert.equal(other.status, 201);
    const otherRef = other.json.reference as string;

    let navigations = 0;
    await t.step("the overview lists the link as pending", async () => {
      await nav(page, "Overview").click();
      await page.waitForURL(`${base}/dashboard`);
      const row = page.locator(`#recent-payments tr[data-reference="${reference}"]`);
      await row.waitFor();
      await settled(page);
      assert.equal(await row.getAttribute("data-status"), "PENDING");
      assert.equal(await page.locator("[data-stat=totalPayments]").getAttribute("data-value"), "2");
      assert.equal(await page.locator("[data-stat=totalVolume]").getAttribute("data-value"), "0");
      await page.evaluate("window.__sameDocument = true");
      page.on("framenavigated", (f) => {
        if (f === page.mainFrame()) navigations++;
      });
    });

    // A second tab of the merchant on the links list, open while the link is paid.
    const linksTab = await context.newPage();
    await linksTab.goto(`${base}/dashboard/links`);
    await linksTab.locator(`#links-table tr[data-reference="${reference}"][data-status="PENDING"]`)
      .waitFor();

    let paidAt = 0;
    await t.step("pay the link on the checkout page from a test wallet", async () => {
      const payerPage = await context.newPage();
      const payerProblems = watchPage(payerPage);
      const wallet = await installWallet(payerPage, {
        privateKey: ANVIL_KEYS[2],
        chains: { [production]: svc.deps.chain.runtime("production").rpcUrl },
        initialChainId: production,
      });
      await svc.deps.chain.mintUsdc({
        profile: "production",
        to: wallet.address.toLowerCase() as `0x${string}`,
        amount: 100_000_000n,
      });
      await payerPage.goto(checkoutUrl);
      assert.equal(await payerPage.locator("h1.amount").textContent(), "42.50 USDC");
      await payerPage.getByRole("button", { name: "Pay with wallet" }).click();
      await payerPage.locator("#status[data-status=SUCCESS]").waitFor({ timeout: 30_000 });
      paidAt = Date.now();
      await screenshot(payerPage, "dash-2-04-checkout-paid");
      assert.deepEqual(payerProblems, []);
      await payerPage.close();
    });

    await t.step("the overview turns it to SUCCESS and the totals change, no reload", async () => {
      await page.bringToFront();
      const row = page.locator(
        `#recent-payments tr[data-reference="${reference}"][data-status="SUCCESS"]`,
      );
      await row.waitFor({ timeout: 15_000 }).catch(async (e) => {
        // Seen once in CI: the SUCCESS event had come while the refresh for the relay's event
        // was in flight, and was asked again on the panel that refresh swapped in before htmx
        // processed it (live.js, fixed; tests/e2e/live-sse.test.ts holds that refresh). Should
        // an update be lost again, this says what the page's panel and the server knew.
        const panel = page.locator("#overview-live");
        const shown = await page.locator(`#recent-payments tr[data-reference="${reference}"]`)
          .getAttribute("data-status").catch(() => "absent");
        const links = await api(svc)("GET", "/api/merchant/payment-link", { cookie: m.cookie });
        const list = (links.json?.links ?? []) as { reference: string; status: string }[];
        const onServer = list.find((l) => l.reference === reference)?.status;
        throw new Error(
          `${e}\nthe panel: live state ${await panel.getAttribute(
            "data-live-state",
          )}, version ${await panel
            .getAttribute("data-version")}, row ${shown}; the server: ${onServer}`,
        );
      });
      const seenAfter = Date.now() - paidAt;
      console.log(`overview showed SUCCESS ${seenAfter} ms after the checkout page did`);
      // The links list turned too, without a reload (it showed Pending until one: an audit).
      await linksTab.locator(
        `#links-table tr[data-reference="${reference}"][data-status="SUCCESS"]`,
      ).waitFor({ timeout: 15_000 });
      await linksTab.close();
      assert.equal(
        await page.locator("[data-stat=totalVolume]").getAttribute("data-value"),
        "42.5",
      );
      assert.match(await page.locator("[data-stat=totalVolume]").innerText(), /^42\.50\s*USDC$/);
      assert.equal(await page.locator("[data-stat=successRate]").getAttribute("data-value"), "50");
      assert.equal(await page.locator(".volume-chart rect.bar").count(), 1);
      assert.equal(
        await page.locator(".volume-chart rect.bar").getAttribute("data-volume"),
        "42.5",
      );
      assert.equal(await page.evaluate("window.__sameDocument"), true, "the page never reloaded");
      assert.equal(navigations, 0);
      // The API's profile says the same.
      const me = await api(svc)("GET", "/api/merchant/me", { cookie: m.cookie });
      assert.deepEqual(me.json.stats, {
        totalPayments: 2,
        successfulPayments: 1,
        totalVolume: 42.5,
        successRate: 50,
      });
      await page.locator(".chart-data summary").click();
      await screenshot(page, "dash-2-05-overview-settled");
    });

    await t.step("the payment's page: timeline, payer, explorer link, webhook replay", async () => {
      await waitFor(() => receiver.received.find((r) => r.path === "/hook"), {
        what: "the payment.settled webhook",
      });
      await page.locator("#recent-payments").getByRole("link", { name: reference }).click();
      await page.waitForURL(`${base}/dashboard/payments/${reference}`);
      await page.getByRole("heading", { name: "42.50 USDC" }).waitFor();
      await settled(page);
      assert.equal(await page.locator("main#main > section.payment-detail").count(), 1);
      assert.equal(await page.locator("#payment-status").getAttribute("data-status"), "SUCCESS");
      assert.equal(await page.locator(".timeline [data-step]").count(), 2);
      assert.match(
        await page.locator(".timeline").innerText(),
        /Payment link created[\s\S]*Settled/,
      );
      const payer = await page.getByTestId("payer").innerText();
      assert.match(payer, /^0x[0-9a-fA-F]{40}$/);
      const hash = await page.getByTestId("tx-hash").innerText();
      assert.equal(
        await page.getByRole("link", { name: "View in the explorer" }).getAttribute("href"),
        `${base}/explorer/production/tx/${hash}`,
      );
      assert.equal(await page.locator("#checkout-url").inputValue(), checkoutUrl);
      const delivery = page.locator("#payment-deliveries tr[data-status=delivered]");
      assert.equal(await delivery.count(), 1);
      assert.match(await delivery.innerText(), /payment\.settled/);
      await screenshot(page, "dash-2-06-payment-detail");

      // Replay with the keyboard; the result is announced and focused.
      await delivery.getByRole("button", { name: /^Replay/ }).focus();
      await page.keyboard.press("Enter");
      const notice = page.locator("#payment-deliveries .notice.ok");
      await notice.waitFor();
      assert.match(
        await notice.innerText(),
        new RegExp(`^${M.dashReplayed} msg_\\w+: delivered \\(HTTP 200\\)\\.$`),
      );
      assert.equal(
        await page.evaluate("document.activeElement?.classList.contains('notice')"),
        true,
      );
      assert.equal(receiver.received.filter((r) => r.path === "/hook").length, 2);
      await screenshot(page, "dash-2-07-payment-replayed");
    });

    await t.step("the payments table: filter by status, search by reference", async () => {
      await nav(page, "Payments").click();
      await page.waitForURL(`${base}/dashboard/payments`);
      await page.getByRole("heading", { name: "Payments", level: 1 }).waitFor();
      await settled(page);
      const rows = page.locator("#payments-table tbody tr[data-reference]");
      assert.equal(await rows.count(), 2);
      await page.getByLabel("Status").selectOption("SUCCESS");
      await waitFor(async () => (await rows.count()) === 1);
      // The URL follows the filter, so it can be shared and reloaded.
      await waitFor(() => /[?&]status=SUCCESS(&|$)/.test(page.url()), { what: "the pushed URL" });
      assert.equal(await rows.first().getAttribute("data-reference"), reference);
      assert.match(await rows.first().innerText(), /Settle\b/);
      await page.getByLabel("Status").selectOption("");
      await waitFor(async () => (await rows.count()) === 2);
      // Typing searches after a pause; focus stays in the box.
      const search = page.getByRole("searchbox", { name: "Search by reference" });
      await search.click();
      await page.keyboard.type(otherRef.slice(-10).toLowerCase());
      await waitFor(async () =>
        (await rows.count()) === 1 &&
        (await rows.first().getAttribute("data-reference")) === otherRef
      );
      assert.equal(await page.evaluate("document.activeElement?.id"), "p-reference");
      await screenshot(page, "dash-2-08-payments-search");
      await search.fill("");
      await waitFor(async () => (await rows.count()) === 2);
      await screenshot(page, "dash-2-09-payments");

      // A page at a time: "Load more" appends the next rows and focuses the first of them.
      await page.goto(`${base}/dashboard/payments?limit=1`);
      assert.equal(await rows.count(), 1);
      await page.getByRole("link", { name: "Load more payments" }).click();
      await waitFor(async () => (await rows.count()) === 2);
      assert.equal(await page.locator("#load-more").count(), 0, "no third page");
      assert.equal(page.url(), `${base}/dashboard/payments?limit=1`, "the URL stays");
      assert.equal(
        await page.evaluate("document.activeElement?.textContent"),
        await rows.nth(1).getAttribute("data-reference"),
      );
    });

    await t.step("on a phone", async () => {
      await page.setViewportSize({ width: 390, height: 844 });
      const pages: [string, string][] = [
        ["/dashboard", "dash-2-10-phone-overview"],
        ["/dashboard/payments", "dash-2-11-phone-payments"],
        ["/dashboard/links", "dash-2-12-phone-links"],
        [`/dashboard/payments/${reference}`, "dash-2-13-phone-payment"],
      ];
      for (const [path, name] of pages) {
        await page.goto(`${base}${path}`);
        await page.locator("h1").waitFor();
        await noSidewaysScroll(page, path);
        await screenshot(page, name);
      }
      await page.setViewportSize({ width: 1280, height: 900 });
    });

    assert.deepEqual(problems, [], "no script errors, CSP violations or failed requests");
  } finally {
    await browser.close();
    await svc.close();
    await receiver.close();
  }
}));
