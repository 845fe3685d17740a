/**
 * Streams and Escrow created and acted on from the dashboard in headless Chromium, in live mode
 * (production chain) and in test mode (testnet chain): every form goes form → review (nothing
 * sent) → confirm → result with the transaction's explorer link; refusals show the API's text
 * inline and write nothing. Asserted on the chain (balances, the vault's and escrow contract's
 * state) and on the records, and that the other mode's chain is untouched.
 * Screenshots: test-output/screenshots/dash-streams-*.png, dash-escrow-*.png.
 */
import assert from "node:assert/strict";
import type { Browser, Page } from "playwright-core";
import { getAddress } from "viem";
import { startTestService, type TestService } from "../helpers/service.ts";
import { api, createMerchant, type TestMerchant } from "../helpers/accounts.ts";
import { rpc } from "../helpers/chain.ts";
import { waitFor } from "../helpers/poll.ts";
import { browserTest, launchBrowser, screenshot, watchPage } from "../helpers/browser.ts";
import { M } from "../../src/http/messages.ts";
import type { ProfileName } from "../../src/chain/index.ts";
import { getEscrow, onChain, resolve } from "../../src/modules/escrow/escrow.service.ts";
import { TEXT } from "../../src/modules/streams/streams.section.tsx";
import { TEXT as ESCROW_TEXT } from "../../src/modules/escrow/escrow.section.tsx";
import { modules } from "../../src/modules/index.ts";

const USDC = 1_000_000n;
/** Expected in the console: the refusals' 400 answers (shown inline). */
const EXPECTED = [/status of 400 \(Bad Request\)/];
const MODES = [
  { mode: "live", profile: "production", other: "testnet" },
  { mode: "test", profile: "testnet", other: "production" },
] as const;
const TX_LINK = /\/tx\/0x[0-9a-f]{64}$/;

interface Ctx {
  svc: TestService;
  m: TestMerchant;
  page: Page;
  profile: ProfileName;
  other: ProfileName;
  payout: `0x${string}`;
  receiver: { id: string; address: `0x${string}` };
}

Deno.test(browserTest("dashboard streams and escrow forms in Chromium, both modes", async (t) => {
  // The escrow jobs' automatic refund at expiry would race the page's refund once the clock is
  // moved: their handlers do nothing here (the queues stay, so creations still schedule them).
  const quiet = modules.map((m) =>
    m.name !== "escrow" ? m : {
      ...m,
      jobs: m.jobs?.map((j) => ({ ...j, handler: () => Promise.resolve() })),
    }
  );
  const svc = await startTestService({ env: { RATE_LIMITS: "off" }, modules: quiet });
  const browser = await launchBrowser();
  try {
    for (const { mode, profile, other } of MODES) {
      const ctx = await setUp(svc, browser, mode, profile, other);
      const problems = watchPage(ctx.page, { ignore: EXPECTED });
      await t.step(`${mode}: stream refusals inline, nothing written`, () => streamRefusals(ctx));
      await t.step(`${mode}: stream create, withdraw, stop`, () => streamFlow(ctx, mode));
      await t.step(`${mode}: escrow refusals inline, nothing written`, () => escrowRefusals(ctx));
      await t.step(`${mode}: escrow create, confirm, release`, () => escrowRelease(ctx, mode));
      await t.step(`${mode}: escrow dispute, arbiter's resolution`, () => escrowDispute(ctx));
      await t.step(`${mode}: escrow refund once expired`, () => escrowRefund(ctx, mode));
      await t.step(`${mode}: the other mode's chain untouched`, async () => {
        assert.equal(await svc.deps.chain.usdcBalance(other, ctx.payout), 20n * USDC);
        assert.equal(await svc.deps.chain.usdcBalance(other, ctx.receiver.address), 0n);
      });
      if (mode === "live") {
        await t.step(
          "without JavaScript: plain forms, review, result",
          () => noScript(ctx, browser),
        );
      }
      assert.deepEqual(problems, []);
      await ctx.page.context().close();
    }
  } finally {
    await browser.close();
    await svc.close();
  }
}));

