/**
 * The dashboard's Escrow section over HTTP: the list with state, parties and countdown; release,
 * confirm and dispute only after a confirmation step; refusals shown inline; CSRF; another
 * merchant's escrow out of reach.
 */
import assert from "node:assert/strict";
import { startTestService } from "../helpers/service.ts";
import { dashboardClient } from "../helpers/dashboard-client.ts";
import { api, createMerchant } from "../helpers/accounts.ts";
import { M } from "../../src/http/messages.ts";
import { getEscrow, onChain } from "../../src/modules/escrow/escrow.service.ts";

const USDC = 1_000_000n;

Deno.test("dashboard: Escrow section", async (t) => {
  const svc = await startTestService({ env: { RATE_LIMITS: "off" } });
  const d = dashboardClient(svc);
  const call = api(svc);
  const chain = svc.deps.chain;
  try {
    const m = await createMerchant(svc);
    const other = await createMerchant(svc);
    const wallet = async () => {
      const r = await call("POST", "/api/wallets", {
        headers: { "x-api-key": m.apiKey },
        body: {},
      });
      return r.json.wallet as { id: string; address: string };
    };
    const depositor = await wallet();
    const beneficiary = await wallet();
    await chain.mintUsdc({
      profile: "production",
      to: depositor.address as `0x${string}`,
      amount: 100n * USDC,
    });
    let n = 0;
    const create = async () => {
      const r = await call("POST", "/api/escrow/create", {
        headers: { authorization: `Bearer ${m.apiKey}`, "idempotency-key": `d${n++}` },
        body: {
          depositorWalletId: depositor.id,
          beneficiarySCA: beneficiary.address,
          amount: "3",
          expiresInSeconds: 7200,
          description: "Translation",
        },
      });
      assert.equal(r.status, 201, r.text);
      return r.json.reference as string;
    };
    const status = async (reference: string) => {
      const row = await getEscrow(svc.deps, { merchantId: m.id, profile: "production" }, reference);
      assert.equal((await onChain(svc.deps, row)).status, row.status);
      return row;
    };
    const first = await create();
    const b = await d.open(m, "/dashboard/escrow");

    await t.step("lists escrows with state, parties, countdown and actions", async () => {
      const r = await d.get(b, "/dashboard/escrow");
      assert.equal(r.status, 200);
      assert.match(r.headers.get("content-type")!, /text\/html/);
      assert.ok(r.text.includes(first));
      assert.ok(r.text.includes(depositor.address));
      assert.ok(r.text.includes(beneficiary.address));
      assert.match(r.text, /ACTIVE/);
      assert.match(r.text, /\(in 2 h 0 min\)|\(in 1 h 59 min\)/);
      assert.match(r.text, /Release to the beneficiary/);
      assert.match(r.text, /Confirm delivery/);
      assert.match(r.text, /Dispute/);
      assert.match(r.text, /href="\/dashboard\/escrow"[^>]*>Escrow</);
    });

    await t.step("confirm delivery: review first, nothing sent; then confirmed", async () => {
      const form = { reference: first, action: "confirm", callerSCA: beneficiary.address };
      const review = await d.post(b, "/dashboard/escrow/review", form);
      assert.equal(review.status, 200, review.text);
      assert.match(review.text, /data-escrow-review="confirm"/);
      assert.equal((await status(first)).confirmedAt, null, "the review sends nothing");
      const refused = await d.post(b, "/dashboard/escrow/act", form, { token: null });
      assert.equal(refused.status, 403);
      const created = await d.post(b, "/dashboard/escrow/create", {
        depositorWalletId: depositor.id,
        beneficiarySCA: beneficiary.address,
        amount: "1",
        expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
      }, { token: null });
      assert.equal(created.status, 403);
      const [n] = await svc.db.sql<{ n: number }[]>`
        select count(*)::int as n from escrow_creates where merchant_id = ${m.id}`;
      assert.equal(n.n, 1, "only the API's escrow");
      const done = await d.post(b, "/dashboard/escrow/act", form);
      assert.equal(done.status, 200, done.text);
      assert.ok(done.text.includes(M.escrowConfirmed));
      assert.notEqual((await status(first)).confirmedAt, null);
    });

    await t.step("dispute with a reason, then release is refused inline", async () => {
      const form = {
        reference: first,
        action: "dispute",
        callerSCA: depositor.address,
        reason: "Wrong language",
      };
      const review = await d.post(b, "/dashboard/escrow/review", form);
      assert.match(review.text, /Wrong language/);
      const done = await d.post(b, "/dashboard/escrow/act", form);
      assert.equal(done.status, 200, done.text);
      assert.ok(done.text.includes(M.escrowDisputed));
      const row = await status(first);
      assert.equal(row.status, "DISPUTED");
      assert.equal(row.disputeReason, "Wrong language");
      const rel = await d.post(b, "/dashboard/escrow/act", {
        reference: first,
        action: "release",
        callerSCA: depositor.address,
      });
      assert.equal(rel.status, 400);
      assert.ok(rel.text.includes("Escrow is DISPUTED — cannot release."));
    });

    await t.step("release after confirmation", async () => {
      const ref = await create();
      const form = { reference: ref, action: "release", callerSCA: depositor.address };
      const review = await d.post(b, "/dashboard/escrow/review", form);
      assert.match(review.text, /Release <strong>3\.000000 USDC<\/strong>/);
      const done = await d.post(b, "/dashboard/escrow/act", form);
      assert.equal(done.status, 200, done.text);
      assert.ok(done.text.includes(M.escrowReleased));
      assert.equal((await status(ref)).status, "RELEASED");
      // A settled escrow's expiry is a fact, not a countdown; the active one still counts down.
      const list = await d.get(b, "/dashboard/escrow");
      const panel = (reference: string) => {
        const at = list.text.indexOf(`<code>${reference}</code>`);
        assert.ok(at >= 0, reference);
        const end = list.text.indexOf('class="panel"', at);
        return list.text.slice(at, end < 0 ? undefined : end);
      };
      assert.doesNotMatch(panel(ref), /data-countdown/);
      assert.match(panel(ref), /\d{4}-\d\d-\d\d \d\d:\d\d UTC/);
      const shown = panel(ref).replace(/<[^>]*>/g, "");
      assert.doesNotMatch(shown, /T\d\d:\d\d:\d\d/, "no ISO strings shown");
    });

    await t.step("another merchant cannot see or act on it", async () => {
      const ob = await d.open(other, "/dashboard/escrow");
      const list = await d.get(ob, "/dashboard/escrow");
      assert.ok(!list.text.includes(first));
      const r = await d.post(ob, "/dashboard/escrow/act", {
        reference: first,
        action: "release",
        callerSCA: depositor.address,
      });
      assert.equal(r.status, 404);
      assert.ok(r.text.includes(M.escrowNotFound));
    });
  } finally {
    await svc.close();
  }
});
