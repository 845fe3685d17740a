/**
 * The dashboard's payment pages over HTTP, without a browser: Overview (the profile's stats,
 * the daily volume chart, the polling region), Payments (filters, search, cursor pages, the
 * detail page with its deliveries and replay) and Payment links (creation with the API's
 * texts inline, the list, QR codes). A merchant gets a mix of payments: settled on chain,
 * expired by the clock, settled after expiry, pending, and one on the testnet.
 */
import assert from "node:assert/strict";
import { type Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { startTestService, type TestService } from "../helpers/service.ts";
import { dashboardClient } from "../helpers/dashboard-client.ts";
import { api, createMerchant } from "../helpers/accounts.ts";
import { startReceiver } from "../helpers/receiver.ts";
import { payer } from "../helpers/payer.ts";
import { waitFor } from "../helpers/poll.ts";
import { ANVIL_KEYS } from "../helpers/anvil.ts";
import { M } from "../../src/http/messages.ts";
import { checksum } from "../../src/chain/address.ts";
import * as payments from "../../src/modules/payments/payments.service.ts";

const HOUR = 3600 * 1000;

const HX = { "hx-request": "true" };

/** The payments listed in a table, in order. */
function refsIn(html: string, table = "payments-table"): string[] {
  const start = html.indexOf(`id="${table}"`);
  if (start < 0) return [];
  const part = html.slice(start, html.indexOf("</table>", start));
  return [...part.matchAll(/<tr data-reference="([^"]+)" data-status="([A-Z]+)"/g)].map((m) =>
    `${m[1]}:${m[2]}`
  );
}

function stat(html: string, name: string): string {
  const m = new RegExp(`data-stat="${name}" data-value="([^"]*)"`).exec(html);
  assert.ok(m, `stat ${name}`);
  return m[1];
}

function escape(s: string): string {
  return s.replaceAll("&", "&amp;").replaceAll('"', "&quot;").replaceAll("'", "&#39;")
    .replaceAll("<", "&lt;").replaceAll(">", "&gt;");
}

function fieldError(field: string, text: string): RegExp {
  const t = escape(text).replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  return new RegExp(`<p class="field-error" id="f-${field}-error">${t}</p>`);
}

/** A payer's permit and router call for a link, made now and sent later (a late payment). */
async function prepare(svc: TestService, key: Hex, reference: string) {
  const account = privateKeyToAccount(key);
  const pd = await (await fetch(
    `${svc.baseUrl}/checkout/${reference}/pay-data?payer=${account.address}`,
  )).json();
  const typed = pd.permit;
  const signature = await account.signTypedData({
    domain: { ...typed.domain, chainId: Number(typed.domain.chainId) },
    types: typed.types,
    primaryType: typed.primaryType,
    message: {
      ...typed.message,
      value: BigInt(typed.message.value),
      nonce: BigInt(typed.message.nonce),
      deadline: BigInt(typed.message.deadline),
    },
  });
  const res = await fetch(`${svc.baseUrl}/checkout/${reference}/calldata`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ payer: account.address, signature, deadline: typed.message.deadline }),
  });
  const call = await res.json();
  assert.equal(res.status, 200, JSON.stringify(call));
  return call as { to: Hex; data: Hex };
}