async function setUp(
  svc: TestService,
  browser: Browser,
  mode: "live" | "test",
  profile: ProfileName,
  other: ProfileName,
): Promise<Ctx> {
  const m = await createMerchant(svc, { businessName: `Forms ${mode}` });
  const w = await api(svc)("POST", "/api/wallets", {
    headers: { "x-api-key": m.apiKey },
    body: { label: "Receiver" },
  });
  assert.equal(w.status, 201, w.text);
  const receiver = w.json.wallet as { id: string; address: `0x${string}` };
  const payout = getAddress(m.walletAddress!);
  for (const p of [profile, other]) {
    await svc.deps.chain.mintUsdc({ profile: p, to: payout, amount: 20n * USDC });
  }
  const page = await (await browser.newContext()).newPage();
  page.setDefaultTimeout(20_000);
  await page.goto(`${svc.baseUrl}/dashboard/streams`);
  await page.getByLabel("Email", { exact: true }).fill(m.email);
  await page.getByLabel("Password", { exact: true }).fill(m.password);
  await page.getByRole("button", { name: "Log in" }).click();
  await page.getByRole("heading", { name: "Streams", exact: true }).waitFor();
  // The header's mode switch is another helper's work: the session's mode set directly.
  await svc.db.sql`update merchant_sessions set mode = ${mode} where merchant_id = ${m.id}`;
  await page.reload();
  const ctx = { svc, m, page, profile, other, payout, receiver };
  // The clock is shared by both chains: bring this mode's chain level with it.
  await travel(ctx, 1);
  return ctx;
}

/** Moves the mode's chain and the service's clock together, `seconds` past both. */
async function travel(ctx: Ctx, seconds: number) {
  const rt = ctx.svc.deps.chain.runtime(ctx.profile);
  const head = Number((await rt.client.getBlock()).timestamp);
  const clock = Math.floor(ctx.svc.clock.now().getTime() / 1000);
  const at = Math.max(head, clock) + seconds;
  await rpc(rt.rpcUrl, "evm_setNextBlockTimestamp", [at]);
  await rpc(rt.rpcUrl, "evm_mine", []);
  ctx.svc.clock.set(new Date(at * 1000));
}

async function count(ctx: Ctx, table: "streams" | "stream_creates" | "escrows" | "escrow_creates") {
  const [r] = await ctx.svc.db.sql<{ n: number }[]>`
    select count(*)::int as n from ${ctx.svc.db.sql(table)} where merchant_id = ${ctx.m.id}`;
  return r.n;
}

async function txLink(page: Page): Promise<string> {
  const link = page.getByTestId("tx-link");
  const href = (await link.getAttribute("href")) ?? "";
  assert.match(href, TX_LINK);
  return href.slice(-66);
}

async function streamRefusals(ctx: Ctx) {
  const { page } = ctx;
  await page.goto(`${ctx.svc.baseUrl}/dashboard/streams`);
  const form = page.locator("[data-stream-create]");
  await form.getByLabel("Sender wallet").selectOption(ctx.payout);
  await form.getByLabel("Receiver address").fill("0x1234");
  await form.getByLabel("Total (USDC)").fill("2");
  await form.getByLabel("Rate (USDC per second)").fill("0.01");
  await form.getByRole("button", { name: "Review stream" }).click();
  await page.getByRole("alert").getByText(M.streamAddress).waitFor();
  assert.equal(await form.getByLabel("Receiver address").getAttribute("aria-invalid"), "true");

  await form.getByLabel("Receiver address").fill(ctx.receiver.address);
  await form.getByLabel("Total (USDC)").fill("500");
  await form.getByRole("button", { name: "Review stream" }).click();
  await page.getByRole("alert").getByText(M.streamInsufficientBalance).waitFor();

  await form.getByLabel("Total (USDC)").fill("2");
  await form.getByLabel("Duration", { exact: true }).fill("200");
  await form.getByRole("button", { name: "Review stream" }).click();
  await page.getByRole("alert").getByText(TEXT.rateOrDuration).waitFor();
  // Neither: the form's words, which name both ways (it named only ratePerSecond).
  await form.getByLabel("Rate (USDC per second)").fill("");
  await form.getByLabel("Duration", { exact: true }).fill("");
  await form.getByRole("button", { name: "Review stream" }).click();
  await page.getByRole("alert").getByText(TEXT.rateOrDurationMissing).waitFor();

  assert.equal(await count(ctx, "stream_creates"), 0);
  assert.equal(await count(ctx, "streams"), 0);
  assert.equal(await ctx.svc.deps.chain.usdcBalance(ctx.profile, ctx.payout), 20n * USDC);
}

