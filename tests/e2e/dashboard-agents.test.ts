/**
 * The dashboard's Agents section in headless Chromium against the whole service, in both modes.
 * Live mode (production chain): agents are test-network only (said so, refused); a job is
 * created from the form (a refusal inline with the API's text first, nothing written), reviewed,
 * confirmed, and taken through fund → submit → complete, each through its review, with the
 * transaction's link; the database and the contract agree. Test mode (testnet): the live job is
 * not shown; deploy an agent, fund it from a wallet, deposit to its gateway balance (refusals
 * first); a job created, funded, and refunded after its expiry. Screenshots go to
 * test-output/screenshots/dash-agents-*.png.
 */
import assert from "node:assert/strict";
import type { Locator, Page } from "playwright-core";
import { catchUpClock, startTestService } from "../helpers/service.ts";
import { api, createMerchant } from "../helpers/accounts.ts";
import { waitFor } from "../helpers/poll.ts";
import { rpc } from "../helpers/chain.ts";
import { agentProof, X402_PROFILE } from "../helpers/x402.ts";
import { browserTest, launchBrowser, screenshot, watchPage } from "../helpers/browser.ts";
import { M, MF } from "../../src/http/messages.ts";
import { getJob, onChain } from "../../src/modules/commerce/commerce.service.ts";
import type { ProfileName } from "../../src/chain/profiles.ts";

