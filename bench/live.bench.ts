/**
 * Live updates: the time from a settlement being recorded (its transaction committed, by a
 * second process of the deployment) to the open checkout page showing Paid, in Chromium, over
 * the event stream (SSE) and, as the baseline in the same run, by polling (the page without
 * EventSource, as before); plus the same settlement to an EventSource-like client's `status`
 * event (the server's part alone).
 */
import { startTestService, type TestService } from "../tests/helpers/service.ts";
import { api, createMerchant, type TestMerchant } from "../tests/helpers/accounts.ts";
import { waitFor } from "../tests/helpers/poll.ts";
import { browserAvailable, launchBrowser } from "../tests/helpers/browser.ts";
import { openSse } from "../tests/helpers/sse.ts";
import { settleFromLog } from "../src/modules/payments/payments.service.ts";
import { percentile } from "./report.ts";
import type { Browser } from "playwright-core";

const SAMPLES = Number(Deno.env.get("BENCH_LIVE_SAMPLES") ?? "20");

async function newPayment(svc: TestService, m: TestMerchant): Promise<string> {
  const r = await api(svc)("POST", "/api/payments/initialize", {
    headers: { "x-api-key": m.apiKey },
    body: { amount: "1" },
  });
  if (r.status !== 201) throw new Error(r.text);
  return (r.json.data as { reference?: string })?.reference ?? (r.json.reference as string);
}

/** Records the settlement in `svc`'s process; resolves at its commit (Date.now(), ms). */
async function settle(svc: TestService, reference: string): Promise<number> {
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
  return Date.now();
}

/** When (Date.now() in the page) the status block first showed Paid. */
const WATCH_PAID = `
  globalThis.__paidAt = null;
  new MutationObserver(() => {
    if (globalThis.__paidAt === null && document.querySelector('#status[data-status="SUCCESS"]')) {
      globalThis.__paidAt = Date.now();
    }
  }).observe(document, { subtree: true, childList: true, attributes: true });
`;

async function inChromium(
  browser: Browser,
  web: TestService,
  writer: TestService,
  m: TestMerchant,
  polling: boolean,
): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    const ref = await newPayment(web, m);
    const page = await browser.newPage();
    await page.addInitScript(WATCH_PAID);
    if (polling) await page.addInitScript("delete globalThis.EventSource");
    await page.goto(`${web.baseUrl}/checkout/${ref}`);
    await waitFor(async () =>
      (await page.locator("#status").getAttribute("data-live-state")) ===
        (polling ? "polling" : "streaming"), { what: "the page's live state" });
    // A random phase against the poll's period, as a shopper's signature has.
    await new Promise((r) => setTimeout(r, Math.random() * 2000));
    const recorded = await settle(writer, ref);
    const paidAt = await waitFor(
      () => page.evaluate<number | null>("globalThis.__paidAt"),
      { timeoutMs: 15_000, intervalMs: 20, what: "Paid" },
    );
    out.push(paidAt - recorded);
    await page.close();
  }
  return out;
}

async function viaEventSource(
  web: TestService,
  writer: TestService,
  m: TestMerchant,
): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    const ref = await newPayment(web, m);
    const stream = await openSse(`${web.baseUrl}/checkout/${ref}/events`);
    // performance.now() (sub-millisecond): both ends are in this process. The event can arrive
    // before the writer has read its own COMMIT's answer, so a sample may be slightly negative.
    const recorded = settle(writer, ref).then(() => performance.now());
    // An earlier event of the payment (its creation, announced late) may come first.
    while (true) {
      const got = await stream.next(15_000);
      const at = performance.now();
      if (got === "end") throw new Error("the stream ended");
      if (JSON.parse(got.data).status !== "SUCCESS") continue;
      out.push(at - await recorded);
      break;
    }
    await stream.close();
  }
  return out;
}

function line(name: string, ms: number[], baseline?: number[], places = 0): string {
  const p50 = percentile(ms, 50);
  const ratio = baseline ? `  ${(percentile(baseline, 50) / p50).toFixed(1)}× faster at p50` : "";
  return `${name.padEnd(52)} p50 ${p50.toFixed(places).padStart(5)} ms  p95 ${
    percentile(ms, 95).toFixed(places).padStart(5)
  } ms  (n=${ms.length})${ratio}`;
}

export async function run() {
  const web = await startTestService({ env: { RATE_LIMITS: "off" } });
  const writer = await startTestService({ sameDeploymentAs: web, workers: false });
  try {
    const m = await createMerchant(web, { businessName: "Bench Shop" });
    console.log("settlement recorded by another process → checkout shows it");
    const events = await viaEventSource(web, writer, m);
    console.log(line("  EventSource client: status event", events, undefined, 1));
    if (!browserAvailable()) {
      console.log("  (Chromium not found: the page measurements are skipped)");
      return;
    }
    const browser = await launchBrowser();
    try {
      const polled = await inChromium(browser, web, writer, m, true);
      const streamed = await inChromium(browser, web, writer, m, false);
      console.log(line("  Chromium, polling every 2 s (baseline)", polled));
      console.log(line("  Chromium, server-sent events", streamed, polled));
    } finally {
      await browser.close();
    }
  } finally {
    await writer.close();
    await web.close();
  }
}
