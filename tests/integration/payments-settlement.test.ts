/**
 * Settlement end to end in code: a link, a payer's permit and router call, the watcher, the
 * webhook — and expiry, late payment, underpayment, duplicates, unknown references, reverts.
 */
import assert from "node:assert/strict";
import { decodeFunctionData, encodeFunctionData, getAddress, type Hex, stringToHex } from "viem";
import { Webhook } from "standardwebhooks";
import { startTestService, type TestService } from "../helpers/service.ts";
import { api, createMerchant, type TestMerchant } from "../helpers/accounts.ts";
import { startReceiver } from "../helpers/receiver.ts";
import { payer } from "../helpers/payer.ts";
import { waitFor } from "../helpers/poll.ts";
import { ANVIL_KEYS } from "../helpers/anvil.ts";
import { PaymentRouter } from "../../src/chain/contracts/artifacts/index.ts";
import { expireDue } from "../../src/modules/payments/payments.service.ts";

async function link(svc: TestService, m: TestMerchant, amount: string, webhookUrl?: string) {
  const r = await api(svc)("POST", "/api/merchant/payment-link", {
    cookie: m.cookie,
    body: { amount, webhookUrl },
  });
  assert.equal(r.status, 201, r.text);
  return r.json.reference as string;
}

async function payment(svc: TestService, reference: string) {
  const [p] = await svc.db.sql`select * from payments where reference = ${reference}`;
  return p;
}

