/**
 * Live updates in Chromium: the checkout page turns to Paid when another process of the
 * deployment records the settlement (its event stream, no polling), the dashboard's overview
 * shows a new payment from its stream, and both fall back to polling when the stream fails or
 * the browser has no EventSource.
 */
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import { startTestService, type TestService } from "../helpers/service.ts";
import { api, createMerchant } from "../helpers/accounts.ts";
import { waitFor } from "../helpers/poll.ts";
import { browserTest, launchBrowser, watchPage } from "../helpers/browser.ts";
import { settleFromLog } from "../../src/modules/payments/payments.service.ts";

async function settle(svc: TestService, reference: string) {
  const [p] = await svc.deps.sql<{ chainId: number; payTo: string; amount: bigint }[]>`
    select chain_id, pay_to, amount from payments where reference = ${reference}`;
  await svc.deps.sql.begin((tx) =>
    settleFromLog(svc.deps, tx, {
      chainId: p.chainId,
      reference,
      payer: "0x00000000000000000000000000000000000000a1",
      payTo: p.payTo,
      amount: p.amount,
      txHash: `0x${crypto.randomUUID().replaceAll("-", "").padEnd(64, "0")}`,
      logIndex: 0,
      blockNumber: 1n,
    })
  );
}

async function liveState(page: Page, selector: string, want: string) {
  await waitFor(
    async () => (await page.locator(selector).getAttribute("data-live-state")) === want,
    { what: `${selector} to be ${want}` },
  );
}

/** The requests the page made to `path` (its refreshes), and those answered. */
function countRequests(page: Page, path: string) {
  const asked: string[] = [];
  const answered: string[] = [];
  page.on("request", (r) => new URL(r.url()).pathname === path && asked.push(r.url()));
  page.on("requestfinished", (r) => new URL(r.url()).pathname === path && answered.push(r.url()));
  return {
    asked,
    /** Exactly one asked and answered: the refresh on open read the database before what follows. */
    openRefreshDone: () => asked.length === 1 && answered.length === 1,
  };
}