async function streamFlow(ctx: Ctx, mode: string) {
  const { page, svc, profile } = ctx;
  const chain = svc.deps.chain;
  await page.goto(`${svc.baseUrl}/dashboard/streams`);
  const form = page.locator("[data-stream-create]");
  // A duration the total does not divide: the rate is rounded down to whole base units, so the
  // review says how long it really streams (it said 3 s for what lasts 4 s).
  await form.getByLabel("Sender wallet").selectOption(ctx.payout);
  await form.getByLabel("Receiver address").fill(ctx.receiver.address);
  await form.getByLabel("Total (USDC)").fill("1");
  await form.getByLabel("Duration", { exact: true }).fill("3");
  await form.getByLabel("Duration unit").selectOption("seconds");
  await form.getByRole("button", { name: "Review stream" }).click();
  const rounded = page.locator("[data-review='stream-create']");
  await rounded.waitFor();
  assert.match(await rounded.innerText(), /0\.333333 USDC per second/);
  assert.match(await rounded.innerText(), /\(4 s\)/);
  await page.goto(`${svc.baseUrl}/dashboard/streams`);
  await form.getByLabel("Sender wallet").selectOption(ctx.payout);
  await form.getByLabel("Receiver address").fill(ctx.receiver.address);
  await form.getByLabel("Total (USDC)").fill("2");
  await form.getByLabel("Duration", { exact: true }).fill("200");
  await form.getByLabel("Duration unit").selectOption("seconds");
  await form.getByRole("button", { name: "Review stream" }).click();

  // The review: the rate derived from the duration and the end time, nothing sent yet.
  const review = page.locator("[data-review='stream-create']");
  await review.waitFor();
  const text = await review.innerText();
  assert.match(text, /0\.01 USDC per second/);
  assert.match(text, /3 min 20 s \(200 s\)/);
  assert.match(text, mode === "test" ? /Test mode \(testnet\)/ : /Live \(production\)/);
  assert.ok(await review.getByTestId("stream-end").getAttribute("datetime"));
  assert.match(
    await review.getByTestId("stream-end").innerText(),
    /^\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC$/,
  );
  assert.equal(await count(ctx, "stream_creates"), 0);
  await screenshot(page, `dash-streams-review-${mode}`);

  await review.getByRole("button", { name: "Lock 2 USDC and start" }).click();
  await page.locator("[data-result]").getByText(/Stream stream_\S+ created/).waitFor();
  const createTx = await txLink(page);
  const [row] = await svc.db.sql<
    {
      reference: string;
      profile: string;
      chainId: number;
      rate: bigint;
      deposit: bigint;
      txHash: string;
    }[]
  >`select reference, profile, chain_id, rate, deposit, tx_hash from streams
    where merchant_id = ${ctx.m.id}`;
  assert.equal(row.profile, profile);
  assert.equal(row.chainId, chain.chainId(profile));
  assert.equal(BigInt(row.rate), 10_000n);
  assert.equal(BigInt(row.deposit), 2n * USDC);
  assert.equal(row.txHash, createTx);
  const state = await chain.streams.state(profile, row.reference);
  assert.equal(state.status, "Active");
  assert.equal(state.deposit, 2n * USDC);
  assert.equal((await chain.streams.state(ctx.other, row.reference)).status, "None");
  assert.equal(await chain.usdcBalance(profile, ctx.payout), 18n * USDC);
  const panel = page.locator(`[data-stream='${row.reference}']`);
  await panel.getByText("ACTIVE").waitFor();

  // The accrual ticks in the page between refreshes (no time passes on the service's clock).
  const shown = page.getByTestId("stream-current");
  const first = await shown.innerText();
  await waitFor(async () => (await shown.innerText()) !== first, {
    what: "the accrual to tick in the page",
  });

  await travel(ctx, 50);
  await page.reload();
  await panel.getByRole("button", { name: "Withdraw to receiver" }).click();
  const wReview = page.locator("[data-review='stream-withdraw']");
  await wReview.waitFor();
  assert.equal(await chain.usdcBalance(profile, ctx.receiver.address), 0n, "review sends nothing");
  await wReview.getByRole("button", { name: "Withdraw to the receiver" }).click();
  await page.locator("[data-result]").getByText(/Withdrawn 0\.\d+ USDC to the receiver\./)
    .waitFor();
  const withdrawTx = await txLink(page);
  assert.notEqual(withdrawTx, createTx);
  const [after] = await svc.db.sql<{ withdrawn: bigint }[]>`
    select withdrawn from streams where reference = ${row.reference}`;
  const paid = await chain.usdcBalance(profile, ctx.receiver.address);
  assert.ok(paid >= 500_000n, `paid ${paid}`);
  assert.equal(BigInt(after.withdrawn), paid);

  await travel(ctx, 20);
  await page.reload();
  await panel.getByRole("button", { name: "Stop stream" }).click();
  const sReview = page.locator("[data-review='stream-stop']");
  await sReview.waitFor();
  assert.equal((await chain.streams.state(profile, row.reference)).status, "Active");
  await sReview.getByRole("button", { name: "Stop the stream" }).click();
  await page.locator("[data-result]").getByText(/Stream stopped: /).waitFor();
  await txLink(page);
  await panel.getByText("STOPPED").waitFor();
  assert.equal((await chain.streams.state(profile, row.reference)).status, "Stopped");
  const [stopped] = await svc.db.sql<{ status: string }[]>`
    select status from streams where reference = ${row.reference}`;
  assert.equal(stopped.status, "STOPPED");
  const sender = await chain.usdcBalance(profile, ctx.payout);
  const received = await chain.usdcBalance(profile, ctx.receiver.address);
  assert.ok(received > paid, "the stop paid what accrued since the withdrawal");
  assert.equal(sender + received, 20n * USDC, "the rest went back to the sender");
  await screenshot(page, `dash-streams-stopped-${mode}`);
  // Back to where the escrow steps start: the receiver's USDC returned to the payout wallet's
  // accounting is not needed; the escrow steps measure from the balances as they are now.
}

