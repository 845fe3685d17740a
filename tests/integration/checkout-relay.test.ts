/**
 * Gasless checkout over HTTP: a payer with USDC and no native gas signs one EIP-3009
 * authorization and the service relays it. Refusals (another amount, payee, window, payment or
 * signer) are 400 with nothing signed or broadcast; concurrent relays give one transaction.
 */
import assert from "node:assert/strict";
import { generatePrivateKey } from "viem/accounts";
import { startTestService, type TestService } from "../helpers/service.ts";
import { api, createMerchant, type TestMerchant } from "../helpers/accounts.ts";
import { startReceiver } from "../helpers/receiver.ts";
import { payer } from "../helpers/payer.ts";
import { waitFor } from "../helpers/poll.ts";
import { M } from "../../src/http/messages.ts";
import { highS } from "../helpers/signatures.ts";

async function link(svc: TestService, m: TestMerchant, amount: string, webhookUrl?: string) {
  const r = await api(svc)("POST", "/api/merchant/payment-link", {
    cookie: m.cookie,
    body: { amount, webhookUrl },
  });
  assert.equal(r.status, 201, r.text);
  return r.json.reference as string;
}

async function relayRows(svc: TestService) {
  return await svc.db.sql`
    select intent_key, tx_hash, status from chain_transactions
    where intent_key like 'checkout-relay:%'`;
}

