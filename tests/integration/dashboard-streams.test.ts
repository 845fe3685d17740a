/**
 * The dashboard's Streams section over HTTP: the list with a progress bar and its live fragment
 * (htmx polling), withdraw and stop buttons doing what the API does, CSRF on both.
 */
import assert from "node:assert/strict";
import { startTestService } from "../helpers/service.ts";
import { dashboardClient } from "../helpers/dashboard-client.ts";
import { api, createMerchant } from "../helpers/accounts.ts";
import { rpc } from "../helpers/chain.ts";
import { switchMode } from "../helpers/environments.ts";
import { M } from "../../src/http/messages.ts";

const P = "production";

Deno.test("dashboard: Streams section", async (t) => {
  const svc = await startTestService({ env: { RATE_LIMITS: "off" } });
  const d = dashboardClient(svc);
  const call = api(svc);
  const chain = svc.deps.chain;
  const rpcUrl = chain.runtime(P).rpcUrl;
  const travel = async (seconds: number) => {
    await rpc(rpcUrl, "evm_increaseTime", [seconds]);
    await rpc(rpcUrl, "evm_mine", []);
    const block = await chain.runtime(P).client.getBlock();
    svc.clock.set(new Date(Number(block.timestamp) * 1000));
  };
  // Progress is measured from the stream's on-chain start: land exactly `seconds` after it, so a
  // slow machine (seconds passing between the create and the jump) cannot change the percentage.
  const travelFrom = async (startedAt: string, seconds: number) => {
    const at = Math.floor(Date.parse(startedAt) / 1000) + seconds;
    await rpc(rpcUrl, "evm_setNextBlockTimestamp", [at]);
    await rpc(rpcUrl, "evm_mine", []);
    svc.clock.set(new Date(at * 1000));
  };
  try {
    const m = await createMerchant(svc);
    const sender = m.walletAddress!;
    const w = await call("POST", "/api/wallets", { headers: { "x-api-key": m.apiKey }, body: {} });
    const receiver = (w.json.wallet as { address: string }).address;
    await chain.mintUsdc({ profile: P, to: sender as `0x${string}`, amount: 10_000_000n });
    const b = await d.open(m, "/dashboard/streams");

    await t.step("empty, then a stream with its progress bar, live", async () => {
      const empty = await d.get(b, "/dashboard/streams");
      assert.equal(empty.status, 200);
      assert.match(empty.text, /No streams yet/);
      assert.match(empty.text, /href="\/dashboard\/streams"[^>]*>Streams</);
      const r = await call("POST", "/api/payments/stream", {
        headers: { "x-api-key": m.apiKey },
        body: {
          senderSCA: sender,
          receiverSCA: receiver,
          ratePerSecond: "0.01",
          totalDeposited: "1",
        },
      });
      assert.equal(r.status, 200, r.text);
      const listed = await call("GET", "/api/payments/stream", {
        headers: { "x-api-key": m.apiKey },
      });
      const startedAt = (listed.json.streams as { startedAt: string }[])[0].startedAt;
      await travelFrom(startedAt, 25);
      const page = await d.get(b, "/dashboard/streams");
      assert.ok(page.text.includes(r.json.reference as string));
      assert.match(page.text, /hx-get="\/dashboard\/streams\/live"/);
      assert.match(page.text, /hx-trigger="every 2s"/);
      assert.match(page.text, /<progress max="100" value="25"/);
      await travelFrom(startedAt, 50);
      const live = await d.get(b, "/dashboard/streams/live", { "hx-request": "true" });
      assert.equal(live.status, 200);
      assert.match(live.text, /<progress max="100" value="50"/);
      assert.match(live.text, /0\.5 of 1 USDC \(50%\)/);
    });

    await t.step("withdraw and stop from the page; CSRF refused", async () => {
      const list = await call("GET", "/api/payments/stream", {
        headers: { "x-api-key": m.apiKey },
      });
      const ref = (list.json.streams as { reference: string }[])[0].reference;
      const refused = await d.post(b, `/dashboard/streams/${ref}/stop`, {}, { token: null });
      assert.equal(refused.status, 403);
      const created = await d.post(b, "/dashboard/streams/create", {
        senderSCA: sender,
        receiverSCA: receiver,
        ratePerSecond: "0.01",
        totalDeposited: "1",
      }, { token: null });
      assert.equal(created.status, 403);
      const [n] = await svc.db.sql<{ n: number }[]>`
        select count(*)::int as n from stream_creates where merchant_id = ${m.id}`;
      assert.equal(n.n, 1, "only the API's stream");
      const wd = await d.post(b, `/dashboard/streams/${ref}/withdraw`, {});
      assert.equal(wd.status, 200, wd.text);
      assert.match(wd.text, /Withdrawn 0\.5\d* USDC to the receiver/);
      await travel(10);
      const stop = await d.post(b, `/dashboard/streams/${ref}/stop`, {});
      assert.equal(stop.status, 200, stop.text);
      assert.match(
        stop.text,
        /Stream stopped: 0\.\d+ USDC to the receiver, 0\.\d+ USDC refunded to the sender\./,
      );
      assert.match(stop.text, /STOPPED/);
      const again = await d.post(b, `/dashboard/streams/${ref}/stop`, {});
      assert.equal(again.status, 400);
      assert.match(again.text, /Stream is already STOPPED\./);
    });
    await t.step(
      "a form shown in live mode is refused once the session switched to test",
      async () => {
        // The review was shown in live mode; another tab then switched the session to test mode.
        // Confirming must not create the stream on the testnet (where the sender holds USDC too).
        await chain.mintUsdc({
          profile: "testnet",
          to: sender as `0x${string}`,
          amount: 5_000_000n,
        });
        const page = await d.get(b, "/dashboard/streams");
        assert.equal(page.status, 200);
        const liveToken = b.token;
        await switchMode(svc, m.cookie, "test");
        const count = async () =>
          (await svc.db.sql<{ n: number }[]>`
          select count(*)::int as n from stream_creates where merchant_id = ${m.id}`)[0].n;
        const before = await count();
        const confirm = await d.post(b, "/dashboard/streams/create", {
          senderSCA: sender,
          receiverSCA: receiver,
          ratePerSecond: "0.01",
          totalDeposited: "1",
          requestKey: crypto.randomUUID(),
        }, { token: liveToken });
        assert.equal(confirm.status, 403, confirm.text);
        assert.ok(confirm.text.includes(M.dashCsrf.slice(0, 40)));
        assert.equal(await count(), before, "nothing created on either chain");
        // The page shown in test mode carries a token its forms may use.
        await d.get(b, "/dashboard/streams");
        assert.notEqual(b.token, liveToken);
        await switchMode(svc, m.cookie, "live");
      },
    );
  } finally {
    await svc.close();
  }
});
