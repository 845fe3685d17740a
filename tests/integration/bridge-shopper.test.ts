/**
 * Cross-chain checkout from the shopper's own wallet, over HTTP, on local anvils (Settle_Testnet
 * and Base_Sepolia, started on first use). A shopper whose USDC is on Base_Sepolia only, with no
 * gas anywhere, pays with one EIP-3009 signature the service relays through CheckoutBurner; a
 * shopper with gas pays with approve + depositForBurnWithHook from the wallet and reports the
 * burn. Every refusal (another payment, amount, signer, window, unknown or reused burn) is a 4xx
 * with nothing written or sent; 50 identical relays or reports record one transfer.
 */
import assert from "node:assert/strict";
import {
  createWalletClient,
  encodeFunctionData,
  type Hex,
  http,
  pad,
  parseSignature,
  stringToHex,
} from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { startTestService, type TestService } from "../helpers/service.ts";
import { api, createMerchant } from "../helpers/accounts.ts";
import { waitFor } from "../helpers/poll.ts";
import { stampede } from "../helpers/stampede.ts";
import { type Quote, shopper } from "../helpers/shopper.ts";
import {
  CheckoutBurner,
  TestUSDC,
  TokenMessengerV2,
} from "../../src/chain/contracts/artifacts/index.ts";
import { ANVIL_KEYS } from "../helpers/anvil.ts";
import { M } from "../../src/http/messages.ts";
import * as bridgeRepo from "../../src/modules/bridge/bridge.repo.ts";
import { payer as sameChainPayer } from "../helpers/payer.ts";
import { highS } from "../helpers/signatures.ts";

const SOURCE = "Base_Sepolia";

async function testnetPayment(svc: TestService, amount: string) {
  const call = api(svc);
  const m = await createMerchant(svc, { businessName: `Shop ${amount} ${crypto.randomUUID()}` });
  const key = ((await call("POST", "/api/keys", {
    cookie: m.cookie,
    body: { type: "secret", environment: "test" },
  })).json.key as { key: string }).key;
  const init = await call("POST", "/api/payments/initialize", {
    headers: { "x-api-key": key },
    body: { amount, webhookUrl: "http://127.0.0.1:9/hook" },
  });
  assert.equal(init.status, 201, init.text);
  const reference = init.json.reference as string;
  const [p] = await svc.db.sql`select pay_to from payments where reference = ${reference}`;
  return { reference, payTo: p.payTo as `0x${string}`, key };
}