Deno.test(browserTest("live updates in Chromium: SSE, and polling as the fallback", async (t) => {
  const svc = await startTestService({ env: { RATE_LIMITS: "off" } });
  const second = await startTestService({ sameDeploymentAs: svc, workers: false });
  const browser = await launchBrowser();
  try {
    const m = await createMerchant(svc, { businessName: "Live Shop" });
    const call = api(svc);
    const newPayment = async () => {
      const r = await call("POST", "/api/payments/initialize", {
        headers: { "x-api-key": m.apiKey },
        body: { amount: "2.5" },
      });
      assert.equal(r.status, 201, r.text);
      return (r.json.data as { reference?: string })?.reference ?? (r.json.reference as string);
    };

    /**
     * The merchant's overview in a new page, signed in, its stream open and its refresh on open
     * asked and answered (its answer read the database before what follows), none in flight;
     * `polls` lists the overview's refreshes.
     */
    const openOverview = async () => {
      const page = await browser.newPage();
      const problems = watchPage(page);
      const polls: string[] = [];
      const answered: string[] = [];
      const isLive = (url: string) => new URL(url).pathname === "/dashboard/overview/live";
      page.on("request", (r) => isLive(r.url()) && polls.push(r.url()));
      page.on("requestfinished", (r) => isLive(r.url()) && answered.push(r.url()));
      await page.goto(`${svc.baseUrl}/dashboard`);
      await page.getByLabel("Email", { exact: true }).fill(m.email);
      await page.getByLabel("Password", { exact: true }).fill(m.password);
      await page.getByRole("button", { name: "Log in" }).click();
      await page.waitForURL(`${svc.baseUrl}/dashboard`);
      await liveState(page, "#overview-live", "streaming");
      await waitFor(() => answered.length >= 1 && answered.length === polls.length, {
        what: "the refresh on open",
      });
      return { page, problems, polls };
    };

    await t.step("checkout: another process's settlement shows Paid from the stream", async () => {
      const ref = await newPayment();
      const page = await browser.newPage();
      const problems = watchPage(page);
      const statusRequests = countRequests(page, `/checkout/${ref}/status`);
      await page.goto(`${svc.baseUrl}/checkout/${ref}`);
      await liveState(page, "#status", "streaming");
      // The refresh on open (whatever changed before the stream was open) and nothing else.
      await waitFor(statusRequests.openRefreshDone, { what: "the refresh on open" });
      await settle(second, ref);
      await page.getByRole("heading", { name: "Paid" }).waitFor({ timeout: 10_000 });
      assert.equal(await page.locator("#status").getAttribute("data-status"), "SUCCESS");
      assert.equal(statusRequests.asked.length, 2, "one refresh per event: no polling");
      await page.close();
      assert.deepEqual(problems, []);
    });

    await t.step("checkout: a failing stream falls back to polling", async () => {
      const ref = await newPayment();
      const page = await browser.newPage();
      const problems = watchPage(page, { ignore: [/503 \(Service Unavailable\)/] });
      await page.route(`**/checkout/${ref}/events`, (route) => route.fulfill({ status: 503 }));
      await page.goto(`${svc.baseUrl}/checkout/${ref}`);
      await liveState(page, "#status", "polling");
      await settle(second, ref);
      await page.getByRole("heading", { name: "Paid" }).waitFor({ timeout: 10_000 });
      await page.close();
      assert.deepEqual(problems, []);
    });

    await t.step("checkout: a browser without EventSource polls", async () => {
      const ref = await newPayment();
      const page = await browser.newPage();
      const problems = watchPage(page);
      await page.addInitScript("delete globalThis.EventSource");
      await page.goto(`${svc.baseUrl}/checkout/${ref}`);
      await liveState(page, "#status", "polling");
      await settle(second, ref);
      await page.getByRole("heading", { name: "Paid" }).waitFor({ timeout: 10_000 });
      await page.close();
      assert.deepEqual(problems, []);
    });

    await t.step("dashboard: the overview shows a new payment from its stream", async () => {
      // Made before the page opens, so their creation events are long past.
      const pending = await newPayment();
      const other = await newPayment();
      const { page, problems, polls } = await openOverview();
      const before = polls.length;
      const ref = await newPayment();
      await page.locator("#overview-live").getByText(ref).waitFor({ timeout: 10_000 });
      assert.equal(polls.length, before + 1, "one refresh for the one event");
      await settle(second, ref);
      await page.locator(`#overview-live [data-reference="${ref}"][data-status="SUCCESS"]`)
        .waitFor({ timeout: 10_000 });

      // A pending payment's own page: its status panel follows that payment's events only.
      const detail = countRequests(page, `/dashboard/payments/${pending}/status`);
      await page.goto(`${svc.baseUrl}/dashboard/payments/${pending}`);
      await liveState(page, "#payment-status", "streaming");
      await waitFor(detail.openRefreshDone, { what: "the refresh on open" });
      await settle(second, other);
      await settle(second, pending);
      await page.locator('#payment-status[data-status="SUCCESS"]').waitFor({ timeout: 10_000 });
      assert.equal(
        detail.asked.length,
        2,
        "its settlement asked once; the other payment's, never",
      );
      await page.close();
      assert.deepEqual(problems, []);
    });

    await t.step(
      "dashboard: an event that arrives while a refresh is in flight survives the panel's swap",
      async () => {
        const { page, problems } = await openOverview();
        await page.evaluate(`globalThis.deferredAt = 0;
          document.addEventListener("live:deferred", () => globalThis.deferredAt = Date.now());`);
        // The next refresh is read at once (the first new payment only) and answered only
        // once the second payment's event has reached the page and been put off: the answer
        // replaces the panel, which htmx processes a settle later.
        const fetched = Promise.withResolvers<void>();
        const release = Promise.withResolvers<void>();
        await page.route("**/dashboard/overview/live*", async (route) => {
          const response = await route.fetch();
          fetched.resolve();
          await release.promise;
          await route.fulfill({ response });
        }, { times: 1 });
        const first = await newPayment();
        await fetched.promise;
        const next = await newPayment();
        await waitFor(
          async () => await page.evaluate("globalThis.deferredAt") as number > 0,
          { what: "the second payment's event put off behind the held refresh" },
        );
        // Past the page's burst throttle (250 ms), so the event is asked again as soon as
        // the held answer is in, while the new panel is still unprocessed.
        await waitFor(
          async () => await page.evaluate("Date.now() - globalThis.deferredAt") as number > 300,
          { what: "the throttle's window to pass" },
        );
        release.resolve();
        const panel = page.locator("#overview-live");
        await panel.getByText(first).waitFor({ timeout: 10_000 });
        await panel.getByText(next).waitFor({ timeout: 10_000 });
        // The swapped-in panel is given the stream's state when htmx has processed it (live.js
        // `scan` on htmx:load), a tick after its text is in the page.
        const state = await waitFor(
          async () => await panel.getAttribute("data-live-state") ?? undefined,
          { what: "the new panel's live state" },
        );
        assert.equal(state, "streaming", "no polling");
        await page.close();
        assert.deepEqual(problems, []);
      },
    );
  } finally {
    await browser.close();
    await second.close();
    await svc.close();
  }
}));