async function escrowForm(ctx: Ctx, values: Record<string, string>) {
  const { page } = ctx;
  await page.goto(`${ctx.svc.baseUrl}/dashboard/escrow`);
  const form = page.locator("[data-escrow-create]");
  const wallets = form.getByLabel("Depositor wallet");
  const options = await Promise.all(
    (await wallets.locator("option").all()).map(async (o) => ({
      value: (await o.getAttribute("value")) ?? "",
      text: await o.innerText(),
    })),
  );
  const payout = options.find((o) => o.text.includes(ctx.payout.slice(0, 8)));
  assert.ok(payout, JSON.stringify(options));
  await wallets.selectOption(payout.value);
  await form.getByLabel("Beneficiary address").fill(values.beneficiary);
  await form.getByLabel("Amount (USDC)").fill(values.amount);
  await form.getByLabel("Expires in").fill(values.expiresIn);
  await form.getByLabel("Expiry unit").selectOption(values.unit);
  await form.getByLabel("Description (optional)").fill(values.description ?? "");
  await form.getByRole("button", { name: "Review escrow" }).click();
}

async function escrowRefusals(ctx: Ctx) {
  const { page } = ctx;
  await escrowForm(ctx, {
    beneficiary: "0x0000000000000000000000000000000000000000",
    amount: "3",
    expiresIn: "2",
    unit: "days",
  });
  // In the form's words (the API's named beneficiarySCA and expiresInSeconds).
  await page.getByRole("alert").getByText(ESCROW_TEXT.beneficiary).waitFor();
  await escrowForm(ctx, {
    beneficiary: ctx.receiver.address,
    amount: "3.1234567",
    expiresIn: "2",
    unit: "days",
  });
  await page.getByRole("alert").getByText(M.escrowAmount).waitFor();
  await escrowForm(ctx, {
    beneficiary: ctx.receiver.address,
    amount: "3",
    expiresIn: "0",
    unit: "minutes",
  });
  await page.getByRole("alert").getByText(ESCROW_TEXT.expiresIn).waitFor();
  await escrowForm(ctx, {
    beneficiary: ctx.receiver.address,
    amount: "300",
    expiresIn: "2",
    unit: "days",
  });
  await page.getByRole("alert").getByText(M.escrowInsufficient).waitFor();
  await escrowForm(ctx, {
    beneficiary: ctx.payout,
    amount: "3",
    expiresIn: "2",
    unit: "days",
  });
  await page.getByRole("alert").getByText(M.escrowParties).waitFor();
  assert.equal(await count(ctx, "escrows"), 0);
  assert.equal(await count(ctx, "escrow_creates"), 0);
}