Deno.test("dashboard payment pages over HTTP", async (t) => {
  const receiver = startReceiver();
  const svc = await startTestService({ env: { RATE_LIMITS: "off" } });
  const d = dashboardClient(svc);
  const alice = payer(svc, ANVIL_KEYS[1]);
  const status = async (ref: string) =>
    (await svc.db.sql`select status from payments where reference = ${ref}`)[0]?.status;
  try {
    const m = await createMerchant(svc, { businessName: "Chart Shop" });
    const other = await createMerchant(svc, { businessName: "Other Shop" });
    await alice.fund(1_000_000_000n);

    await t.step("page routes without a session redirect to the login page", async () => {
      for (
        const path of [
          "/dashboard",
          "/dashboard/overview/live",
          "/dashboard/payments",
          "/dashboard/payments?status=SUCCESS&reference=abc",
          "/dashboard/payments/pay_ref_AAAAAAAAAAAAAAAAAAAA",
          "/dashboard/payments/pay_ref_AAAAAAAAAAAAAAAAAAAA/status",
          "/dashboard/links",
          "/dashboard/links/pay_ref_AAAAAAAAAAAAAAAAAAAA/qr.svg",
        ]
      ) {
        const r = await d.get(null, path);
        assert.equal(r.status, 302, path);
        assert.equal(
          r.headers.get("location"),
          `/dashboard/login?next=${encodeURIComponent(path)}`,
        );
      }
      // The polling region of a page whose session ended sends the browser to log in.
      const hx = await d.get(null, "/dashboard/overview/live?v=x", {
        ...HX,
        "hx-current-url": `${svc.baseUrl}/dashboard`,
      });
      assert.equal(hx.status, 401);
      assert.equal(hx.headers.get("hx-redirect"), "/dashboard/login?next=%2Fdashboard");
    });

    const b = await d.open(m);

    await t.step("a new merchant: the overview's empty state", async () => {
      const page = await d.get(b, "/dashboard");
      assert.equal(page.status, 200);
      assert.match(page.headers.get("content-type")!, /^text\/html/);
      assert.match(page.text, /<h1 id="overview-title">Overview<\/h1>/);
      assert.match(page.text, /<a href="\/dashboard"[^>]*aria-current="page">Overview<\/a>/);
      assert.ok(page.text.includes("No payments yet."));
      assert.equal(stat(page.text, "totalPayments"), "0");
      assert.equal(stat(page.text, "totalVolume"), "0");
      assert.equal(stat(page.text, "successRate"), "0");
      assert.equal([...page.text.matchAll(/<rect class="bar-zero"/g)].length, 30);
      assert.equal([...page.text.matchAll(/<rect class="bar"/g)].length, 0);
      assert.match(page.text, /No settled payments in the last 30 days\./);
      // The nav, in order.
      const nav = [...page.text.matchAll(/<li><a href="(\/dashboard[^"]*)"/g)].map((x) => x[1]);
      assert.deepEqual(nav.slice(0, 3), ["/dashboard", "/dashboard/payments", "/dashboard/links"]);
      const links = await d.get(b, "/dashboard/links");
      assert.ok(links.text.includes("No payment links yet."));
      const list = await d.get(b, "/dashboard/payments");
      assert.ok(list.text.includes("No payments yet."));
    });

    await t.step("the new forms refuse a missing or wrong CSRF token", async () => {
      const another = await d.open(m, "/dashboard/links");
      const forms: [string, Record<string, string>][] = [
        ["/dashboard/links", { amount: "5" }],
        ["/dashboard/payments/pay_ref_AAAAAAAAAAAAAAAAAAAA/deliveries/msg_x/replay", {}],
      ];
      const attempts: [string, Parameters<typeof d.post>[3]][] = [
        ["no token", { token: null }],
        ["a wrong token", { token: "A".repeat(43) }],
        ["another browser's token", { token: another.token }],
        ["a valid token from another origin", { origin: "https://evil.example" }],
        ["a valid token with no Origin", { origin: null }],
      ];
      for (const [path, fields] of forms) {
        for (const [what, opts] of attempts) {
          const r = await d.post(b, path, fields, opts);
          assert.equal(r.status, 403, `${path} with ${what}`);
          assert.ok(r.text.includes(escape(M.dashCsrf)), `${path} with ${what}`);
        }
      }
      const [{ n }] = await svc.db.sql`select count(*)::int as n from payments`;
      assert.equal(n, 0, "no payment was created");
    });

    await t.step("creating a link: the API's texts next to their fields", async () => {
      const bad = await d.post(b, "/dashboard/links", {
        amount: "12.3456789",
        description: "x".repeat(501),
        webhookUrl: "ftp://hooks.example/x",
      });
      assert.equal(bad.status, 400);
      assert.match(bad.text, fieldError("amount", M.paymentAmount));
      assert.match(bad.text, fieldError("description", M.paymentDescription));
      assert.match(bad.text, fieldError("webhookUrl", M.webhookUrlInvalid));
      assert.match(bad.text, /name="amount" type="text" value="12.3456789"/, "values are kept");
      const empty = await d.post(b, "/dashboard/links", { amount: "" }, { headers: HX });
      assert.equal(empty.status, 400);
      assert.doesNotMatch(empty.text, /<html/);
      assert.match(empty.text, fieldError("amount", M.paymentAmount));
      assert.doesNotMatch(empty.text, /f-webhookUrl-error/);

      // No payout wallet: the API's text, as a notice above the form.
      const walletless = await createMerchant(svc, { walletProvider: "LINK_WALLET" });
      const wb = await d.open(walletless, "/dashboard/links");
      const refused = await d.post(wb, "/dashboard/links", { amount: "5" });
      assert.equal(refused.status, 400);
      assert.ok(refused.text.includes(escape(M.paymentNoWallet)));
      assert.ok(refused.text.includes("Payments need a payout wallet first."));
    });

    // The mix: A settles now, B and C (testnet) expire, L is paid after it expired,
    // D stays pending, F settles a day later.
    const createLink = async (fields: Record<string, string>) => {
      const r = await d.post(b, "/dashboard/links", fields, { headers: HX });
      assert.equal(r.status, 200, r.text);
      const ref = /id="created-link" data-reference="(pay_ref_[0-9A-Za-z]+)"/.exec(r.text)?.[1];
      assert.ok(ref, "the new link is shown");
      assert.ok(r.text.includes(escape(M.dashLinkCreated)));
      svc.clock.advance(1000); // distinct creation times keep the order certain
      return ref;
    };
    const refs: Record<string, string> = {};
    let hashA = "";

    await t.step(
      "links, a testnet session, settlement on chain, expiry, a late payment",
      async () => {
        refs.A = await createLink({
          amount: "25.5",
          description: "Two mugs",
          webhookUrl: `${receiver.url}/hook`,
        });
        // A plain form answers 303 to the list, which shows the new link.
        const plain = await d.post(b, "/dashboard/links", { amount: "10" });
        assert.equal(plain.status, 303);
        const to = plain.headers.get("location")!;
        refs.B = /created=(pay_ref_\w+)$/.exec(to)![1];
        const shown = await d.get(b, to);
        assert.match(shown.text, new RegExp(`id="created-link" data-reference="${refs.B}"`));
        svc.clock.advance(1000);
        const key = await api(svc)("POST", "/api/keys", {
          cookie: m.cookie,
          body: { type: "secret", environment: "test" },
        });
        assert.equal(key.status, 201, key.text);
        const session = await api(svc)("POST", "/api/payments/initialize", {
          headers: { "x-api-key": (key.json.key as { key: string }).key },
          body: { amount: "7.25", description: "Test order" },
        });
        assert.equal(session.status, 201, session.text);
        refs.C = session.json.reference as string;
        svc.clock.advance(1000);
        refs.L = await createLink({ amount: "2", description: "Late" });

        const { hash } = await alice.pay(refs.A);
        hashA = hash;
        await waitFor(async () => (await status(refs.A)) === "SUCCESS", { what: "A settles" });
        const late = await prepare(svc, ANVIL_KEYS[1], refs.L);

        svc.clock.advance(25 * HOUR);
        assert.ok(await payments.expireDue(svc.deps) >= 3);
        assert.equal(await status(refs.L), "EXPIRED");
        await alice.receipt(await alice.send(late.to, late.data));
        await waitFor(async () => (await status(refs.L)) === "SUCCESS", { what: "L settles" });

        refs.D = await createLink({ amount: "3.5" });
        refs.F = await createLink({ amount: "4.25", description: "Next day" });
        await alice.pay(refs.F);
        await waitFor(async () => (await status(refs.F)) === "SUCCESS", { what: "F settles" });
      },
    );

    await t.step("the overview's numbers are the API profile's stats", async () => {
      // Both are of the session's mode (issue 23: environments are part of identity): live, so
      // the testnet checkout session C is left out; in test mode it is the only one.
      const me = await api(svc)("GET", "/api/merchant/me", { cookie: m.cookie });
      assert.equal(me.status, 200);
      const stats = me.json.stats as Record<string, number>;
      assert.deepEqual(stats, {
        totalPayments: 5,
        successfulPayments: 3,
        totalVolume: 31.75,
        successRate: 60,
      });
      const page = await d.get(b, "/dashboard");
      assert.equal(page.status, 200);
      assert.equal(Number(stat(page.text, "totalVolume")), stats.totalVolume);
      assert.equal(Number(stat(page.text, "totalPayments")), stats.totalPayments);
      assert.equal(Number(stat(page.text, "successRate")), stats.successRate);
      assert.match(page.text, /31\.75 <span class="unit">USDC<\/span>/);
      assert.ok(page.text.includes("3 successful"));
      assert.deepEqual(refsIn(page.text, "recent-payments"), [
        `${refs.F}:SUCCESS`,
        `${refs.D}:PENDING`,
        `${refs.L}:SUCCESS`,
        `${refs.B}:EXPIRED`,
        `${refs.A}:SUCCESS`,
      ]);
      assert.ok(!page.text.includes("No payments yet."));
      await svc.db.sql`update merchant_sessions set mode = 'test' where merchant_id = ${m.id}`;
      try {
        const testMode = await d.get(b, "/dashboard");
        assert.deepEqual(refsIn(testMode.text, "recent-payments"), [`${refs.C}:EXPIRED`]);
        assert.match(
          testMode.text,
          new RegExp(`data-reference="${refs.C}"[\\s\\S]*?Settle_Testnet`),
        );
        const meTest = await api(svc)("GET", "/api/merchant/me", { cookie: m.cookie });
        assert.equal((meTest.json.stats as Record<string, number>).totalPayments, 1);
      } finally {
        await svc.db.sql`update merchant_sessions set mode = 'live' where merchant_id = ${m.id}`;
      }
    });

    await t.step("the chart: a bar per day with data, zero days, the right total", async () => {
      const settled = await svc.db.sql<{ reference: string; settledAt: Date }[]>`
        select reference, settled_at from payments where status = 'SUCCESS'`;
      const dayOf = (ref: string) =>
        settled.find((p) => p.reference === ref)!.settledAt.toISOString().slice(0, 10);
      assert.notEqual(dayOf(refs.A), dayOf(refs.F), "settled a day apart");
      assert.equal(dayOf(refs.L), dayOf(refs.F));

      const page = await d.get(b, "/dashboard");
      const bars = [
        ...page.text.matchAll(/<rect class="bar" [^>]*data-day="([\d-]+)" data-volume="([\d.]+)"/g),
      ].map((x) => [x[1], x[2]]);
      assert.deepEqual(bars, [[dayOf(refs.A), "25.5"], [dayOf(refs.F), "6.25"]]);
      assert.equal([...page.text.matchAll(/<rect class="bar-zero"/g)].length, 28);
      assert.match(page.text, /<figure class="chart" data-total="31.75">/);
      assert.match(page.text, /<svg class="volume-chart" viewBox="0 0 300 120"[^>]*role="img"/);
      assert.match(page.text, /<title id="chart-title">Daily settled volume in USDC/);
      assert.match(
        page.text,
        /<desc id="chart-desc">31\.75 USDC settled in 3 payments from [\d-]+ to [\d-]+; the highest day was [\d-]+ with 25\.50 USDC\./,
      );
      // The accessible table lists every day, newest first.
      const rows = [...page.text.matchAll(/<th scope="row">([\d-]+)<\/th>/g)].map((x) => x[1]);
      assert.equal(rows.length, 30);
      assert.equal(rows[0], svc.clock.now().toISOString().slice(0, 10));

      const days = await payments.dailyVolume(svc.deps, m.id);
      assert.equal(days.length, 30);
      assert.equal(days.reduce((a, x) => a + x.volume, 0n), 31_750_000n);
      assert.equal(days.filter((x) => x.volume === 0n && x.count === 0).length, 28);
      assert.equal(days.at(-1)!.day, svc.clock.now().toISOString().slice(0, 10));
    });

    await t.step("the live region answers 204 until something changes", async () => {
      const first = await d.get(b, "/dashboard/overview/live", HX);
      assert.equal(first.status, 200);
      assert.match(first.text, /^<div id="overview-live" class="live" data-version="([\w-]+)"/);
      assert.match(
        first.text,
        /hx-trigger="live:refresh" data-live-stream="\/dashboard\/events" data-live-event="payment" data-live-poll="\d+"/,
      );
      const version = /data-version="([\w-]+)"/.exec(first.text)![1];
      const same = await d.get(b, `/dashboard/overview/live?v=${version}`, HX);
      assert.equal(same.status, 204);
      assert.equal(same.text, "");
      refs.G = await createLink({ amount: "1" });
      const changed = await d.get(b, `/dashboard/overview/live?v=${version}`, HX);
      assert.equal(changed.status, 200);
      assert.notEqual(/data-version="([\w-]+)"/.exec(changed.text)![1], version);
      assert.equal(stat(changed.text, "totalPayments"), "6", "the live session's: C is testnet's");
      assert.equal(refsIn(changed.text, "recent-payments")[0], `${refs.G}:PENDING`);
      const plain = await d.get(b, "/dashboard/overview/live");
      assert.equal(plain.status, 302);
      assert.equal(plain.headers.get("location"), "/dashboard");
    });

    await t.step("payments: filter by status and chain, search by reference", async () => {
      const list = async (query: string, headers: Record<string, string> = {}) => {
        const r = await d.get(b, `/dashboard/payments${query}`, headers);
        assert.equal(r.status, 200, `${query}: ${r.text}`);
        return refsIn(r.text);
      };
      const { A, B, C, D, F, G, L } = refs;
      // Live mode: production's payments only; C (testnet) is test mode's.
      assert.deepEqual(await list(""), [
        `${G}:PENDING`,
        `${F}:SUCCESS`,
        `${D}:PENDING`,
        `${L}:SUCCESS`,
        `${B}:EXPIRED`,
        `${A}:SUCCESS`,
      ]);
      assert.deepEqual(await list("?status=SUCCESS"), [
        `${F}:SUCCESS`,
        `${L}:SUCCESS`,
        `${A}:SUCCESS`,
      ]);
      assert.deepEqual(await list("?status=EXPIRED"), [`${B}:EXPIRED`]);
      assert.deepEqual(await list("?status=PENDING"), [`${G}:PENDING`, `${D}:PENDING`]);
      assert.deepEqual(await list("?status=FAILED"), []);
      assert.equal((await list("?chain=Settle")).length, 6);
      // The other mode's chain is not a filter of this one; test mode lists C only.
      const otherChain = await d.get(b, "/dashboard/payments?chain=Settle_Testnet");
      assert.equal(otherChain.status, 400);
      assert.equal((await d.post(b, "/dashboard/mode", { mode: "test" })).status, 303);
      assert.deepEqual(await list(""), [`${C}:EXPIRED`]);
      assert.deepEqual(await list("?chain=Settle_Testnet"), [`${C}:EXPIRED`]);
      assert.equal((await d.post(b, "/dashboard/mode", { mode: "live" })).status, 303);
      // Any part of the reference, in any case.
      assert.deepEqual(await list(`?reference=${A.slice(-9).toLowerCase()}`), [`${A}:SUCCESS`]);
      assert.deepEqual(await list(`?reference=${A.slice(8, 16)}&status=SUCCESS`), [
        `${A}:SUCCESS`,
      ]);
      const none = await d.get(b, `/dashboard/payments?reference=${B.slice(-8)}&status=SUCCESS`);
      assert.equal(refsIn(none.text).length, 0);
      assert.ok(none.text.includes("No payments match."));
      // The filter form swaps only the results (the search box keeps focus while typing).
      const part = await d.get(b, "/dashboard/payments?status=EXPIRED", {
        ...HX,
        "hx-target": "payments-results",
      });
      assert.match(part.text, /^<div id="payments-results"/);
      assert.deepEqual(refsIn(part.text), [`${B}:EXPIRED`]);
      // Rows show their chain, amount and the late flag.
      const all = await d.get(b, "/dashboard/payments");
      assert.match(all.text, new RegExp(`data-reference="${L}"[\\s\\S]*?settled after expiry`));
      assert.match(
        all.text,
        new RegExp(`data-reference="${A}"[\\s\\S]*?<span class="amount">25.50</span>`),
      );
      for (const bad of ["?status=LOST", "?chain=Mainnet"]) {
        const r = await d.get(b, `/dashboard/payments${bad}`);
        assert.equal(r.status, 400, bad);
        assert.ok(r.text.includes(escape(M.dashPaymentsFilter)), bad);
      }
      const cursor = await d.get(b, "/dashboard/payments?cursor=bm9wZQ");
      assert.equal(cursor.status, 400);
      assert.ok(cursor.text.includes(escape(M.paymentCursor)));
    });

    await t.step("payments: cursor pages, and Load more appends rows in place", async () => {
      const seen: string[] = [];
      let url: string | null = "/dashboard/payments?limit=3";
      let pages = 0;
      while (url) {
        const r = await d.get(b, url);
        assert.equal(r.status, 200);
        seen.push(...refsIn(r.text));
        const next =
          /<tr id="load-more" class="more"><td colspan="6"><a class="button" href="([^"]+)"/
            .exec(r.text)?.[1];
        url = next ? next.replaceAll("&amp;", "&") : null;
        if (url) assert.match(url, /^\/dashboard\/payments\?limit=3&cursor=/);
        if (pages > 0) assert.ok(r.text.includes("Back to the newest payments"));
        pages++;
      }
      assert.equal(pages, 2, "live mode's 6 payments");
      assert.deepEqual(seen, refsIn((await d.get(b, "/dashboard/payments")).text));

      const first = await d.get(b, "/dashboard/payments?status=SUCCESS&limit=2");
      const next = /id="load-more"[\s\S]*?hx-get="([^"]+)"/.exec(first.text)![1]
        .replaceAll("&amp;", "&");
      assert.match(next, /status=SUCCESS/);
      const more = await d.get(b, next, { ...HX, "hx-target": "load-more" });
      assert.equal(more.status, 200);
      assert.doesNotMatch(more.text, /<table|<html|id="load-more"/);
      assert.match(
        more.text,
        new RegExp(`^<tr data-reference="${refs.A}" data-status="SUCCESS" data-first-new=""`),
      );
    });

    await t.step(
      "the detail page: timeline, payer, explorer link, deliveries, replay",
      async () => {
        const delivery = await waitFor(async () => {
          const [row] = await svc.db.sql<{ id: string; status: string }[]>`
          select id, status from webhook_deliveries where reference = ${refs.A}`;
          return row?.status === "delivered" ? row : null;
        }, { what: "A's payment.settled delivery" });
        const page = await d.get(b, `/dashboard/payments/${refs.A}`);
        assert.equal(page.status, 200);
        const html = page.text;
        assert.match(html, /<title>Payment pay_ref_\w+ · Settlement<\/title>/);
        assert.match(html, /<a href="\/dashboard\/payments"[^>]*aria-current="page">Payments<\/a>/);
        assert.match(html, /<h1 id="payment-title">25.50 <span class="unit">USDC<\/span><\/h1>/);
        assert.match(html, /<div id="payment-status" class="panel" data-status="SUCCESS">/);
        assert.doesNotMatch(
          html,
          /id="payment-status"[^>]*hx-trigger/,
          "a settled payment does not poll",
        );
        assert.match(html, /data-step="created"[\s\S]*data-step="settled"/);
        assert.doesNotMatch(html, /data-step="expired"/);
        assert.ok(html.includes(checksum(alice.address)));
        assert.ok(html.includes(hashA));
        assert.ok(html.includes(`href="${svc.baseUrl}/explorer/production/tx/${hashA}"`));
        assert.ok(html.includes(`value="${svc.baseUrl}/checkout/${refs.A}"`));
        assert.ok(html.includes(`${receiver.url}/hook`));
        assert.ok(html.includes("Two mugs"));
        assert.ok(html.includes(`src="/dashboard/links/${refs.A}/qr.svg"`));
        assert.match(html, new RegExp(`id="delivery-${delivery.id}" data-status="delivered"`));
        assert.match(html, /<code>payment\.settled<\/code>/);

        const before = receiver.received.length;
        const replay = await d.post(
          b,
          `/dashboard/payments/${refs.A}/deliveries/${delivery.id}/replay`,
          {},
          { headers: HX },
        );
        assert.equal(replay.status, 200);
        assert.match(replay.text, /^<div id="payment-deliveries" class="panel">/);
        assert.ok(replay.text.includes(`${M.dashReplayed} ${delivery.id}: delivered`));
        assert.equal(receiver.received.length, before + 1);
        const foreign = await d.post(
          b,
          `/dashboard/payments/${refs.B}/deliveries/${delivery.id}/replay`,
        );
        assert.equal(foreign.status, 404, "a delivery of another payment");
        assert.ok(foreign.text.includes(M.deliveryNotFound));
        assert.equal(receiver.received.length, before + 1);

        const late = await d.get(b, `/dashboard/payments/${refs.L}`);
        assert.match(
          late.text,
          /data-step="expired"[\s\S]*data-step="settled"[\s\S]*Settled after expiry/,
        );
        assert.ok(late.text.includes("No webhook URL on this payment."));
        // C is testnet's: not found in live mode, shown in test mode.
        const hidden = await d.get(b, `/dashboard/payments/${refs.C}`);
        assert.equal(hidden.status, 404);
        assert.equal((await d.post(b, "/dashboard/mode", { mode: "test" })).status, 303);
        const expired = await d.get(b, `/dashboard/payments/${refs.C}`);
        // Switching on a detail page returns to its section's list (the record is the other
        // mode's); a `back` off the dashboard is not followed.
        const toLive = await d.post(b, "/dashboard/mode", {
          mode: "live",
          back: `/dashboard/payments/${refs.C}`,
        });
        assert.equal(toLive.status, 303);
        assert.equal(toLive.headers.get("location"), "/dashboard/payments");
        // The browser follows the redirect: the page shown in live mode brings its forms' token.
        await d.get(b, "/dashboard/payments");
        const evil = await d.post(b, "/dashboard/mode", { mode: "live", back: "//evil.example/" });
        assert.equal(evil.headers.get("location"), "/dashboard");
        assert.match(expired.text, /data-status="EXPIRED"/);
        assert.match(expired.text, /data-step="expired"[\s\S]*Expired unpaid/);
        assert.ok(expired.text.includes("Settle_Testnet"));

        // A pending payment's status is live (its events, polling as the fallback); 204 while
        // nothing changed.
        const pending = await d.get(b, `/dashboard/payments/${refs.D}`);
        const poll =
          /id="payment-status" class="panel" data-status="PENDING" hx-get="([^"]+)" hx-trigger="live:refresh" data-live-stream="\/dashboard\/events" data-live-event="payment" data-live-poll="4" data-live-ref="(\w+)"/
            .exec(pending.text);
        assert.ok(poll, "the pending status is live");
        assert.equal(poll[2], refs.D);
        assert.equal((await d.get(b, poll[1], HX)).status, 204);
        const fresh = await d.get(b, `/dashboard/payments/${refs.D}/status`, HX);
        assert.equal(fresh.status, 200);
        assert.match(fresh.text, /^<div id="payment-status"/);
        assert.match(fresh.text, /<div id="payment-deliveries" class="panel" hx-swap-oob="true">/);
      },
    );

    await t.step("another merchant's or an unknown reference is a 404", async () => {
      const ob = await d.open(other);
      for (const path of [`/dashboard/payments/${refs.A}`, "/dashboard/payments/pay_ref_nope"]) {
        const r = await d.get(ob, path);
        assert.equal(r.status, 404, path);
        assert.match(r.text, /^<!DOCTYPE html>/);
        assert.ok(r.text.includes(M.paymentNotFound));
      }
      const qr = await d.get(ob, `/dashboard/links/${refs.A}/qr.svg`);
      assert.equal(qr.status, 404);
      const replay = await d.post(ob, `/dashboard/payments/${refs.A}/deliveries/msg_x/replay`);
      assert.equal(replay.status, 404);
      assert.equal(refsIn((await d.get(ob, "/dashboard/payments")).text).length, 0);
      const own = await d.get(b, `/dashboard/links/${refs.A}/qr.svg`);
      assert.equal(own.status, 200);
      assert.equal(own.headers.get("content-type"), "image/svg+xml");
      assert.match(own.text, /^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/);
    });

    await t.step("payment links: the links with their status, copy and QR", async () => {
      const page = await d.get(b, "/dashboard/links");
      assert.equal(page.status, 200);
      const { A, B, D, F, G, L } = refs;
      assert.deepEqual(refsIn(page.text, "links-table"), [
        `${G}:PENDING`,
        `${F}:SUCCESS`,
        `${D}:PENDING`,
        `${L}:SUCCESS`,
        `${B}:EXPIRED`,
        `${A}:SUCCESS`,
      ], "links only: no checkout session");
      assert.match(
        page.text,
        new RegExp(
          `<code id="url-${A}" class="visually-hidden">${svc.baseUrl}/checkout/${A}</code>`,
        ),
      );
      assert.match(page.text, new RegExp(`<button type="button" data-copy="url-${A}">Copy`));
      assert.match(
        page.text,
        new RegExp(`<img src="/dashboard/links/${A}/qr.svg" alt="QR code of the checkout link`),
      );
    });
  } finally {
    await svc.close();
    await receiver.close();
  }
});
