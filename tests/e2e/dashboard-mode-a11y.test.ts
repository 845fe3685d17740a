/**
 * Test mode and accessibility in headless Chromium against the whole service.
 *
 * - The header's switch: test mode persists across navigation, belongs to the session (another
 *   session of the same merchant stays live), shows a banner on every page; a test-mode page
 *   never shows a live record and a live-mode page never a test one; test mode's payments are
 *   exactly what a test key sees through the API.
 * - axe-core (its source injected into the page) over every dashboard page in both modes, plus
 *   checkout, login, signup, verify, /bridge, /gateway and the 404 pages: 0 violations.
 */
import assert from "node:assert/strict";
import axe from "axe-core";
import type { BrowserContext, Page } from "playwright-core";
import { startTestService } from "../helpers/service.ts";
import { api, createMerchant, type TestMerchant } from "../helpers/accounts.ts";
import { waitFor } from "../helpers/poll.ts";
import { browserTest, launchBrowser, screenshot } from "../helpers/browser.ts";

const AXE_SOURCE: string = (axe as unknown as { source: string }).source;

interface Violation {
  id: string;
  impact: string | null;
  help: string;
  nodes: string[];
}

/**
 * Runs axe-core (every rule it runs by default: WCAG A/AA and best practices) over the page as it
 * is; every violation with its first few nodes, and how many rules passed (it did run).
 */
async function axeViolations(page: Page): Promise<{ violations: Violation[]; passed: number }> {
  if (!(await page.evaluate("typeof window.axe !== 'undefined'"))) {
    await page.evaluate(AXE_SOURCE);
  }
  return await page.evaluate<{ violations: Violation[]; passed: number }>(`
    axe.run(document).then((r) => ({
      passed: r.passes.length,
      violations: r.violations.map((v) => ({
        id: v.id,
        impact: v.impact,
        help: v.help,
        nodes: v.nodes.slice(0, 3).map((n) => n.target.join(" ")),
      })),
    }))`);
}

const audited: string[] = [];

/** Opens `path` (a full page load) and returns axe's violations, labelled with the page. */
async function audit(page: Page, base: string, path: string, ready?: string): Promise<string[]> {
  await page.goto(`${base}${path}`);
  await page.locator(ready ?? "main h1").first().waitFor();
  // Panels that load after the page (balances) settle first.
  await waitFor(async () => (await page.locator('[aria-busy="true"]').count()) === 0, {
    what: `${path}: panels loaded`,
  });
  const { violations, passed } = await axeViolations(page);
  assert.ok(passed > 10, `${path}: axe ran (${passed} rules passed)`);
  audited.push(path);
  return violations.map((v) => `${path}: ${v.id} (${v.impact}) ${v.help} at ${v.nodes.join(", ")}`);
}

async function logIn(context: BrowserContext, base: string, m: TestMerchant): Promise<Page> {
  const page = await context.newPage();
  page.setDefaultTimeout(20_000);
  await page.goto(`${base}/dashboard/login`);
  await page.getByLabel("Email", { exact: true }).fill(m.email);
  await page.getByLabel("Password", { exact: true }).fill(m.password);
  await page.getByRole("button", { name: "Log in" }).click();
  await page.waitForURL(`${base}/dashboard`);
  return page;
}

/** The payment references a page shows (rows and cards carry `data-reference`). */
async function refsOn(page: Page): Promise<string[]> {
  const html = await page.content();
  return [...new Set([...html.matchAll(/pay_ref_[A-Za-z0-9]+/g)].map((m) => m[0]))];
}