Deno.test("gasless checkout: the relay refuses what does not match and relays once", async (t) => {
  const svc = await startTestService({ env: { RATE_LIMITS: "off" } });
  const receiver = startReceiver();
  try {
    const m = await createMerchant(svc, { businessName: "Gasless Shop" });
    const merchantWallet = m.walletAddress!.toLowerCase() as `0x${string}`;
    const alice = payer(svc, generatePrivateKey());
    const address = alice.address.toLowerCase() as `0x${string}`;
    await alice.fund(100_000_000n);
    assert.equal(await svc.deps.chain.nativeBalance("production", address), 0n);
    const ref = await link(svc, m, "12.5", `${receiver.url}/settled`);
    const other = await link(svc, m, "12.5");
    let paid: unknown = null;
    const operator = svc.deps.chain.runtime("production").operator!.address;
    const operatorNonce = () =>
      svc.deps.chain.runtime("production").client.getTransactionCount({ address: operator });

    await t.step("refusals: 400 with a clear text, nothing signed or broadcast", async () => {
      const nonceBefore = await operatorNonce();
      const refused = async (reference: string, body: unknown, text: string) => {
        const r = await alice.relay(reference, body);
        assert.equal(r.status, 400, JSON.stringify(r.json));
        assert.deepEqual(r.json, { success: false, error: text });
      };
      const now = Math.floor(svc.clock.now().getTime() / 1000);
      await refused(
        ref,
        await alice.authorize(ref, (a) => ({ ...a, value: "12000000" })),
        M.authorizationAmount,
      );
      await refused(
        ref,
        await alice.authorize(ref, (a) => ({ ...a, to: merchantWallet })),
        M.authorizationPayee,
      );
      await refused(
        ref,
        await alice.authorize(ref, (a) => ({ ...a, validBefore: String(now - 1) })),
        M.authorizationExpired,
      );
      await refused(
        ref,
        await alice.authorize(ref, (a) => ({ ...a, validBefore: String(now + 25 * 3600) })),
        M.authorizationWindow,
      );
      // A signature for one payment, presented for another (same amount and payee).
      await refused(other, await alice.authorize(ref), M.authorizationReference);
      // Someone else's signature over the payer's authorization.
      const mallory = payer(svc, generatePrivateKey());
      const forged = await mallory.authorize(ref);
      await refused(
        ref,
        { ...forged, authorization: { ...forged.authorization, from: address } },
        M.authorizationSignature,
      );
      await refused(ref, { authorization: { from: address }, signature: "0x12" }, M.relayBody);
      // The payer's own signature malleated (a high s): it recovers the payer, but USDC's
      // ECRecover refuses it, so the relay would revert on our gas.
      const own = await alice.authorize(ref);
      await refused(ref, { ...own, signature: highS(own.signature) }, M.authorizationSignature);
      assert.deepEqual([...await relayRows(svc)], []);
      assert.equal(await operatorNonce(), nonceBefore);
      assert.equal(
        (await svc.db.sql`select status from payments where reference = ${ref}`)[0].status,
        "PENDING",
      );
    });

    await t.step("two concurrent relays of one signature → one transaction → SUCCESS", async () => {
      const before = await svc.deps.chain.usdcBalance("production", merchantWallet);
      const body = paid = await alice.authorize(ref);
      const [a, b] = await Promise.all([alice.relay(ref, body), alice.relay(ref, body)]);
      assert.equal(a.status, 200, JSON.stringify(a.json));
      assert.equal(b.status, 200, JSON.stringify(b.json));
      assert.match(a.json.txHash, /^0x[0-9a-f]{64}$/);
      assert.equal(a.json.txHash, b.json.txHash);
      assert.equal(a.json.explorerUrl, `${svc.baseUrl}/explorer/production/tx/${a.json.txHash}`);
      const rows = await relayRows(svc);
      assert.equal(rows.length, 1);
      assert.equal(rows[0].intentKey, `checkout-relay:${ref}`);
      await waitFor(
        async () =>
          (await svc.db.sql`select status from payments where reference = ${ref}`)[0].status ===
            "SUCCESS",
        { what: "settlement" },
      );
      const [p] = await svc.db.sql`select * from payments where reference = ${ref}`;
      assert.equal(p.chainTxHash, a.json.txHash);
      assert.equal(p.payer, address);
      assert.equal(
        await svc.deps.chain.usdcBalance("production", merchantWallet) - before,
        12_500_000n,
      );
      // The payer sent nothing and holds no gas.
      const client = svc.deps.chain.runtime("production").client;
      assert.equal(await client.getTransactionCount({ address }), 0);
      assert.equal(await svc.deps.chain.nativeBalance("production", address), 0n);
      await waitFor(() => receiver.received.length >= 1, { what: "webhook" });
      assert.equal(receiver.received.filter((r) => r.path === "/settled").length, 1);
    });

    await t.step(
      "two wallets at once on one payment: the other is told another wallet pays it",
      async () => {
        const shared = await link(svc, m, "3");
        const bob = payer(svc, generatePrivateKey());
        await bob.fund(10_000_000n);
        const [byAlice, byBob] = await Promise.all([
          alice.authorize(shared).then((b) => alice.relay(shared, b)),
          bob.authorize(shared).then((b) => bob.relay(shared, b)),
        ]);
        // Before: both 200, the loser's page handed the winner's transaction as its own.
        assert.deepEqual([byAlice.status, byBob.status].sort(), [200, 409]);
        const [won, lost, loser] = byAlice.status === 200
          ? [byAlice, byBob, bob]
          : [byBob, byAlice, alice];
        assert.deepEqual(lost.json, { success: false, error: M.paymentPaidByOther });
        assert.match(won.json.txHash, /^0x[0-9a-f]{64}$/);
        // The loser's fallback (a transaction of its own, which would revert) is refused first.
        const cd = await fetch(`${svc.baseUrl}/checkout/${shared}/calldata`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({
            payer: loser.address,
            signature: `0x${"11".repeat(65)}`,
            deadline: "9999999999",
          }),
        });
        assert.deepEqual([cd.status, (await cd.json()).error], [409, M.paymentPaidByOther]);
        const rows = (await relayRows(svc)).filter((r) =>
          r.intentKey === `checkout-relay:${shared}`
        );
        assert.equal(rows.length, 1);
        await waitFor(
          async () =>
            (await svc.db.sql`select status from payments where reference = ${shared}`)[0]
              .status === "SUCCESS",
          { what: "settlement" },
        );
        const [p] = await svc.db.sql`select payer from payments where reference = ${shared}`;
        assert.notEqual(p.payer, loser.address.toLowerCase());
        assert.equal(
          await svc.deps.chain.usdcBalance("production", loser.address),
          loser === bob ? 10_000_000n : 87_500_000n,
        );
      },
    );

    await t.step("the used signature again: on another payment 400, on its own 409", async () => {
      const r = await alice.relay(other, paid);
      assert.equal(r.status, 400, JSON.stringify(r.json));
      assert.equal(r.json.error, M.authorizationReference);
      const again = await alice.relay(ref, paid);
      assert.equal(again.status, 409, JSON.stringify(again.json));
      assert.equal(again.json.error, M.paymentNotPayable);
      assert.equal(
        (await relayRows(svc)).filter((r) => r.intentKey === `checkout-relay:${ref}`).length,
        1,
      );
    });
  } finally {
    await receiver.close();
    await svc.close();
  }
});