/** Creates an escrow through the form and its review; returns its reference. */
async function createEscrow(
  ctx: Ctx,
  amount: string,
  expiresIn: string,
  unit: string,
  description: string,
) {
  const { page, svc, profile } = ctx;
  const before = await svc.deps.chain.usdcBalance(profile, ctx.payout);
  await escrowForm(ctx, {
    beneficiary: ctx.receiver.address,
    amount,
    expiresIn,
    unit,
    description,
  });
  const review = page.locator("[data-review='escrow-create']");
  await review.waitFor();
  assert.match(await review.innerText(), new RegExp(`${amount}\\.000000 USDC`));
  assert.ok(await review.getByTestId("escrow-expiry").getAttribute("datetime"));
  // Shown as every dashboard time is (to the minute, UTC), not as an ISO string.
  assert.match(
    await review.getByTestId("escrow-expiry").innerText(),
    /^\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC$/,
  );
  assert.equal(
    await svc.deps.chain.usdcBalance(profile, ctx.payout),
    before,
    "review sends nothing",
  );
  await review.getByRole("button", { name: `Hold ${amount}.000000 USDC` }).click();
  const result = page.locator("[data-result]");
  await result.getByText(M.escrowCreated).waitFor();
  const reference = /(escrow_[0-9A-Za-z]{10}_[0-9A-Za-z]{10}):/.exec(await result.innerText())?.[1];
  assert.ok(reference, await result.innerText());
  const tx = await txLink(page);
  const row = await getEscrow(svc.deps, { merchantId: ctx.m.id, profile }, reference);
  assert.equal(row.txHash, tx);
  assert.equal(row.chainId, svc.deps.chain.chainId(profile));
  assert.equal(row.description, description);
  assert.equal((await onChain(svc.deps, row)).status, "ACTIVE");
  assert.equal(
    await svc.deps.chain.usdcBalance(profile, ctx.payout),
    before - BigInt(amount) * USDC,
  );
  return reference;
}

/** One action from an escrow's panel, through its review. */
async function act(ctx: Ctx, reference: string, button: string, reason?: string) {
  const { page } = ctx;
  await page.goto(`${ctx.svc.baseUrl}/dashboard/escrow`);
  const panel = page.locator(`[data-escrow='${reference}']`);
  if (reason !== undefined) await panel.getByLabel("Reason").fill(reason);
  await panel.getByRole("button", { name: button }).click();
  const review = page.locator("[data-escrow-review]");
  await review.waitFor();
  await review.getByRole("button", { name: "Confirm" }).click();
  await page.locator("[data-result]").waitFor();
  return await txLink(page);
}

