/**
 * Rate limits on the x402 paid paths with the service's defaults (RATE_LIMITS on): a charged call
 * is its own limit, so an agent pays `/x402/{slug}` and `POST /api/x402/pay` more often than the
 * anonymous bucket allows (here 5 a minute), while 402s and refused payments count per client
 * address. A client that spent its window is refused at once until it ends, paid or not, and is
 * charged nothing; another address is counted apart; the next window starts again.
 */
import assert from "node:assert/strict";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { startTestService } from "../helpers/service.ts";
import { api, createMerchant } from "../helpers/accounts.ts";
import { externalBuyer, gatewayProof, listApi } from "../helpers/x402.ts";
import { batchedPayment } from "../helpers/x402-batched.ts";
import { M } from "../../src/http/messages.ts";

const USDC = 1_000_000n;
const PRICE = 10_000n;
const LIMIT = 5;

Deno.test("x402 rate limits: paid calls are their own limit; the rest count per address", async (t) => {
  const svc = await startTestService({
    env: {
      RATE_LIMIT_ANONYMOUS_PER_MINUTE: String(LIMIT),
      TRUST_PROXY: "true",
      X402_BATCH_SECONDS: "3600",
    },
    crons: false,
  });
  const upstream = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    () => Response.json({ ok: true }),
  );
  const sql = svc.db.sql;
  const call = api(svc);
  try {
    const seller = await createMerchant(svc);
    const resource = await listApi(svc, seller, {
      slug: "quotes",
      upstreamUrl: `http://127.0.0.1:${upstream.addr.port}/quote`,
    });
    const sellerAddr = seller.walletAddress!.toLowerCase();
    const key = generatePrivateKey();
    const account = privateKeyToAccount(key);
    const buyer = await externalBuyer(svc, key, 1n * USDC);
    await buyer.deposit(100n * PRICE);
    const from = (address: string) => ({ "x-forwarded-for": address });
    const paidCall = async (address: string) =>
      await fetch(resource, {
        headers: {
          ...from(address),
          "payment-signature": await batchedPayment(svc, account, resource, {
            to: sellerAddr,
            value: PRICE,
          }),
        },
      });
    const charges = async () =>
      (await sql`select count(*)::int as n from x402_gateway_charges
        where payer = ${account.address.toLowerCase()} and status <> 'released'`)[0].n;
    const pay = (address: string, paymentProof: string) =>
      call("POST", "/api/x402/pay", {
        headers: from(address),
        body: { slug: "quotes", method: "GET", paymentProof },
      });

    let used = "";
    await t.step("paid calls past the anonymous limit are served and not counted", async () => {
      for (let i = 0; i < 3 * LIMIT; i++) {
        const r = await paidCall("203.0.113.1");
        assert.equal(r.status, 200, `paid call ${i + 1}`);
        assert.deepEqual(await r.json(), { ok: true });
        assert.equal(r.headers.get("x-ratelimit-remaining"), null, "a paid call is not counted");
      }
      for (let i = 0; i < 2 * LIMIT; i++) {
        const { proof } = await gatewayProof(svc, account, { to: sellerAddr, value: PRICE });
        used = proof;
        const r = await pay("203.0.113.1", proof);
        assert.equal(r.status, 200, `POST /api/x402/pay ${i + 1}: ${r.text}`);
        assert.ok((r.json.settlement as { txHash: string }).txHash);
      }
      assert.equal(await charges(), 3 * LIMIT);
    });

    await t.step(
      "402s and refused payments count; over the limit a paid call waits too",
      async () => {
        const counted: (string | null)[] = [];
        for (let i = 0; i < LIMIT - 2; i++) {
          const r = await fetch(resource, { headers: from("203.0.113.1") });
          assert.equal(r.status, 402);
          await r.body?.cancel();
          counted.push(r.headers.get("x-ratelimit-remaining"));
        }
        // A refusal answered by an error (a proof already used) counts too.
        const replay = await pay("203.0.113.1", used);
        assert.equal(replay.status, 403, replay.text);
        counted.push(replay.headers.get("x-ratelimit-remaining"));
        // A payment the vault would refuse (signed by another key) is answered 402 and counted.
        const stranger = privateKeyToAccount(generatePrivateKey());
        const forged = await fetch(resource, {
          headers: {
            ...from("203.0.113.1"),
            "payment-signature": await batchedPayment(svc, stranger, resource, {
              from: account.address,
              to: sellerAddr,
              value: PRICE,
            }),
          },
        });
        assert.equal(forged.status, 402);
        await forged.body?.cancel();
        counted.push(forged.headers.get("x-ratelimit-remaining"));
        assert.deepEqual(counted, ["4", "3", "2", "1", "0"]);

        const over = await fetch(resource, { headers: from("203.0.113.1") });
        assert.equal(over.status, 429);
        assert.ok(Number(over.headers.get("retry-after")) >= 1);
        assert.equal((await over.json()).error, M.rateLimited);
        const before = await charges();
        const waits = await paidCall("203.0.113.1");
        assert.equal(waits.status, 429, "the window is spent, paid or not");
        await waits.body?.cancel();
        const { proof } = await gatewayProof(svc, account, { to: sellerAddr, value: PRICE });
        const payWaits = await pay("203.0.113.1", proof);
        assert.equal(payWaits.status, 429);
        assert.equal(await charges(), before, "nothing charged for a refused call");
      },
    );

    await t.step("another address is counted apart", async () => {
      const r = await fetch(resource, { headers: from("203.0.113.2") });
      assert.equal(r.status, 402);
      await r.body?.cancel();
      assert.equal(r.headers.get("x-ratelimit-remaining"), String(LIMIT - 1));
      assert.equal((await paidCall("203.0.113.2")).status, 200);
    });

    await t.step("the next window starts again", async () => {
      svc.clock.advance(60_000);
      const r = await fetch(resource, { headers: from("203.0.113.1") });
      assert.equal(r.status, 402);
      await r.body?.cancel();
      assert.equal(r.headers.get("x-ratelimit-remaining"), String(LIMIT - 1));
      const paid = await paidCall("203.0.113.1");
      assert.equal(paid.status, 200);
      await paid.body?.cancel();
    });
  } finally {
    await upstream.shutdown();
    await svc.stop();
  }
});