Deno.test("checkout from the shopper's own wallet on another chain", async (t) => {
  const svc = await startTestService({ env: { RATE_LIMITS: "off" } });
  const chain = svc.deps.chain;
  try {
    const base = await chain.ensure(SOURCE);
    const at = { baseUrl: svc.baseUrl, sourceChain: SOURCE, rpcUrl: base.rpcUrl, chainId: 84532 };
    const usdc = (who: Hex, on: "testnet" | typeof SOURCE = SOURCE) => chain.usdcBalance(on, who);
    const status = async (reference: string) =>
      (await api(svc)("GET", `/api/cctp/transfer/status?reference=${reference}`)).json;
    const minted = (reference: string) =>
      waitFor(async () => {
        const s = await status(reference);
        if (s.status === "failed") throw new Error(`failed: ${s.error}`);
        return s.status === "minted" ? s : null;
      }, { timeoutMs: 30_000, what: `transfer ${reference} minted` });
    const written = async () => ({
      transfers: Number((await svc.db.sql`select count(*)::int as n from bridge_transfers`)[0].n),
      sent: Number(
        (await svc.db.sql`
          select count(*)::int as n from chain_transactions where intent_key like 'bridge:%'`)[0]
          .n,
      ),
    });
    const settledEvents = async (reference: string) =>
      (await svc.db.sql`
        select event from webhook_deliveries where reference = ${reference} order by event`)
        .map((e) => e.event);

    const alice = shopper(at, generatePrivateKey());
    await chain.mintUsdc({ profile: SOURCE, to: alice.address, amount: 50_000_000n });
    const p = await testnetPayment(svc, "12.5");

    await t.step(
      "the quote: fee, burn, balance, one signature, the chain for the wallet",
      async () => {
        const r = await alice.quote(p.reference);
        assert.equal(r.status, 200);
        assert.match(r.type, /application\/json/);
        const q = r.json as unknown as Quote & Record<string, unknown>;
        assert.equal(q.mode, "signature");
        assert.deepEqual([q.burnAmount, q.fee, q.transferSpeed], [
          "12.500000",
          "0.000000",
          "standard",
        ]);
        assert.deepEqual(q.payer, {
          address: alice.address,
          usdcBalance: "50.000000",
          sufficient: true,
        });
        assert.deepEqual(q.sourceChain, {
          id: SOURCE,
          chainId: 84532,
          chainIdHex: "0x14a34",
          name: "Base Sepolia",
          rpcUrl: `${svc.baseUrl}/rpc/${SOURCE}`,
          explorerUrl: `${svc.baseUrl}/explorer/${SOURCE}`,
          nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
        });
        const m = q.authorization!.message;
        assert.equal(m.to, chain.contract(SOURCE, "CheckoutBurner"));
        assert.equal(m.value, "12500000");
        assert.equal(q.wallet.approve.to, chain.contract(SOURCE, "TestUSDC"));
        assert.equal(q.wallet.burn.to, chain.contract(SOURCE, "TokenMessengerV2"));
        const fast = await alice.quote(p.reference, { transferSpeed: "fast" });
        assert.equal(fast.status, 200);
        // 1 bps (CCTP_FAST_FEE_BPS) on top, so 12.5 arrive.
        assert.deepEqual([fast.json.burnAmount, fast.json.fee], ["12.501251", "0.001251"]);
      },
    );

    await t.step("relay refusals: 4xx with a clear text, nothing written or sent", async () => {
      const before = await written();
      const other = await testnetPayment(svc, "12.5");
      const refused = async (reference: string, body: unknown, status: number, text: string) => {
        const r = await alice.relay(reference, body);
        assert.equal(r.status, status, JSON.stringify(r.json));
        assert.match(r.type, /application\/json/);
        assert.equal(r.json.success, false);
        assert.equal(r.json.error, text);
      };
      const now = Math.floor(svc.clock.now().getTime() / 1000);
      // Less than the payment: value (and the nonce it signs) for 12.4 USDC.
      const less = await alice.authorize(p.reference, (m) => ({ ...m, value: "12400000" }));
      await refused(p.reference, less.body, 400, M.authorizationAmount);
      // The burn changed after signing (another speed): the nonce no longer fits.
      const fee = await alice.authorize(p.reference);
      await refused(
        p.reference,
        { ...fee.body, transferSpeed: "fast" },
        400,
        M.authorizationReference,
      );
      // A signature for one payment presented for another of the same amount.
      await refused(
        other.reference,
        (await alice.authorize(p.reference)).body,
        400,
        M.authorizationReference,
      );
      const elsewhere = await alice.authorize(p.reference, (m) => ({ ...m, to: p.payTo }));
      await refused(p.reference, elsewhere.body, 400, M.authorizationPayee);
      const expired = await alice.authorize(
        p.reference,
        (m) => ({ ...m, validBefore: String(now - 1) }),
      );
      await refused(p.reference, expired.body, 400, M.authorizationExpired);
      // Mallory signs Alice's authorization.
      const mallory = privateKeyToAccount(generatePrivateKey());
      const forged = await alice.authorize(p.reference, (m) => m, mallory);
      await refused(p.reference, forged.body, 400, M.authorizationSignature);
      // Alice's own signature malleated (a high s): USDC's ECRecover would refuse the burn.
      const own = await alice.authorize(p.reference);
      await refused(
        p.reference,
        { ...own.body, signature: highS(own.body.signature) },
        400,
        M.authorizationSignature,
      );
      await refused(
        p.reference,
        { ...fee.body, sourceChain: "Mars" },
        400,
        "Unsupported source chain: Mars",
      );
      await refused(p.reference, { sourceChain: SOURCE }, 400, M.bridgeRelayBody);
      await refused("pay_ref_doesnotexist00000000", fee.body, 404, M.paymentNotFound);
      // A shopper without the USDC.
      const broke = shopper(at, generatePrivateKey());
      await refused(p.reference, (await broke.authorize(p.reference)).body, 400, M.payerBalance);
      assert.deepEqual(await written(), before);
    });

    let relayed = "";
    await t.step(
      "one signature: relayed, burned, attested, minted, the payment settled",
      async () => {
        const merchantBefore = await usdc(p.payTo, "testnet");
        const { body } = await alice.authorize(p.reference);
        const r = await alice.relay(p.reference, body);
        assert.equal(r.status, 202, JSON.stringify(r.json));
        assert.match(r.type, /application\/json/);
        assert.deepEqual([r.json.status, r.json.burnAmount, r.json.maxFee], [
          "pending",
          "12.500000",
          "0.000000",
        ]);
        relayed = r.json.reference as string;
        // The same authorization again: the same transfer, nothing more.
        const again = await alice.relay(p.reference, body);
        assert.equal(again.status, 200);
        assert.equal(again.json.reference, relayed);
        const s = await minted(relayed);
        assert.deepEqual([s.burnMode, s.sender, s.paymentReference, s.mintedAmount], [
          "payer_authorization",
          alice.address,
          p.reference,
          "12.500000",
        ]);
        const [paid] = await svc.db.sql`
        select status, payer, chain_tx_hash from payments where reference = ${p.reference}`;
        assert.deepEqual([paid.status, paid.payer, paid.chainTxHash], [
          "SUCCESS",
          alice.address.toLowerCase(),
          s.mintTxHash,
        ]);
        assert.equal(await usdc(p.payTo, "testnet") - merchantBefore, 12_500_000n, "paid in full");
        assert.equal(await usdc(alice.address), 37_500_000n, "burned on Base_Sepolia");
        assert.equal(await chain.nativeBalance(SOURCE, alice.address), 0n, "no gas spent");
        assert.equal(await chain.nativeBalance("testnet", alice.address), 0n);
        assert.equal(await usdc(alice.address, "testnet"), 0n);
        assert.deepEqual(await settledEvents(p.reference), [
          "payment.auto_settled",
          "payment.settled",
        ]);
        const burns = await svc.db.sql`
        select status from chain_transactions where intent_key = ${`bridge:${relayed}:burn`}`;
        assert.deepEqual(burns.map((b) => b.status), ["confirmed"]);
      },
    );

    await t.step(
      "the contract burns only what was signed; anyone may submit it, and it is recorded",
      async () => {
        const dave = shopper(at, generatePrivateKey());
        await chain.mintUsdc({ profile: SOURCE, to: dave.address, amount: 2_000_000n });
        const d = await testnetPayment(svc, "2");
        const { body } = await dave.authorize(d.reference);
        const a = body.authorization;
        const sig = parseSignature(body.signature);
        const signed = {
          amount: BigInt(a.value),
          destinationDomain: 26,
          mintRecipient: pad(d.payTo),
          maxFee: 0n,
          minFinalityThreshold: 2000,
          hookData: stringToHex(d.reference),
        };
        const auth = {
          from: a.from as Hex,
          validAfter: BigInt(a.validAfter),
          validBefore: BigInt(a.validBefore),
          v: Number(sig.v ?? BigInt(sig.yParity + 27)),
          r: sig.r,
          s: sig.s,
        };
        const mallory = createWalletClient({
          account: privateKeyToAccount(ANVIL_KEYS[3]),
          chain: base.viemChain,
          transport: http(base.rpcUrl),
        });
        const abi = [...CheckoutBurner.abi, ...TestUSDC.abi.filter((x) => x.type === "error")];
        const burner = chain.contract(SOURCE, "CheckoutBurner");
        const submit = (burn: typeof signed) =>
          base.client.simulateContract({
            account: mallory.account,
            address: burner,
            abi,
            functionName: "burnWithAuthorization",
            args: [burn, auth],
          });
        // A submitter changing anything the shopper signed presents a signature that is not theirs.
        for (
          const changed of [
            { ...signed, mintRecipient: pad(mallory.account.address) },
            { ...signed, maxFee: 1_000_000n },
            { ...signed, hookData: stringToHex(p.reference) },
            { ...signed, amount: signed.amount - 1n },
            { ...signed, destinationDomain: 6 },
            { ...signed, minFinalityThreshold: 1000 },
          ]
        ) await assert.rejects(submit(changed), /ERC3009InvalidSignature/);
        // Unchanged, anyone may submit it: it burns exactly what the shopper signed.
        const { request } = await submit(signed);
        const hash = await mallory.writeContract(request);
        // writeContract returns once the node has the transaction, not once it is mined.
        assert.equal((await base.client.waitForTransactionReceipt({ hash })).status, "success");
        await assert.rejects(submit(signed), /ERC3009UsedOrCanceledAuthorization|reverted/);
        // The page's relay of the same signature afterwards records that burn; nothing is sent.
        const r = await dave.relay(d.reference, body);
        assert.equal(r.status, 202, JSON.stringify(r.json));
        const s = await minted(r.json.reference as string);
        assert.deepEqual([s.burnTxHash, s.mintedAmount], [hash, "2.000000"]);
        const ours = await svc.db.sql`
          select 1 from chain_transactions where intent_key = ${`bridge:${s.reference}:burn`}`;
        assert.equal(ours.length, 0, "no burn of ours");
        const [paid] = await svc.db
          .sql`select status from payments where reference = ${d.reference}`;
        assert.equal(paid.status, "SUCCESS");
      },
    );

    // A shopper with gas on Base_Sepolia pays with the wallet's own transactions.
    const bob = shopper(at, generatePrivateKey());
    await chain.faucet(SOURCE, bob.address, 100_000_000n);
    const q = await testnetPayment(svc, "7.25");

    await t.step("report refusals: 4xx with a clear text, nothing written", async () => {
      const before = await written();
      const refused = async (reference: string, hash: string, status: number, text: string) => {
        const r = await bob.report(reference, hash);
        assert.equal(r.status, status, JSON.stringify(r.json));
        assert.match(r.type, /application\/json/);
        assert.equal(r.json.error, text);
      };
      await refused(q.reference, `0x${"ab".repeat(32)}`, 404, M.bridgeBurnNotFound);
      await refused(q.reference, "0x1234", 400, M.txHashInvalid);
      // Not a burn: a plain USDC transfer.
      const plain = await bob.send({
        to: chain.contract(SOURCE, "TestUSDC"),
        data: encodeFunctionData({
          abi: TestUSDC.abi,
          functionName: "transfer",
          args: [alice.address, 1n],
        }),
      });
      await refused(q.reference, plain.hash, 400, M.bridgeBurnInvalid);
      const burnCall = (reference: string, amount: bigint, recipient: Hex = q.payTo) => ({
        to: chain.contract(SOURCE, "TokenMessengerV2"),
        data: encodeFunctionData({
          abi: TokenMessengerV2.abi,
          functionName: "depositForBurnWithHook",
          args: [
            amount,
            26,
            pad(recipient),
            chain.contract(SOURCE, "TestUSDC"),
            pad("0x00"),
            0n,
            2000,
            stringToHex(reference),
          ],
        }),
      });
      await bob.send({
        to: chain.contract(SOURCE, "TestUSDC"),
        data: encodeFunctionData({
          abi: TestUSDC.abi,
          functionName: "approve",
          args: [chain.contract(SOURCE, "TokenMessengerV2"), 10n ** 12n],
        }),
      });
      // A burn naming another payment (its own: p, already paid), reported for q.
      const forP = await bob.send(burnCall(p.reference, 7_250_000n));
      await refused(q.reference, forP.hash, 400, M.bridgeBurnWrongPayment);
      // q's reference, too little.
      const short = await bob.send(burnCall(q.reference, 7_249_999n));
      await refused(q.reference, short.hash, 400, M.bridgeBurnAmount);
      // q's reference, minted to someone else.
      const astray = await bob.send(burnCall(q.reference, 7_250_000n, bob.address));
      await refused(q.reference, astray.hash, 400, M.bridgeBurnWrongRecipient);
      // A reverted burn (more than the wallet holds).
      const reverted = await bob.send(burnCall(q.reference, 10n ** 11n), { gas: 300_000n });
      assert.equal(reverted.status, "reverted");
      await refused(q.reference, reverted.hash, 400, M.bridgeBurnReverted);
      // Alice's one-signature burn (recorded by its relay) reported again, for its own payment.
      const [row] = await svc.db
        .sql`select burn_tx_hash from bridge_transfers where reference = ${relayed}`;
      await refused(p.reference, row.burnTxHash, 409, M.bridgeBurnUsed);
      assert.deepEqual(await written(), before);
      // The stray burns above stay unminted: nobody reported them for their payment.
    });

    await t.step("wallet path: approve + burn from the wallet, reported, settled", async () => {
      const merchantBefore = await usdc(q.payTo, "testnet");
      const r = await bob.quote(q.reference);
      assert.equal(r.status, 200);
      const quote = r.json as unknown as Quote;
      assert.equal(quote.wallet.needsApproval, false, "bob approved plenty above");
      const before = await usdc(bob.address);
      const hash = await bob.burn(quote);
      // 50 identical reports at once: one transfer; every answer names it.
      const result = await stampede(svc, {
        method: "POST",
        path: `/checkout/${q.reference}/bridge-burn`,
        body: { sourceChain: SOURCE, txHash: hash },
      }, { allowed: () => false });
      const refs = new Set(result.answers.map((a) => a.json.reference));
      assert.equal(refs.size, 1, JSON.stringify([...refs]));
      assert.equal(result.byStatus[202], 1, JSON.stringify(result.byStatus));
      assert.equal(result.byStatus[200], 49);
      const reference = [...refs][0] as string;
      const s = await minted(reference);
      assert.deepEqual([s.burnMode, s.burnTxHash, s.sender], ["payer_wallet", hash, bob.address]);
      const [paid] = await svc.db
        .sql`select status, payer from payments where reference = ${q.reference}`;
      assert.deepEqual([paid.status, paid.payer], ["SUCCESS", bob.address.toLowerCase()]);
      assert.equal(await usdc(q.payTo, "testnet") - merchantBefore, 7_250_000n);
      assert.equal(before - await usdc(bob.address), 7_250_000n);
      assert.deepEqual(await settledEvents(q.reference), [
        "payment.auto_settled",
        "payment.settled",
      ]);
      // Reported again later: the same transfer.
      const again = await bob.report(q.reference, hash);
      assert.deepEqual([again.status, again.json.reference], [200, reference]);
    });

    await t.step("50 identical relays at once: one transfer, one burn", async () => {
      const carol = shopper(at, generatePrivateKey());
      await chain.mintUsdc({ profile: SOURCE, to: carol.address, amount: 3_000_000n });
      const c = await testnetPayment(svc, "3");
      const { body } = await carol.authorize(c.reference);
      const result = await stampede(svc, {
        method: "POST",
        path: `/checkout/${c.reference}/bridge-relay`,
        body,
      }, { allowed: () => false });
      const refs = new Set(result.answers.map((a) => a.json.reference));
      assert.equal(refs.size, 1);
      assert.equal(result.byStatus[202], 1, JSON.stringify(result.byStatus));
      const reference = [...refs][0] as string;
      await minted(reference);
      const burns = await svc.db.sql`
        select 1 from chain_transactions where intent_key like ${`bridge:${reference}:%`}
          and intent_key <> ${`bridge:${reference}:mint`}`;
      assert.equal(burns.length, 1, "one burn sent");
      assert.equal(await usdc(carol.address), 0n);
      const [paid] = await svc.db.sql`select status from payments where reference = ${c.reference}`;
      assert.equal(paid.status, "SUCCESS");
    });
  } finally {
    await svc.close();
  }
});

