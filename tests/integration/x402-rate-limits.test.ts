/**
 * Rate limits on the x402 paid paths with the service's defaults (RATE_LIMITS on): a charged call
 * is its own limit, and so is the 402 offer a standard client asks for before each payment, so
 * Circle's unmodified `GatewayClient` pays `/x402/{slug}` (and a proof pays `POST /api/x402/pay`)
 * more often than the anonymous bucket allows (here 5 a minute). Refused payments and failures
 * count per client address; a client over the limit is refused at once until the window ends,
 * whatever it sends, and is charged nothing; another address is counted apart; the next window
 * starts again.
 */
import assert from "node:assert/strict";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { GatewayClient } from "@circle-fin/x402-batching/client";
import { startTestService } from "../helpers/service.ts";
import { api, createMerchant } from "../helpers/accounts.ts";
import { externalBuyer, gatewayProof, listApi } from "../helpers/x402.ts";
import { batchedPayment } from "../helpers/x402-batched.ts";
import { M } from "../../src/http/messages.ts";

const USDC = 1_000_000n;
const PRICE = 10_000n;
const LIMIT = 5;

Deno.test("x402 rate limits: paid calls and their offers are free; refusals count", async (t) => {
  const svc = await startTestService({
    env: {
      RATE_LIMIT_ANONYMOUS_PER_MINUTE: String(LIMIT),
      TRUST_PROXY: "true",
      X402_BATCH_SECONDS: "3600",
    },
    crons: false,
  });
  let failing = false;
  const upstream = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    () => failing ? new Response("down", { status: 503 }) : Response.json({ ok: true }),
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
    const signed = () => batchedPayment(svc, account, resource, { to: sellerAddr, value: PRICE });
    const paidCall = async (address: string) =>
      await fetch(resource, { headers: { ...from(address), "payment-signature": await signed() } });
    const charges = async () =>
      (await sql`select count(*)::int as n from x402_gateway_charges
        where payer = ${account.address.toLowerCase()} and status <> 'released'`)[0].n;
    const pay = (address: string, paymentProof?: string) =>
      call("POST", "/api/x402/pay", {
        headers: from(address),
        body: { slug: "quotes", method: "GET", paymentProof },
      });
    const remaining = (r: { headers: Headers }) => r.headers.get("x-ratelimit-remaining");

    let used = "";
    await t.step(
      "Circle's client pays past the limit: its offers and payments are free",
      async () => {
        // As a user has it: each pay() asks for the 402 first, then pays (from 127.0.0.1).
        const client = new GatewayClient({
          chain: "arcTestnet",
          privateKey: key,
          rpcUrl: `${svc.baseUrl}/rpc/testnet`,
        });
        for (let i = 0; i < 3 * LIMIT; i++) {
          const paid = await client.pay(resource);
          assert.equal(paid.status, 200, `Circle's pay ${i + 1}`);
          assert.deepEqual(paid.data, { ok: true });
        }
        const offer = await fetch(resource, { headers: from("203.0.113.1") });
        assert.equal(offer.status, 402);
        await offer.body?.cancel();
        assert.equal(remaining(offer), null, "an offer is not counted");
        for (let i = 0; i < 2 * LIMIT; i++) {
          const r = await paidCall("203.0.113.1");
          assert.equal(r.status, 200, `paid call ${i + 1}`);
          await r.body?.cancel();
          assert.equal(remaining(r), null, "a paid call is not counted");
        }
        const askPay = await pay("203.0.113.1");
        assert.equal(askPay.status, 402);
        assert.equal(remaining(askPay), null);
        for (let i = 0; i < 2 * LIMIT; i++) {
          const { proof } = await gatewayProof(svc, account, { to: sellerAddr, value: PRICE });
          used = proof;
          const r = await pay("203.0.113.1", proof);
          assert.equal(r.status, 200, `POST /api/x402/pay ${i + 1}: ${r.text}`);
          assert.ok((r.json.settlement as { txHash: string }).txHash);
          assert.equal(remaining(r), null);
        }
        assert.equal(await charges(), 5 * LIMIT);
      },
    );

    await t.step("refusals and failures count; over the limit everything waits", async () => {
      const counted: (string | null)[] = [];
      // A payment signed by another key for this payer: refused (402), counted.
      const stranger = privateKeyToAccount(generatePrivateKey());
      for (let i = 0; i < 2; i++) {
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
        counted.push(remaining(forged));
      }
      // A proof already used, answered by an error (403): counted.
      const replay = await pay("203.0.113.1", used);
      assert.equal(replay.status, 403, replay.text);
      counted.push(remaining(replay));
      // The upstream down: nothing charged, counted.
      failing = true;
      for (let i = 0; i < 2; i++) {
        const r = await paidCall("203.0.113.1");
        assert.ok(r.status >= 500, `upstream down: ${r.status}`);
        await r.body?.cancel();
        counted.push(remaining(r));
      }
      failing = false;
      assert.deepEqual(counted, ["4", "3", "2", "1", "0"]);

      // At the limit a paid call is still served (not counted); the next refusal is the 429.
      const atLimit = await paidCall("203.0.113.1");
      assert.equal(atLimit.status, 200);
      await atLimit.body?.cancel();
      const over = await pay("203.0.113.1", used);
      assert.equal(over.status, 429, "the sixth counted answer");
      assert.ok(Number(over.headers.get("retry-after")) >= 1);
      assert.equal(over.json.error, M.rateLimited);
      const before = await charges();
      const waits = await paidCall("203.0.113.1");
      assert.equal(waits.status, 429, "the window is spent, paid or not");
      await waits.body?.cancel();
      const offer = await fetch(resource, { headers: from("203.0.113.1") });
      assert.equal(offer.status, 429, "an offer too");
      await offer.body?.cancel();
      const { proof } = await gatewayProof(svc, account, { to: sellerAddr, value: PRICE });
      assert.equal((await pay("203.0.113.1", proof)).status, 429);
      assert.equal(await charges(), before, "nothing charged for a refused call");
    });

    await t.step("another address is counted apart", async () => {
      const r = await pay("203.0.113.2", used);
      assert.equal(r.status, 403);
      assert.equal(remaining(r), String(LIMIT - 1));
      const paid = await paidCall("203.0.113.2");
      assert.equal(paid.status, 200);
      await paid.body?.cancel();
    });

    await t.step("the next window starts again", async () => {
      svc.clock.advance(60_000);
      const paid = await paidCall("203.0.113.1");
      assert.equal(paid.status, 200);
      await paid.body?.cancel();
      const r = await pay("203.0.113.1", used);
      assert.equal(r.status, 403);
      assert.equal(remaining(r), String(LIMIT - 1));
    });
  } finally {
    await upstream.shutdown();
    await svc.close();
  }
});