async function row(ctx: Ctx, reference: string) {
  const e = await getEscrow(
    ctx.svc.deps,
    { merchantId: ctx.m.id, profile: ctx.profile },
    reference,
  );
  assert.equal((await onChain(ctx.svc.deps, e)).status, e.status, "chain and record agree");
  return e;
}

async function escrowRelease(ctx: Ctx, mode: string) {
  const ref = await createEscrow(ctx, "3", "2", "days", "Translation");
  const received = await ctx.svc.deps.chain.usdcBalance(ctx.profile, ctx.receiver.address);
  const confirmTx = await act(ctx, ref, "Confirm delivery");
  await ctx.page.locator("[data-result]").getByText(M.escrowConfirmed).waitFor();
  const confirmed = await row(ctx, ref);
  assert.equal(confirmed.confirmTxHash, confirmTx);
  assert.ok((await onChain(ctx.svc.deps, confirmed)).confirmed);
  const releaseTx = await act(ctx, ref, "Release to the beneficiary");
  await ctx.page.locator("[data-result]").getByText(M.escrowReleased).waitFor();
  const released = await row(ctx, ref);
  assert.equal(released.status, "RELEASED");
  assert.equal(released.releaseTxHash, releaseTx);
  assert.equal(
    await ctx.svc.deps.chain.usdcBalance(ctx.profile, ctx.receiver.address),
    received + 3n * USDC,
  );
  await screenshot(ctx.page, `dash-escrow-released-${mode}`);
}

async function escrowDispute(ctx: Ctx) {
  const ref = await createEscrow(ctx, "2", "2", "days", "Logo");
  const before = await ctx.svc.deps.chain.usdcBalance(ctx.profile, ctx.payout);
  const disputeTx = await act(ctx, ref, "Dispute", "Wrong colours");
  await ctx.page.locator("[data-result]").getByText(M.escrowDisputed).waitFor();
  const disputed = await row(ctx, ref);
  assert.equal(disputed.status, "DISPUTED");
  assert.equal(disputed.disputeReason, "Wrong colours");
  assert.equal(disputed.disputeTxHash, disputeTx);
  // The arbiter (operator credential) decides while the page is open: the DISPUTED panel
  // refreshes itself and shows the resolution with its transaction.
  await ctx.page.goto(`${ctx.svc.baseUrl}/dashboard/escrow`);
  const panel = ctx.page.locator(`[data-escrow='${ref}']`);
  await panel.getByText("DISPUTED").waitFor();
  await resolve(ctx.svc.deps, ref, "refunded");
  await panel.getByTestId("escrow-resolution").getByText("Refunded to the depositor").waitFor();
  const link = panel.getByRole("link", { name: "Resolution transaction" });
  assert.match((await link.getAttribute("href")) ?? "", TX_LINK);
  assert.equal((await row(ctx, ref)).status, "REFUNDED");
  assert.equal(await ctx.svc.deps.chain.usdcBalance(ctx.profile, ctx.payout), before + 2n * USDC);
}

async function escrowRefund(ctx: Ctx, mode: string) {
  const ref = await createEscrow(ctx, "1", "2", "minutes", "Short");
  const before = await ctx.svc.deps.chain.usdcBalance(ctx.profile, ctx.payout);
  const panel = ctx.page.locator(`[data-escrow='${ref}']`);
  assert.equal(await panel.getByRole("button", { name: "Refund to the depositor" }).count(), 0);
  await travel(ctx, 180);
  const refundTx = await act(ctx, ref, "Refund to the depositor");
  await ctx.page.locator("[data-result]").getByText(M.escrowRefunded).waitFor();
  const refunded = await row(ctx, ref);
  assert.equal(refunded.status, "REFUNDED");
  assert.equal(refunded.refundTxHash, refundTx);
  assert.equal(await ctx.svc.deps.chain.usdcBalance(ctx.profile, ctx.payout), before + USDC);
  await screenshot(ctx.page, `dash-escrow-refunded-${mode}`);
}