Deno.test("checkout: a payment being paid from one chain is not paid on the other too", async (t) => {
  // An outside audit paid one checkout twice: a cross-chain transfer under way, and the page's
  // same-chain "Pay with wallet" (or a second tab) paid it again; the merchant got both.
  const svc = await startTestService({ env: { RATE_LIMITS: "off" } });
  const chain = svc.deps.chain;
  try {
    const base = await chain.ensure(SOURCE);
    const at = { baseUrl: svc.baseUrl, sourceChain: SOURCE, rpcUrl: base.rpcUrl, chainId: 84532 };
    const alice = shopper(at, generatePrivateKey());
    await chain.mintUsdc({ profile: SOURCE, to: alice.address, amount: 20_000_000n });
    const payer = privateKeyToAccount(generatePrivateKey()).address;

    await t.step("a transfer under way: the same-chain payment is refused", async () => {
      const p = await testnetPayment(svc, "2");
      // Held at `burned` (its attestation not asked yet), as on a real network for minutes.
      await bridgeRepo.insert(svc.db.sql, {
        reference: `bridge_${crypto.randomUUID().replaceAll("-", "")}`,
        direction: "inbound",
        consumerId: null,
        walletId: null,
        fromChain: SOURCE,
        toChain: "Settle_Testnet",
        sourceDomain: 6,
        destinationDomain: 26,
        amount: 2_000_000n,
        sender: alice.address.toLowerCase(),
        recipient: p.payTo.toLowerCase(),
        paymentReference: p.reference,
        transferSpeed: "standard",
        burnAmount: 2_000_000n,
        maxFee: 0n,
        now: new Date(),
        burnMode: "payer_wallet",
      });
      const data = await api(svc)("GET", `/checkout/${p.reference}/pay-data?payer=${payer}`);
      assert.deepEqual([data.status, data.json.error], [409, M.paymentBridgeUnderWay]);
      const call = await api(svc)("POST", `/checkout/${p.reference}/calldata`, {
        body: { payer, signature: `0x${"1".repeat(130)}`, deadline: "9999999999" },
      });
      assert.deepEqual([call.status, call.json.error], [409, M.paymentBridgeUnderWay]);
    });

    await t.step("relayed on its own chain: no transfer is started for it", async () => {
      const p = await testnetPayment(svc, "3");
      const buyer = sameChainPayer(svc, generatePrivateKey(), "testnet");
      await buyer.fund(3_000_000n);
      const relayed = await buyer.relay(p.reference, await buyer.authorize(p.reference));
      assert.ok([200, 408].includes(relayed.status), JSON.stringify(relayed.json));
      // As on a real network before its confirmations: sent, the payment not settled yet.
      await waitFor(async () => {
        const [row] = await svc.db
          .sql`select status from payments where reference = ${p.reference}`;
        return row.status === "SUCCESS";
      }, { what: "the relay settled" });
      await svc.db.sql`
        update payments set status = 'PENDING', chain_tx_hash = null where reference = ${p.reference}`;
      const before = await chain.usdcBalance(SOURCE, alice.address);
      const quote = await alice.quote(p.reference);
      assert.deepEqual([quote.status, quote.json.error], [409, M.paymentPaidByOther]);
      assert.equal(await chain.usdcBalance(SOURCE, alice.address), before, "nothing burned");
      const [{ n }] = await svc.db.sql`
        select count(*)::int as n from bridge_transfers where payment_reference = ${p.reference}`;
      assert.equal(n, 0);
    });
  } finally {
    await svc.close();
  }
});
