/**
 * The dashboard's Agents section in headless Chromium against the whole service: deploy an agent
 * from the form (an inline refusal first), see its smart account, balance and reputation, then
 * take a job through fund → submit → complete with the buttons the merchant's wallets are
 * offered in each state; the database and the contract agree at the end. Screenshots go to
 * test-output/screenshots/dash-agents-*.png.
 */
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import { startTestService } from "../helpers/service.ts";
import { api, createMerchant } from "../helpers/accounts.ts";
import { waitFor } from "../helpers/poll.ts";
import { browserTest, launchBrowser, screenshot, watchPage } from "../helpers/browser.ts";
import { M } from "../../src/http/messages.ts";
import { getJob, onChain } from "../../src/modules/commerce/commerce.service.ts";

const USDC = 1_000_000n;
/** Expected in the console: the deploy form's 400 answer (an inline error). */
const EXPECTED = [/status of 400 \(Bad Request\)/];

async function settled(page: Page) {
  await waitFor(async () => (await page.locator(".htmx-added").count()) === 0, {
    what: "htmx to settle",
  });
}

Deno.test(browserTest("dashboard agents and jobs in Chromium", async (t) => {
  const svc = await startTestService({ env: { RATE_LIMITS: "off" } });
  const browser = await launchBrowser();
  const call = api(svc);
  try {
    const m = await createMerchant(svc, { businessName: "Agent Works" });
    const wallet = async () => {
      const r = await call("POST", "/api/wallets", {
        headers: { "x-api-key": m.apiKey },
        body: {},
      });
      assert.equal(r.status, 201, r.text);
      return r.json.wallet as { id: string; address: `0x${string}` };
    };
    const [client, provider, evaluator] = [await wallet(), await wallet(), await wallet()];
    await svc.deps.chain.mintUsdc({
      profile: "production",
      to: client.address,
      amount: 50n * USDC,
    });
    const created = await call("POST", "/api/jobs/create", {
      headers: { "x-api-key": m.apiKey },
      body: {
        clientWalletId: client.id,
        provider: provider.address,
        evaluator: evaluator.address,
        budget: "12",
        expiresInSeconds: 3600,
        description: "Translate the brochure",
      },
    });
    assert.equal(created.status, 201, created.text);
    const jobId = created.json.jobId as string;

    const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } }))
      .newPage();
    page.setDefaultTimeout(20_000);
    const problems = watchPage(page, { ignore: EXPECTED });
    const base = svc.baseUrl;

    await t.step("log in and open Agents", async () => {
      await page.goto(`${base}/dashboard/agents`);
      await page.getByLabel("Email", { exact: true }).fill(m.email);
      await page.getByLabel("Password", { exact: true }).fill(m.password);
      await page.getByRole("button", { name: "Log in" }).click();
      await page.waitForURL(`${base}/dashboard/agents`);
      await page.getByRole("heading", { name: "Agents and jobs", level: 1 }).waitFor();
      await page.getByText("No agents yet.").waitFor();
      assert.equal(await page.locator('nav a[aria-current="page"]').innerText(), "Agents");
      await settled(page);
    });

    await t.step("deploy: a refusal inline, then the agent with its account", async () => {
      await page.getByLabel("Name").fill("Scout");
      await page.getByLabel("Registration file (ipfs:// or https://)").fill("ftp://nope");
      await page.getByRole("button", { name: "Deploy agent" }).click();
      await page.locator(".notice.error").waitFor();
      assert.equal((await page.locator(".notice.error").innerText()).trim(), M.agentMetadata);
      await settled(page);
      await page.getByLabel("Registration file (ipfs:// or https://)").fill("ipfs://bafyscout");
      await page.getByRole("button", { name: "Deploy agent" }).click();
      await page.getByText(/Agent deployed: 8004:\d+:\d+\./).waitFor();
      const panel = page.locator("[data-agent]");
      assert.equal(await panel.count(), 1);
      const text = await panel.innerText();
      assert.match(text, /Scout/);
      assert.match(text, /0\.000000 USDC/);
      assert.match(
        await panel.locator("[data-reputation]").innerText(),
        /^0 \/ 100 \(0 payments\)$/,
      );
      await screenshot(page, "dash-agents-1-deployed");
      await settled(page);
    });

    const job = page.locator(`[data-job="${jobId}"]`);
    const press = async (label: string, status: string, notice: RegExp) => {
      await job.getByRole("button", { name: label }).click();
      await page.getByText(notice).waitFor();
      await settled(page);
      assert.match(await job.locator(".badge").first().innerText(), new RegExp(status));
      const row = await getJob(svc.deps, "production", jobId);
      assert.equal(row.status, status);
      assert.equal((await onChain(svc.deps, row)).status, status);
    };

    await t.step("the job: fund, submit, complete, as the merchant's wallets", async () => {
      assert.match(await job.innerText(), /OPEN/);
      assert.match(await job.innerText(), /12\.000000 USDC/);
      assert.equal(await job.getByText("yours").count(), 3);
      assert.equal(await job.getByRole("button").count(), 1, "only funding while OPEN");
      await press("Fund the budget", "FUNDED", /Job funded/);
      await job.getByLabel("Deliverable (ipfs:// or https://)").fill("ipfs://bafytranslation");
      await press("Submit the deliverable", "SUBMITTED", /Deliverable submitted/);
      assert.match(await job.locator("[data-deliverable]").innerText(), /ipfs:\/\/bafytranslation/);
      await screenshot(page, "dash-agents-2-submitted");
      const before = await svc.deps.chain.usdcBalance("production", provider.address);
      await press("Approve and pay the provider", "COMPLETED", /provider has been paid/);
      assert.equal(
        await svc.deps.chain.usdcBalance("production", provider.address),
        before + 12n * USDC,
      );
      assert.equal(await job.getByRole("button").count(), 0);
      await screenshot(page, "dash-agents-3-completed");
    });

    assert.deepEqual(problems, []);
  } finally {
    await browser.close();
    await svc.close();
  }
}));