Deno.test(
  browserTest("dashboard test mode and axe-core over every page, both modes", async (t) => {
    const svc = await startTestService({ env: { RATE_LIMITS: "off" } });
    const browser = await launchBrowser();
    const call = api(svc);
    const base = svc.baseUrl;
    try {
      const m = await createMerchant(svc);
      const keyOf = async (environment: "test" | "live") => {
        const r = await call("POST", "/api/keys", {
          cookie: m.cookie,
          body: { type: "secret", environment },
        });
        assert.equal(r.status, 201, r.text);
        return (r.json.key as { key: string }).key;
      };
      const testKey = await keyOf("test");
      const liveKey = await keyOf("live");
      const initialize = async (key: string, description: string) => {
        const r = await call("POST", "/api/payments/initialize", {
          headers: { "x-api-key": key },
          body: { amount: "2.5", description },
        });
        assert.equal(r.status, 201, r.text);
        return r.json.reference as string;
      };
      const liveRef = await initialize(liveKey, "Live order");
      const testRef = await initialize(testKey, "Test order");
      const listed = async (key: string) => {
        const r = await call("GET", "/api/payments", { headers: { "x-api-key": key } });
        assert.equal(r.status, 200, r.text);
        return (r.json.data as { reference: string }[]).map((p) => p.reference).sort();
      };
      assert.deepEqual(await listed(testKey), [testRef]);
      assert.deepEqual(await listed(liveKey), [liveRef]);

      const context = await browser.newContext();
      const page = await logIn(context, base, m);
      const sections = await page.locator("#nav a").evaluateAll((as) =>
        as.map((a) => a.getAttribute("href")!)
      );
      assert.ok(sections.includes("/dashboard/wallets"));
      assert.ok(!sections.includes("/dashboard/wallet"), "one Wallets entry");
      const switchButton = page.getByRole("switch", { name: "Test mode" });
      const banner = page.locator("#test-banner");

      await t.step("live mode: no banner, live records only, as the live key sees", async () => {
        assert.equal(await switchButton.getAttribute("aria-checked"), "false");
        assert.equal(await banner.count(), 0);
        for (const path of ["/dashboard", "/dashboard/payments", "/dashboard/links"]) {
          await page.goto(`${base}${path}`);
          assert.ok(!(await refsOn(page)).includes(testRef), `${path} shows no test record`);
        }
        await page.goto(`${base}/dashboard/payments`);
        assert.deepEqual((await refsOn(page)).sort(), await listed(liveKey));
        const other = await page.goto(`${base}/dashboard/payments/${testRef}`);
        assert.equal(other?.status(), 404, "a test record is not found in live mode");
      });

      await t.step("the switch (htmx) returns to the same page, in test mode", async () => {
        await page.goto(`${base}/dashboard/payments?status=PENDING`);
        await switchButton.click();
        await banner.waitFor();
        assert.equal(page.url(), `${base}/dashboard/payments?status=PENDING`);
        assert.equal(await switchButton.getAttribute("aria-checked"), "true");
        assert.deepEqual((await refsOn(page)).sort(), await listed(testKey));
        await screenshot(page, "mode-test-payments");
      });

      await t.step("test mode persists across navigation; test records only", async () => {
        await page.getByRole("navigation", { name: "Dashboard sections" })
          .getByRole("link", { name: "Payment links" }).click();
        await page.getByRole("heading", { name: "Payment links", level: 1 }).waitFor();
        assert.equal(await banner.count(), 1);
        for (const path of ["/dashboard", "/dashboard/payments", "/dashboard/links"]) {
          await page.goto(`${base}${path}`);
          await banner.waitFor();
          assert.ok(!(await refsOn(page)).includes(liveRef), `${path} shows no live record`);
        }
        const own = await page.goto(`${base}/dashboard/payments/${testRef}`);
        assert.equal(own?.status(), 200);
        const other = await page.goto(`${base}/dashboard/payments/${liveRef}`);
        assert.equal(other?.status(), 404, "a live record is not found in test mode");
      });

      await t.step("the mode is the session's: another session stays live", async () => {
        const second = await logIn(await browser.newContext(), base, m);
        assert.equal(await second.locator("#test-banner").count(), 0);
        assert.equal(
          await second.getByRole("switch", { name: "Test mode" }).getAttribute("aria-checked"),
          "false",
        );
        await page.goto(`${base}/dashboard/wallets`);
        await banner.waitFor();
        await second.close();
      });

      await t.step("without JS the switch is a plain form back to the page", async () => {
        const plain = await browser.newContext({ javaScriptEnabled: false });
        const p = await logIn(plain, base, m);
        await p.goto(`${base}/dashboard/streams`);
        await p.getByRole("switch", { name: "Test mode" }).click();
        await p.waitForURL(`${base}/dashboard/streams`);
        await p.locator("#test-banner").waitFor();
        await p.getByRole("switch", { name: "Test mode" }).click();
        await p.waitForURL(`${base}/dashboard/streams`);
        assert.equal(await p.locator("#test-banner").count(), 0);
        await plain.close();
      });

      const violations: string[] = [];
      const pages = [...sections, `/dashboard/payments/${testRef}`];
      await t.step("axe: every dashboard page in test mode", async () => {
        for (const path of pages) {
          violations.push(...await audit(page, base, path));
          assert.equal(await banner.count(), 1, `${path}: the test-mode banner`);
          assert.ok(!(await refsOn(page)).includes(liveRef), `${path}: no live record`);
        }
        violations.push(...await audit(page, base, "/dashboard/nope"));
      });

      await t.step("axe: every dashboard page in live mode", async () => {
        await page.goto(`${base}/dashboard`);
        await switchButton.click();
        await banner.waitFor({ state: "detached" });
        const live = [...sections, `/dashboard/payments/${liveRef}`];
        for (const path of live) {
          violations.push(...await audit(page, base, path));
          assert.equal(await banner.count(), 0, `${path}: no banner in live mode`);
          assert.ok(!(await refsOn(page)).includes(testRef), `${path}: no test record`);
        }
      });

      await t.step("axe: checkout, entry pages, /bridge, /gateway and the 404 page", async () => {
        const anon = await (await browser.newContext()).newPage();
        anon.setDefaultTimeout(20_000);
        violations.push(...await audit(anon, base, `/checkout/${liveRef}`, "main"));
        violations.push(...await audit(anon, base, "/dashboard/login"));
        violations.push(...await audit(anon, base, "/dashboard/signup"));
        violations.push(...await audit(anon, base, "/dashboard/verify"));
        violations.push(...await audit(anon, base, "/bridge", "main"));
        violations.push(...await audit(anon, base, "/gateway", "main"));
        const missing = await anon.goto(`${base}/no-such-page`);
        assert.equal(missing?.status(), 404);
        assert.equal(await anon.title(), "Not found · Settlement");
        assert.equal(await anon.getAttribute("html", "lang"), "en");
        assert.equal(await anon.getByRole("main").count(), 1);
        assert.equal(
          await anon.getByRole("link", { name: "Back to the dashboard" }).getAttribute("href"),
          "/dashboard",
        );
        violations.push(...await audit(anon, base, "/no-such-page"));
      });

      assert.deepEqual(violations, [], "axe-core: no violations");
      // 12 sections + a payment in each mode, the dashboard's 404, checkout, 3 entry pages,
      // /bridge, /gateway and the site's 404.
      assert.equal(audited.length, 2 * (sections.length + 1) + 1 + 7, audited.join(" "));
    } finally {
      await browser.close();
      await svc.close();
    }
  }),
);