/** The same forms as plain HTML posts (no htmx): a refusal inline, a stream created. */
async function noScript(ctx: Ctx, browser: Browser) {
  const { svc } = ctx;
  const context = await browser.newContext({ javaScriptEnabled: false });
  try {
    const page = await context.newPage();
    page.setDefaultTimeout(20_000);
    await page.goto(`${svc.baseUrl}/dashboard/escrow`);
    await page.getByLabel("Email", { exact: true }).fill(ctx.m.email);
    await page.getByLabel("Password", { exact: true }).fill(ctx.m.password);
    await page.getByRole("button", { name: "Log in" }).click();
    await page.getByRole("heading", { name: "Escrow", exact: true }).waitFor();
    await svc.db.sql`update merchant_sessions set mode = 'live' where merchant_id = ${ctx.m.id}`;
    const escrows = await count(ctx, "escrows");
    const form = page.locator("[data-escrow-create]");
    await form.getByLabel("Beneficiary address").fill(ctx.receiver.address);
    await form.getByLabel("Amount (USDC)").fill("x");
    await form.getByLabel("Expires in").fill("2");
    await form.getByRole("button", { name: "Review escrow" }).click();
    await page.getByRole("alert").getByText(M.escrowAmount).waitFor();
    assert.equal(await count(ctx, "escrows"), escrows);

    // The review's confirm sent twice (a double submit): one escrow, the same answer twice.
    await form.getByLabel("Amount (USDC)").fill("1");
    await form.getByRole("button", { name: "Review escrow" }).click();
    const confirm = page.locator("[data-review='escrow-create'] form");
    await confirm.waitFor();
    const fields: Record<string, string> = {};
    for (const input of await confirm.locator("input[type=hidden]").all()) {
      fields[(await input.getAttribute("name"))!] = (await input.getAttribute("value")) ?? "";
    }
    const held = await svc.deps.chain.usdcBalance(ctx.profile, ctx.payout);
    const url = `${svc.baseUrl}/dashboard/escrow/create`;
    const [one, two] = await Promise.all([
      page.request.post(url, { form: fields, headers: { origin: svc.baseUrl } }),
      page.request.post(url, { form: fields, headers: { origin: svc.baseUrl } }),
    ]);
    assert.equal(one.status(), 200);
    assert.equal(two.status(), 200);
    const ref = (t: string) => /escrow_[0-9A-Za-z]{10}_[0-9A-Za-z]{10}/.exec(t)?.[0];
    const [a, b] = [ref(await one.text()), ref(await two.text())];
    assert.ok(a);
    assert.equal(a, b);
    assert.equal(await count(ctx, "escrows"), escrows + 1);
    assert.equal(await svc.deps.chain.usdcBalance(ctx.profile, ctx.payout), held - USDC);

    await page.goto(`${svc.baseUrl}/dashboard/streams`);
    const before = await svc.deps.chain.usdcBalance(ctx.profile, ctx.payout);
    const s = page.locator("[data-stream-create]");
    await s.getByLabel("Sender wallet").selectOption(ctx.payout);
    await s.getByLabel("Receiver address").fill(ctx.receiver.address);
    await s.getByLabel("Total (USDC)").fill("1");
    await s.getByLabel("Rate (USDC per second)").fill("0.001");
    await s.getByRole("button", { name: "Review stream" }).click();
    const review = page.locator("[data-review='stream-create']");
    await review.getByText("16 min 40 s (1000 s)").waitFor();
    await review.getByRole("button", { name: "Lock 1 USDC and start" }).click();
    await page.locator("[data-result]").getByText(/Stream stream_\S+ created/).waitFor();
    const tx = await txLink(page);
    const [row] = await svc.db.sql<{ txHash: string; profile: string }[]>`
      select tx_hash, profile from streams where merchant_id = ${ctx.m.id}
      order by created_at desc limit 1`;
    assert.equal(row.txHash, tx);
    assert.equal(row.profile, ctx.profile);
    assert.equal(await svc.deps.chain.usdcBalance(ctx.profile, ctx.payout), before - USDC);
  } finally {
    await context.close();
  }
}