const USDC = 1_000_000n;
/** Expected in the console: the refusals' 4xx answers (inline errors). */
const EXPECTED = [/status of 40\d \(/];

async function settled(page: Page) {
  await waitFor(async () => (await page.locator(".htmx-added").count()) === 0, {
    what: "htmx to settle",
  });
}

Deno.test(browserTest("dashboard agents and jobs in Chromium, live and test mode", async (t) => {
  const svc = await startTestService({ env: { RATE_LIMITS: "off" } });
  const browser = await launchBrowser();
  const call = api(svc);
  const sql = svc.deps.sql;
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
    for (const profile of ["production", "testnet"] as const) {
      await svc.deps.chain.mintUsdc({ profile, to: client.address, amount: 50n * USDC });
    }
    const jobCount = async () =>
      Number((await sql`select count(*)::int as n from commerce_jobs`)[0].n);
    const balance = (profile: ProfileName, a: string) =>
      svc.deps.chain.usdcBalance(profile, a as `0x${string}`);

    const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } }))
      .newPage();
    page.setDefaultTimeout(20_000);
    const problems = watchPage(page, { ignore: EXPECTED });
    const base = svc.baseUrl;

    /** Review shown (what will happen), then Confirm; the result carries the tx link. */
    const confirm = async (effect: RegExp, done: RegExp) => {
      await page.locator("[data-review]").waitFor();
      assert.match(await page.locator("[data-effect]").innerText(), effect);
      await page.locator("[data-review] button[type=submit]").click();
      await page.locator(".notice").waitFor();
      const notice = await page.locator(".notice").innerText();
      assert.match(notice, done);
      await settled(page);
      const link = page.locator("[data-result] a");
      assert.match(await link.getAttribute("href") ?? "", /0x[0-9a-f]{64}/);
      return (await page.locator("[data-result] code").innerText()).trim();
    };
    const refusal = async (text: string) => {
      await page.locator(".notice.error").filter({ hasText: text }).waitFor();
      assert.equal((await page.locator(".notice.error").innerText()).trim(), text);
      await settled(page);
    };
    const fillJob = async (o: { provider: string; budget: string; seconds: string; d: string }) => {
      await page.getByLabel("Client wallet (pays the budget)").selectOption(client.id);
      await page.getByLabel("Provider address (does the work, is paid)").fill(o.provider);
      await page.getByLabel("Evaluator address (completes or rejects)").fill(evaluator.address);
      await page.getByLabel("Budget (USDC)").fill(o.budget);
      await page.getByLabel("Expires in (seconds, 60 to 31536000)").fill(o.seconds);
      await page.getByLabel("Description").fill(o.d);
      await page.getByRole("button", { name: "Review the job" }).click();
    };
    const createJob = async (budget: string, seconds: string, d: string) => {
      await catchUpClock(svc);
      await fillJob({ provider: provider.address, budget, seconds, d });
      await confirm(new RegExp(`budget of ${budget}\\.000000 USDC`), /Job \d+ created/);
      return /Job (\d+) created/.exec(await page.locator(".notice.ok").innerText())![1];
    };
    const press = async (
      profile: ProfileName,
      jobId: string,
      label: string,
      status: string,
      effect: RegExp,
      notice: RegExp,
    ) => {
      await page.locator(`[data-job="${jobId}"]`).getByRole("button", { name: label }).click();
      const tx = await confirm(effect, notice);
      const job = page.locator(`[data-job="${jobId}"]`);
      assert.match(await job.locator(".badge").first().innerText(), new RegExp(status));
      const row = await getJob(svc.deps, profile, jobId);
      assert.equal(row.status, status);
      assert.equal((await onChain(svc.deps, row)).status, status);
      const receipt = await svc.deps.chain.runtime(profile).client
        .getTransactionReceipt({ hash: tx as `0x${string}` });
      assert.equal(receipt.status, "success");
      return job;
    };

    await t.step("log in (live mode) and open Agents", async () => {
      await page.goto(`${base}/dashboard/agents`);
      await page.getByLabel("Email", { exact: true }).fill(m.email);
      await page.getByLabel("Password", { exact: true }).fill(m.password);
      await page.getByRole("button", { name: "Log in" }).click();
      await page.waitForURL(`${base}/dashboard/agents`);
      await page.getByRole("heading", { name: "Agents and jobs", level: 1 }).waitFor();
      await page.locator("[data-agents-test-only]").waitFor();
      assert.equal(await page.getByRole("button", { name: "Deploy agent" }).count(), 0);
      assert.equal(await page.locator('nav a[aria-current="page"]').innerText(), "Agents");
      await page.getByRole("heading", { name: "Create a job on production" }).waitFor();
      await settled(page);
    });

    let liveJob = "";
    let testJob = "";
    await t.step("live: refusals inline with the API's texts, nothing written", async () => {
      const before = await jobCount();
      await fillJob({ provider: "0x1234", budget: "12", seconds: "3600", d: "Translate" });
      await refusal(M.jobAddress);
      assert.equal(await page.locator("#f-provider-error").innerText(), M.jobAddress);
      await fillJob({ provider: provider.address, budget: "1.1234567", seconds: "3600", d: "x" });
      await refusal(M.jobBudget);
      await fillJob({ provider: provider.address, budget: "12", seconds: "30", d: "x" });
      await refusal(M.jobExpiry);
      assert.equal(await jobCount(), before);
      // A deploy posted in live mode (no form is shown) is refused the same way.
      const csrf = await page.locator("input[name=_csrf]").first().inputValue();
      const res = await page.request.post(`${base}/dashboard/agents/deploy`, {
        form: { _csrf: csrf, name: "Nope" },
        headers: { origin: base },
      });
      const r = { status: res.status(), text: await res.text() };
      assert.equal(r.status, 400);
      assert.ok(r.text.includes(M.dashAgentsTestMode));
    });

    await t.step("live: create, then fund, submit, complete, each reviewed", async () => {
      const before = await jobCount();
      liveJob = await createJob("12", "3600", "Translate the brochure");
      assert.equal(await jobCount(), before + 1);
      const row = await getJob(svc.deps, "production", liveJob);
      assert.equal(row.status, "OPEN");
      assert.equal(row.budget, 12n * USDC);
      assert.equal(row.client, client.address.toLowerCase());
      assert.equal((await onChain(svc.deps, row)).status, "OPEN");
      const job = page.locator(`[data-job="${liveJob}"]`);
      assert.equal(await job.getByText("yours").count(), 3);
      assert.equal(await job.getByRole("button").count(), 1, "only funding while OPEN");
      assert.match(
        await job.locator("time").first().innerText(),
        /^\d{4}-\d\d-\d\d \d\d:\d\d UTC$/,
        "the expiry shown as every dashboard time is",
      );
      const clientBefore = await balance("production", client.address);
      await press(
        "production",
        liveJob,
        "Fund the budget",
        "FUNDED",
        /12\.000000 USDC will move from the client wallet/,
        /Job funded/,
      );
      assert.equal(await balance("production", client.address), clientBefore - 12n * USDC);
      await job.getByLabel("Deliverable (ipfs:// or https://)").fill("ftp://nope");
      await job.getByRole("button", { name: "Submit the deliverable" }).click();
      await refusal(M.jobDeliverable);
      await page.locator(`[data-job="${liveJob}"]`).getByLabel("Deliverable (ipfs:// or https://)")
        .fill("ipfs://bafytranslation");
      await press(
        "production",
        liveJob,
        "Submit the deliverable",
        "SUBMITTED",
        /ipfs:\/\/bafytranslation will be recorded/,
        /Deliverable submitted/,
      );
      assert.match(
        await page.locator(`[data-job="${liveJob}"] [data-deliverable]`).innerText(),
        /ipfs:\/\/bafytranslation/,
      );
      await screenshot(page, "dash-agents-1-submitted");
      const providerBefore = await balance("production", provider.address);
      const done = await press(
        "production",
        liveJob,
        "Approve and pay the provider",
        "COMPLETED",
        /pay the held budget of 12\.000000 USDC to the provider/,
        /provider has been paid/,
      );
      assert.equal(await balance("production", provider.address), providerBefore + 12n * USDC);
      assert.equal(await done.getByRole("button").count(), 0);
    });

    await t.step("test mode: the live job is not shown; agents are", async () => {
      const n = await sql`update merchant_sessions set mode = 'test' where merchant_id = ${m.id}`;
      assert.ok(n.count >= 1);
      await page.goto(`${base}/dashboard/agents`);
      await page.getByRole("heading", { name: "Create a job on testnet" }).waitFor();
      assert.equal(await page.locator(`[data-job]`).count(), 0);
      await page.getByText("No agents yet.").waitFor();
      await settled(page);
    });

    let agent: Locator = page.locator("[data-agent]");
    let sca = "";
    await t.step("test: deploy an agent (a refusal inline first)", async () => {
      await page.getByLabel("Name").fill("Scout");
      await page.getByLabel("Registration file (ipfs:// or https://)").fill("ftp://nope");
      await page.getByRole("button", { name: "Deploy agent" }).click();
      await refusal(M.agentMetadataUri);
      await page.getByLabel("Registration file (ipfs:// or https://)").fill("ipfs://bafyscout");
      await page.getByRole("button", { name: "Deploy agent" }).click();
      // Reviewed first, as the other forms (it deployed at once).
      await confirm(
        /An ERC-8004 identity named Scout will be registered on testnet/,
        /Agent deployed: 8004:\d+:\d+\./,
      );
      await settled(page);
      agent = page.locator("[data-agent]");
      assert.equal(await agent.count(), 1);
      assert.match(await agent.innerText(), /Scout/);
      assert.match(await agent.locator("[data-balance]").innerText(), /^0\.000000 USDC$/);
      assert.match(
        await agent.locator("[data-reputation]").innerText(),
        /^0 \/ 100 \(0 payments\)$/,
      );
      assert.match(await agent.locator("[data-feedback]").innerText(), /^0 entries/);
      sca = /0x[0-9a-fA-F]{40}/.exec(await agent.locator("dd code").first().innerText())![0];
    });

    await t.step("test: fund the agent from a wallet, reviewed, refusals first", async () => {
      const fund = agent.locator('[data-form="fund"]');
      await fund.getByLabel("From wallet").selectOption(client.id);
      // Each choice names the wallet and its balance (bare addresses before), as Escrow's.
      assert.match(
        await fund.locator(`option[value="${client.id}"]`).innerText(),
        /^\S.* · 0x[0-9a-fA-F]{6}… · \d+\.\d{6} USDC$/,
      );
      await fund.getByLabel("Amount to send (USDC)").fill("0");
      await fund.getByRole("button", { name: "Review funding" }).click();
      await refusal(M.withdrawAmount);
      const scaBefore = await balance("testnet", sca);
      await agent.locator('[data-form="fund"]').getByLabel("From wallet").selectOption(client.id);
      await agent.locator('[data-form="fund"]').getByLabel("Amount to send (USDC)").fill("100");
      await agent.locator('[data-form="fund"]').getByRole("button", { name: "Review funding" })
        .click();
      // More than the wallet holds: refused at the review, as funding (it passed the review and
      // failed at Confirm with the withdrawal's text).
      await page.locator(".notice.error").filter({ hasText: "not enough to fund the agent" })
        .waitFor();
      assert.match(
        (await page.locator(".notice.error").innerText()).trim(),
        /^The wallet holds \d+\.\d{6} USDC: not enough to fund the agent with 100\.000000 USDC\.$/,
      );
      assert.equal(await page.locator("[data-review]").count(), 0);
      assert.equal(await balance("testnet", sca), scaBefore);
      await settled(page);
      // The refused confirm kept the form's values.
      assert.equal(
        await agent.locator('[data-form="fund"]').getByLabel("From wallet").inputValue(),
        client.id,
      );
      assert.equal(
        await agent.locator('[data-form="fund"]').getByLabel("Amount to send (USDC)").inputValue(),
        "100",
      );
      await agent.locator('[data-form="fund"]').getByLabel("Amount to send (USDC)").fill("5");
      await agent.locator('[data-form="fund"]').getByRole("button", { name: "Review funding" })
        .click();
      await confirm(/5\.000000 USDC will be sent from your wallet/, /Agent funded/);
      assert.equal(await balance("testnet", sca), scaBefore + 5n * USDC);
      assert.match(await agent.locator("[data-balance]").innerText(), /^5\.000000 USDC$/);
    });

    await t.step("test: deposit to the agent's gateway balance", async () => {
      const deposit = () => agent.locator('[data-form="deposit"]');
      await deposit().getByLabel("Amount to deposit (USDC)").fill("abc");
      await deposit().getByRole("button", { name: "Review deposit" }).click();
      await refusal(M.x402WithdrawAmount);
      // More than the agent's account holds (5): refused at the review.
      await deposit().getByLabel("Amount to deposit (USDC)").fill("50");
      await deposit().getByRole("button", { name: "Review deposit" }).click();
      await refusal(MF.dashAgentDepositShort("5.000000", "50.000000"));
      const before = await svc.deps.chain.gateway.balance("testnet", sca as `0x${string}`);
      await deposit().getByLabel("Amount to deposit (USDC)").fill("2");
      await deposit().getByRole("button", { name: "Review deposit" }).click();
      await confirm(/2\.000000 USDC will move from the agent's smart account/, /Deposited 2/);
      const after = await svc.deps.chain.gateway.balance("testnet", sca as `0x${string}`);
      assert.equal(after.available, before.available + 2n * USDC);
      assert.equal(await balance("testnet", sca), 3n * USDC);
      assert.match(await agent.locator("[data-gateway]").innerText(), /^2\.000000 USDC$/);
      await screenshot(page, "dash-agents-2-agent");
    });

    await t.step("test: the agent's paid call shows in its payments and reputation", async () => {
      const upstream = Deno.serve(
        { hostname: "127.0.0.1", port: 0, onListen: () => {} },
        () => Response.json({ forecast: "sunny" }),
      );
      try {
        const seller = await createMerchant(svc, { businessName: "Weather Co" });
        const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
        const listing = await call("POST", "/api/x402/listings", {
          headers: bearer(seller.apiKey),
          body: {
            slug: "forecast",
            upstreamUrl: `http://127.0.0.1:${upstream.addr.port}/forecast`,
            price: "0.25",
            methods: ["GET"],
          },
        });
        assert.equal(listing.status, 201, listing.text);
        const status = await call("GET", `/api/agent/status?scaAddress=${sca}`, {
          headers: bearer(m.apiKey),
        });
        assert.equal(status.status, 200, status.text);
        const a = status.json.agent as {
          tokenId: string;
          managedWalletId: string;
          agentId: string;
        };
        const { proof, agentSignature } = await agentProof(svc, { ...a, scaAddress: sca }, {
          to: seller.walletAddress!,
          value: 250_000n,
        });
        const paid = await call("POST", "/api/x402/pay", {
          headers: { "x-agent-id": a.agentId, "x-agent-signature": agentSignature },
          body: { slug: "forecast", method: "GET", paymentProof: proof },
        });
        assert.equal(paid.status, 200, paid.text);
        await waitFor(async () => {
          const s = await svc.deps.chain.agents.summary(X402_PROFILE, BigInt(a.tokenId));
          return s.count === 1n ? s : null;
        }, { what: "the payment's feedback on chain" });
      } finally {
        await upstream.shutdown();
      }
      await page.goto(`${base}/dashboard/agents`);
      agent = page.locator("[data-agent]");
      assert.equal(
        await agent.locator("[data-reputation]").innerText(),
        "100 / 100 (1 payments)",
      );
      assert.equal(await agent.locator("[data-feedback]").innerText(), "1 entries, average 100");
      assert.equal(await agent.locator("[data-gateway]").innerText(), "1.750000 USDC");
      const rows = agent.locator("table tbody tr");
      assert.equal(await rows.count(), 1);
      assert.match(await rows.first().innerText(), /0\.25\s+SUCCESS/);
      await settled(page);
    });

    await t.step("test: a job created, funded, refunded after its expiry", async () => {
      const testJob = await createJob("3", "120", "Summarise the paper");
      assert.notEqual(testJob, "");
      const row = await getJob(svc.deps, "testnet", testJob);
      assert.equal(row.status, "OPEN");
      assert.equal(row.chainId, svc.deps.chain.chainId("testnet"));
      const clientBefore = await balance("testnet", client.address);
      await press(
        "testnet",
        testJob,
        "Fund the budget",
        "FUNDED",
        /3\.000000 USDC will move/,
        /Job funded/,
      );
      assert.equal(await balance("testnet", client.address), clientBefore - 3n * USDC);
      const job = page.locator(`[data-job="${testJob}"]`);
      assert.equal(await job.getByRole("button", { name: "Claim the refund" }).count(), 0);
      // The job's expiry passes on chain and for the service.
      const rpcUrl = svc.deps.chain.runtime("testnet").rpcUrl;
      await rpc(rpcUrl, "evm_increaseTime", [180]);
      await rpc(rpcUrl, "evm_mine", []);
      svc.clock.advance(180_000);
      await page.goto(`${base}/dashboard/agents`);
      await press(
        "testnet",
        testJob,
        "Claim the refund",
        "EXPIRED",
        /returns the held budget of 3\.000000 USDC to the client/,
        /Refund claimed/,
      );
      assert.equal(await balance("testnet", client.address), clientBefore);
      await screenshot(page, "dash-agents-3-refunded");
    });

    await t.step("test: a job funded, then rejected with a reason by the evaluator", async () => {
      const id = testJob = await createJob("4", "3600", "Draw the logo");
      const clientBefore = await balance("testnet", client.address);
      await press("testnet", id, "Fund the budget", "FUNDED", /4\.000000 USDC will move/, /funded/);
      assert.equal(await balance("testnet", client.address), clientBefore - 4n * USDC);
      await page.locator(`[data-job="${id}"]`).getByLabel("Reason (optional, hashed on chain)")
        .fill("off topic");
      await press(
        "testnet",
        id,
        "Reject (refund the client)",
        "REJECTED",
        /returns any held budget \(4\.000000 USDC\) to the client/,
        /Job rejected/,
      );
      assert.equal(await balance("testnet", client.address), clientBefore);
      assert.equal((await getJob(svc.deps, "testnet", id)).reason, "off topic");
    });

    await t.step(
      "without JavaScript: refusal, review, confirm (live mode); CSRF held",
      async () => {
        const ctx = await browser.newContext({ javaScriptEnabled: false });
        const plain = await ctx.newPage();
        plain.setDefaultTimeout(20_000);
        await plain.goto(`${base}/dashboard/agents`);
        await plain.getByLabel("Email", { exact: true }).fill(m.email);
        await plain.getByLabel("Password", { exact: true }).fill(m.password);
        await plain.getByRole("button", { name: "Log in" }).click();
        await plain.getByRole("heading", { name: "Create a job on production" }).waitFor();
        // A test-mode job is not found from a live session: the API's text, nothing sent.
        await assert.rejects(getJob(svc.deps, "production", testJob));
        const testRow = await getJob(svc.deps, "testnet", testJob);
        const crossed = await plain.request.post(`${base}/dashboard/agents/job`, {
          form: {
            _csrf: await plain.locator("input[name=_csrf]").first().inputValue(),
            jobId: testJob,
            action: "refund",
            walletId: client.id,
            step: "confirm",
          },
          headers: { origin: base },
        });
        assert.equal(crossed.status(), 404);
        assert.ok((await crossed.text()).includes(M.jobNotFound));
        assert.deepEqual(await getJob(svc.deps, "testnet", testJob), testRow);
        const before = await jobCount();
        const fill = async (budget: string) => {
          await plain.getByLabel("Client wallet (pays the budget)").selectOption(client.id);
          await plain.getByLabel("Provider address (does the work, is paid)").fill(
            provider.address,
          );
          await plain.getByLabel("Evaluator address (completes or rejects)").fill(
            evaluator.address,
          );
          await plain.getByLabel("Budget (USDC)").fill(budget);
          await plain.getByLabel("Description").fill("Plain form job");
          await plain.getByRole("button", { name: "Review the job" }).click();
        };
        await fill("-1");
        await plain.locator(".notice.error").waitFor();
        assert.equal((await plain.locator(".notice.error").innerText()).trim(), M.jobBudget);
        await fill("1.5");
        await plain.locator("[data-review]").waitFor();
        assert.equal(await jobCount(), before, "the review sends nothing");
        // The confirm without the form's CSRF token is refused, nothing written.
        const form = Object.fromEntries(
          await plain.locator("[data-review] input[type=hidden]").evaluateAll((els) =>
            els.map((e) => [e.getAttribute("name")!, e.getAttribute("value") ?? ""])
          ),
        ) as Record<string, string>;
        const { _csrf: _, ...noToken } = form;
        const forged = await plain.request.post(`${base}/dashboard/agents/jobs/create`, {
          form: noToken,
          headers: { origin: base },
        });
        assert.equal(forged.status(), 403);
        assert.equal(await jobCount(), before);
        await plain.getByRole("button", { name: "Confirm and create" }).click();
        await plain.locator(".notice.ok").waitFor();
        const id = /Job (\d+) created/.exec(await plain.locator(".notice.ok").innerText())![1];
        assert.equal(await jobCount(), before + 1);
        const row = await getJob(svc.deps, "production", id);
        assert.equal(row.budget, 1_500_000n);
        assert.equal((await onChain(svc.deps, row)).status, "OPEN");
        // The same confirm sent again (its request key) finds the first job: nothing new.
        const again = await plain.request.post(`${base}/dashboard/agents/jobs/create`, {
          form,
          headers: { origin: base },
        });
        assert.equal(again.status(), 200);
        assert.ok((await again.text()).includes(`Job ${id} created`));
        assert.equal(await jobCount(), before + 1);
        await ctx.close();
      },
    );

    assert.deepEqual(problems, []);
  } finally {
    await browser.close();
    await svc.close();
  }
}));