Deno.test("payments settle on chain", async (t) => {
  const svc = await startTestService({ env: { RATE_LIMITS: "off" } });
  const receiver = startReceiver();
  const alice = payer(svc, ANVIL_KEYS[1]);
  try {
    const m = await createMerchant(svc, { businessName: "Settle Shop" });
    const secret = (await api(svc)("GET", "/api/merchant/webhook-secret", { cookie: m.cookie }))
      .json.secret as string;
    await alice.fund(1_000_000_000n);
    const merchantWallet = m.walletAddress!.toLowerCase() as `0x${string}`;
    // Handed from one step to the next.
    let settled = { ref: "", hash: "0x" as Hex };
    let reverted = { ref: "", hash: "0x" as Hex };

    await t.step(
      "link → permit + router call → SUCCESS with chainTxHash and payer → one webhook",
      async () => {
        const ref = await link(svc, m, "25.5", `${receiver.url}/settled`);
        const before = await svc.deps.chain.usdcBalance("production", merchantWallet);
        const { hash } = await alice.pay(ref);
        assert.equal((await alice.receipt(hash)).status, "success");
        await waitFor(async () => (await payment(svc, ref)).status === "SUCCESS", {
          what: "settlement",
        });
        const p = await payment(svc, ref);
        assert.equal(p.chainTxHash, hash);
        assert.equal(p.payer, alice.address.toLowerCase());
        assert.equal(p.settledAfterExpiry, false);
        assert.equal(
          await svc.deps.chain.usdcBalance("production", merchantWallet) - before,
          25_500_000n,
        );
        const got = await waitFor(() => receiver.received.find((r) => r.path === "/settled"), {
          what: "payment.settled",
        });
        const body = new Webhook(secret).verify(got.body, got.headers);
        assert.deepEqual(body, {
          event: "payment.settled",
          reference: ref,
          amount: 25.5,
          currency: "USDC",
          status: "SUCCESS",
          chainTxHash: hash,
          explorerUrl: `${svc.baseUrl}/explorer/production/tx/${hash}`,
        });
        const key = (await api(svc)("POST", "/api/keys", {
          cookie: m.cookie,
          body: { type: "secret", environment: "live" },
        })).json.key as { key: string };
        const v = await api(svc)("GET", `/api/payments/verify/${ref}`, {
          headers: { "x-api-key": key.key },
        });
        const d = v.json.data as Record<string, unknown>;
        assert.equal(d.status, "SUCCESS");
        // The payer's address, EIP-55 checksummed like every other address.
        assert.equal(d.senderEmail, getAddress(alice.address));
        assert.notEqual(d.senderEmail, alice.address.toLowerCase());
        const dash = await api(svc)("GET", "/api/merchant/dashboard", {
          headers: { "x-api-key": m.apiKey },
        });
        const row = (dash.json.payments as Array<Record<string, unknown>>)
          .find((p) => p.reference === ref);
        assert.equal(row?.senderEmail, getAddress(alice.address));
        assert.equal(d.chainTxHash, hash);
        const me = await api(svc)("GET", "/api/merchant/me", { cookie: m.cookie });
        assert.equal((me.json.stats as { totalVolume: number }).totalVolume, 25.5);
        assert.equal((me.json.stats as { successRate: number }).successRate, 100);
        settled = { ref, hash };
      },
    );

    await t.step("paying the same reference again reverts; nothing settles twice", async () => {
      const { ref, hash } = settled;
      {
        const call = encodeFunctionData({
          abi: PaymentRouter.abi,
          functionName: "pay",
          args: (decodeFunctionData({
            abi: PaymentRouter.abi,
            data:
              (await svc.deps.chain.runtime("production").client.getTransaction({ hash })).input,
          }).args as readonly unknown[]).slice(0, 2) as never,
        });
        const again = await alice.send(svc.deps.chain.checkout.routerAddress("production"), call);
        assert.equal((await alice.receipt(again)).status, "reverted");
        const pay = await fetch(`${svc.baseUrl}/checkout/${ref}/pay-data?payer=${alice.address}`);
        assert.equal(pay.status, 409);
        await pay.body?.cancel();
        assert.equal(receiver.received.filter((r) => r.path === "/settled").length, 1);
      }
    });

    await t.step("underpayment: a lower amount with the service's signature reverts", async () => {
      const ref = await link(svc, m, "10");
      // A permit for 1 USDC, then the router call changed to ask for 1 USDC of an order for 10.
      const cd = await alice.prepare(ref, { value: 1_000_000n });
      const decoded = decodeFunctionData({ abi: PaymentRouter.abi, data: cd.data });
      const [order, ...rest] = decoded.args as unknown as [
        { ref: Hex; payTo: Hex; amount: bigint; validBefore: bigint },
        ...unknown[],
      ];
      const cheaper = encodeFunctionData({
        abi: PaymentRouter.abi,
        functionName: "payWithPermit",
        args: [{ ...order, amount: 1_000_000n }, ...rest] as never,
      });
      const hash = await alice.send(cd.to, cheaper);
      assert.equal((await alice.receipt(hash)).status, "reverted");
      assert.equal((await payment(svc, ref)).status, "PENDING");
      reverted = { ref, hash };
    });

    await t.step(
      "the payer reports that reverted transaction: the payment stays open, the revert shown",
      async () => {
        const { ref, hash } = reverted;
        const r = await api(svc)("POST", `/checkout/${ref}/submitted`, { body: { txHash: hash } });
        assert.equal(r.status, 200);
        await waitFor(async () => (await payment(svc, ref)).failureReason !== null, {
          what: "the revert recorded",
        });
        const p = await payment(svc, ref);
        assert.equal(p.status, "PENDING");
        assert.match(p.failureReason, /reverted \(0x[0-9a-f]{8}…[0-9a-f]{8}\): nothing was paid/);
        const page = await fetch(`${svc.baseUrl}/checkout/${ref}/status`);
        const html = await page.text();
        assert.match(html, /nothing was paid\. The payment is still open: you can pay again\./);
        // Still payable: the payer pays it, and the revert's note is gone.
        const { hash: paid } = await alice.pay(ref);
        assert.equal((await alice.receipt(paid)).status, "success");
        await waitFor(async () => (await payment(svc, ref)).status === "SUCCESS", {
          what: "settlement after the revert",
        });
        assert.equal((await payment(svc, ref)).failureReason, null);
      },
    );

    await t.step(
      "a stranger's reverted router call carrying the reference does not end the checkout",
      async () => {
        const ref = await link(svc, m, "6");
        const mallory = payer(svc, ANVIL_KEYS[2]);
        // pay() with this reference and a made-up order: it always reverts (no order signature).
        const grief = encodeFunctionData({
          abi: PaymentRouter.abi,
          functionName: "pay",
          args: [{
            ref: stringToHex(ref, { size: 32 }),
            payTo: mallory.address,
            amount: 1n,
            validBefore: 1n,
          }, "0x"],
        });
        const hash = await mallory.send(svc.deps.chain.checkout.routerAddress("production"), grief);
        assert.equal((await mallory.receipt(hash)).status, "reverted");
        const r = await api(svc)("POST", `/checkout/${ref}/submitted`, { body: { txHash: hash } });
        assert.equal(r.status, 200);
        await waitFor(async () => (await payment(svc, ref)).failureReason !== null, {
          what: "the stranger's revert recorded",
        });
        assert.equal((await payment(svc, ref)).status, "PENDING");
        const pd = await api(svc)("GET", `/checkout/${ref}/pay-data?payer=${alice.address}`);
        assert.equal(pd.status, 200, pd.text);
        const { hash: paid } = await alice.pay(ref);
        assert.equal((await alice.receipt(paid)).status, "success");
        await waitFor(async () => (await payment(svc, ref)).status === "SUCCESS", {
          what: "the real payer's settlement",
        });
      },
    );

    await t.step("a reported transaction for another payment does not fail this one", async () => {
      const ref = await link(svc, m, "3");
      const other = await link(svc, m, "4");
      const { hash } = await alice.pay(other);
      await alice.receipt(hash);
      await api(svc)("POST", `/checkout/${ref}/submitted`, { body: { txHash: hash } });
      await waitFor(async () => (await payment(svc, other)).status === "SUCCESS");
      // The check of this payment's report ran (its job completed) and left the payment alone.
      const { id } = await payment(svc, ref);
      await waitFor(async () => {
        const [{ n }] = await svc.db.sql`
          select count(*)::int as n from pgboss.job
          where name = 'payments.check-submitted' and state = 'completed'
            and data->>'paymentId' = ${id}`;
        return n === 1;
      }, { what: "the check of the reported transaction" });
      assert.equal((await payment(svc, ref)).status, "PENDING");
    });

    await t.step(
      "expiry with the injected clock; the page and pay-data turn inactive",
      async () => {
        const key = (await api(svc)("POST", "/api/keys", {
          cookie: m.cookie,
          body: { type: "secret", environment: "live" },
        })).json.key as { key: string };
        const r = await api(svc)("POST", "/api/payments/initialize", {
          headers: { "x-api-key": key.key },
          body: { amount: "1" },
        });
        const ref = r.json.reference as string;
        svc.clock.advance(119 * 60 * 1000);
        assert.equal(await expireDue(svc.deps), 0);
        assert.equal((await payment(svc, ref)).status, "PENDING");
        svc.clock.advance(60 * 1000);
        // Past the deadline it reads as EXPIRED at once, before the sweep writes it down.
        const v = await api(svc)("GET", `/api/payments/verify/${ref}`, {
          headers: { "x-api-key": key.key },
        });
        assert.equal((v.json.data as { status: string }).status, "EXPIRED");
        assert.equal((await payment(svc, ref)).status, "PENDING");
        assert.ok(await expireDue(svc.deps) >= 1);
        assert.equal((await payment(svc, ref)).status, "EXPIRED");
        const page = await fetch(`${svc.baseUrl}/checkout/${ref}`);
        assert.match(await page.text(), /Expired/);
        const pd = await fetch(`${svc.baseUrl}/checkout/${ref}/pay-data?payer=${alice.address}`);
        assert.equal(pd.status, 409);
        await pd.body?.cancel();
      },
    );

    await t.step(
      "a payment that lands after expiry is recorded as SUCCESS, flagged, notified",
      async () => {
        svc.clock.set(new Date());
        const ref = await link(svc, m, "2", `${receiver.url}/late`);
        const cd = await alice.prepare(ref);
        // Our clock passes the deadline; the chain's does not yet: the transaction is still valid.
        svc.clock.advance(24 * 3600 * 1000 + 1000);
        await expireDue(svc.deps);
        assert.equal((await payment(svc, ref)).status, "EXPIRED");
        const hash = await alice.send(cd.to, cd.data);
        assert.equal((await alice.receipt(hash)).status, "success");
        await waitFor(async () => (await payment(svc, ref)).status === "SUCCESS", {
          what: "late settlement",
        });
        assert.equal((await payment(svc, ref)).settledAfterExpiry, true);
        await waitFor(() => receiver.received.some((r) => r.path === "/late"), {
          what: "the late webhook",
        });
        svc.clock.set(new Date());
      },
    );

    await t.step("a router payment for an unknown reference is recorded as unmatched", async () => {
      const signed = await svc.deps.chain.checkout.order("production", {
        reference: "pay_ref_NOSUCHPAYMENT0000000",
        payTo: merchantWallet,
        amount: 1_000_000n,
        validBefore: BigInt(Math.floor(Date.now() / 1000) + 3600),
      });
      const rt = svc.deps.chain.runtime("production");
      const approve = encodeFunctionData({
        abi: (await import("../../src/chain/contracts/artifacts/index.ts")).TestUSDC.abi,
        functionName: "approve",
        args: [svc.deps.chain.checkout.routerAddress("production"), 1_000_000n],
      });
      await alice.receipt(await alice.send(rt.contracts.TestUSDC!, approve));
      const hash = await alice.send(
        svc.deps.chain.checkout.routerAddress("production"),
        encodeFunctionData({
          abi: PaymentRouter.abi,
          functionName: "pay",
          args: [signed.order, signed.signature],
        }),
      );
      assert.equal((await alice.receipt(hash)).status, "success");
      const row = await waitFor(async () =>
        (await svc.db.sql`select * from unmatched_settlements where tx_hash = ${hash}`)[0]
      );
      assert.equal(row.reference, "pay_ref_NOSUCHPAYMENT0000000");
      assert.equal(row.reason, "unknown reference");
    });

    await t.step("unknown reference on the page → 404", async () => {
      const r = await fetch(`${svc.baseUrl}/checkout/pay_ref_doesnotexist12345`);
      assert.equal(r.status, 404);
      assert.match(await r.text(), /Payment not found/);
    });
  } finally {
    await receiver.close();
    await svc.close();
  }
});
