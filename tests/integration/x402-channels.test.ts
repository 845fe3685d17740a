/**
 * The x402 `batch-settlement` scheme against our service on a real anvil: the unmodified
 * `@x402/evm` client (with `@x402/core` through `@x402/fetch`) opens a channel with one deposit and
 * pays a listing many times with vouchers alone; the claim job collects them in one transaction
 * that pays the seller; a client that lost its state recovers from the corrective 402; an upstream
 * failure charges nothing; forged and over-balance vouchers are refused; 50 copies of one voucher
 * charge once; the client's cooperative refund; the payer's timed withdrawal stops new charges and
 * the outstanding vouchers are still collected.
 */
import assert from "node:assert/strict";
import { createPublicClient, createWalletClient, getAddress, http } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { decodePaymentResponseHeader, wrapFetchWithPayment, x402Client } from "@x402/fetch";
import { toClientEvmSigner } from "@x402/evm";
import {
  BatchSettlementEvmScheme,
  buildChannelConfig,
  computeChannelId,
  createBatchSettlementEIP3009DepositPayload,
  InMemoryClientChannelStorage,
  signVoucher,
} from "@x402/evm/batch-settlement/client";
import { startTestService } from "../helpers/service.ts";
import { api, createMerchant } from "../helpers/accounts.ts";
import { facilitatorClient, listApi, X402_PROFILE } from "../helpers/x402.ts";
import { stampede, succeeded } from "../helpers/stampede.ts";
import { X402BatchSettlement } from "../../src/chain/contracts/artifacts/index.ts";
import { BATCH_SETTLEMENT_ADDRESS } from "../../src/chain/channels.ts";
import { claimRound } from "../../src/modules/x402/x402.channels.claims.ts";
import { encodeHeader } from "../../src/modules/x402/x402.exact.ts";
import { highS } from "../helpers/signatures.ts";
import { formatUsdcFixed } from "../../src/money.ts";

const USDC = 1_000_000n;
const PRICE = 10_000n;
const NETWORK = "eip155:5042002" as const;
const ZERO = `0x${"00".repeat(32)}` as const;

Deno.test("x402 batch-settlement: the standard client pays many times after one deposit", async (t) => {
  // The claim job runs when the test says (its own rounds are an hour apart).
  const svc = await startTestService({
    env: { RATE_LIMITS: "off", X402_CHANNEL_CLAIM_SECONDS: "3600" },
    // Its rounds are the test's to run: no every-minute one beside them.
    crons: false,
  });
  let answer = (): Response => Response.json({ quote: "to be or not to be" });
  const upstream = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    () => answer(),
  );
  const chain = svc.deps.chain;
  const call = api(svc);
  const rt = chain.runtime(X402_PROFILE);
  const pub = createPublicClient({ transport: http(rt.rpcUrl) });
  const usdcOf = (a: string) => chain.usdcBalance(X402_PROFILE, a.toLowerCase() as `0x${string}`);
  const usdc = getAddress(chain.contract(X402_PROFILE, "TestUSDC"));
  const channelOf = (id: `0x${string}`) =>
    pub.readContract({
      address: BATCH_SETTLEMENT_ADDRESS,
      abi: X402BatchSettlement.abi,
      functionName: "channels",
      args: [id],
    });
  try {
    const seller = await createMerchant(svc);
    const resource = await listApi(svc, seller, {
      slug: "quotes",
      upstreamUrl: `http://127.0.0.1:${upstream.addr.port}/quote`,
    });
    const buyer = privateKeyToAccount(generatePrivateKey());
    await chain.mintUsdc({ profile: X402_PROFILE, to: buyer.address, amount: 10n * USDC });
    const signer = toClientEvmSigner(buyer, pub);
    // The client's standard configuration: the scheme on our chain, our (test) USDC opted in.
    const payer = (
      storage = new InMemoryClientChannelStorage(),
      transport: typeof fetch = fetch,
    ) => {
      const scheme = new BatchSettlementEvmScheme(signer, { storage });
      const client = new x402Client().register(NETWORK, scheme);
      client.setSpendControls({
        allowedAssets: [{ network: NETWORK, asset: usdc, maxAmountPerPayment: "1000000" }],
      });
      return { scheme, storage, fetch: wrapFetchWithPayment(transport, client) };
    };
    const operator = getAddress(rt.operator!.address);
    const requirement = {
      scheme: "batch-settlement",
      network: NETWORK,
      amount: "10000",
      asset: usdc,
      payTo: seller.walletAddress!,
      maxTimeoutSeconds: 300,
      extra: {
        name: "USD Coin",
        version: "2",
        receiverAuthorizer: operator,
        withdrawDelay: 900,
        minDeposit: "1000000",
      },
    };
    const config = buildChannelConfig(
      { signer, storage: undefined as never, salt: ZERO },
      requirement,
    );
    const channelId = computeChannelId(config, NETWORK);
    const charged = async () =>
      (await svc.db.sql`select charged from x402_channels where channel_id = ${channelId}`)[0]
        ?.charged as bigint | undefined;
    /**
     * The listing's totals (x402_listing_totals) against its channels' calls: those a claimed
     * total covers are its calls and revenue.
     */
    const totalsAgree = async () => {
      const [c] = await svc.db.sql`
        select count(*)::int as calls, coalesce(sum(g.amount), 0)::bigint as revenue
        from x402_channel_charges g join x402_channels ch on ch.channel_id = g.channel_id
        join x402_listings l on l.id = g.listing_id
        where l.slug = 'quotes' and g.cumulative <= ch.claimed`;
      const [t] = await svc.db.sql`
        select t.calls::int, t.revenue from x402_listing_totals t
        join x402_listings l on l.id = t.listing_id where l.slug = 'quotes'`;
      assert.deepEqual(
        { calls: t?.calls ?? 0, revenue: BigInt(t?.revenue ?? 0) },
        { calls: c.calls, revenue: BigInt(c.revenue) },
        "the listing's totals are its claimed calls'",
      );
      return { calls: c.calls as number, revenue: BigInt(c.revenue) };
    };

    await t.step("the 402 offers a channel to the seller; the facilitator names it", async () => {
      const r = await fetch(resource);
      assert.equal(r.status, 402);
      const v2 = JSON.parse(atob(r.headers.get("payment-required")!));
      assert.equal(v2.accepts[0].scheme, "exact");
      assert.deepEqual(v2.accepts[1], requirement);
      const v1 = await r.json();
      assert.deepEqual(v1.accepts.map((a: { scheme: string }) => a.scheme), ["exact"]);
      const supported = await call("GET", "/api/x402/facilitator/supported");
      assert.equal(supported.status, 200);
      assert.deepEqual(
        (supported.json.kinds as { scheme: string; network: string }[]).filter((k) =>
          k.scheme === "batch-settlement" && k.network === NETWORK
        ),
        [{
          x402Version: 2,
          scheme: "batch-settlement",
          network: NETWORK,
          extra: { receiverAuthorizer: operator },
        }],
      );
    });

    const first = payer();
    const calls = 25;
    await t.step(`${calls} paid calls after one deposit; nothing on chain per call`, async () => {
      for (let i = 1; i <= calls; i++) {
        const r = await first.fetch(resource);
        assert.equal(r.status, 200, await r.clone().text());
        assert.equal(r.headers.get("content-type"), "application/json");
        assert.deepEqual(await r.json(), { quote: "to be or not to be" });
        const settled = decodePaymentResponseHeader(r.headers.get("payment-response")!);
        assert.equal(settled.success, true);
        assert.equal(settled.payer, buyer.address);
        assert.equal(settled.extra?.chargedAmount, "10000");
        const state = settled.extra?.channelState as Record<string, unknown>;
        assert.equal(state.chargedCumulativeAmount, String(PRICE * BigInt(i)));
        if (i === 1) {
          assert.match(settled.transaction, /^0x[0-9a-f]{64}$/);
          assert.equal(settled.amount, "1000000");
        } else {
          assert.equal(settled.transaction, "");
        }
      }
      const deposits = await svc.db.sql`
        select count(*)::int as n from chain_transactions where intent_key like 'x402ch:deposit:%'`;
      assert.equal(deposits[0].n, 1);
      assert.deepEqual(await channelOf(channelId), [USDC, 0n]);
      assert.equal(await usdcOf(buyer.address), 9n * USDC);
      assert.equal(await usdcOf(seller.walletAddress!), 0n);
      assert.equal(await charged(), PRICE * BigInt(calls));
      const [{ pending }] = await svc.db.sql`
        select count(*)::int as pending from x402_channel_charges where channel_id = ${channelId}`;
      assert.equal(pending, calls);
    });

    await t.step("one claim transaction collects them and pays the seller", async () => {
      const round = await claimRound(svc.deps);
      assert.equal(round.transactions.length, 1);
      assert.equal(round.transactions[0].charges, calls);
      assert.equal(await usdcOf(seller.walletAddress!), PRICE * BigInt(calls));
      assert.deepEqual(await channelOf(channelId), [USDC, PRICE * BigInt(calls)]);
      const rows = await svc.db.sql`
        select g.cumulative, c.tx_hash from x402_channel_charges g
        join x402_channel_claim_rows r on r.channel_id = g.channel_id
          and r.total_claimed >= g.cumulative
        join x402_channel_claims c on c.id = r.claim_id and c.status = 'confirmed'
        where g.channel_id = ${channelId}`;
      assert.equal(rows.length, calls);
      assert.ok(rows.every((r) => r.txHash === round.transactions[0].txHash));
      const gas = (await pub.getTransactionReceipt({
        hash: round.transactions[0].txHash as `0x${string}`,
      })).gasUsed;
      console.log(`channel claim: ${gas} gas for ${calls} payments (${gas / BigInt(calls)} each)`);
      // Nothing owed any more: the next round sends nothing.
      assert.equal((await claimRound(svc.deps)).transactions.length, 0);
      // The listing's row on the seller's dashboard counts them (it showed 0).
      assert.deepEqual(await totalsAgree(), { calls, revenue: PRICE * BigInt(calls) });
      const page = await api(svc)("GET", "/dashboard/x402", { cookie: seller.cookie });
      const row = page.text.match(/<tr data-listing="quotes">([\s\S]*?)<\/tr>/)?.[1] ?? "";
      assert.match(row, new RegExp(`data-cell="calls">${calls}<`));
      // Its latest paid calls list them (it read "No paid calls yet.").
      const latest = page.text.slice(page.text.indexOf('id="x402-calls-title"'));
      assert.equal(
        latest.match(/<tr data-call-status="SUCCESS">[\s\S]*?class="hint">batch-settlement</g)
          ?.length,
        Math.min(calls, 20),
      );
      assert.match(
        row,
        new RegExp(`data-cell="revenue">${formatUsdcFixed(PRICE * BigInt(calls))} USDC<`),
      );
    });

    await t.step("a client that lost its state re-bases on the corrective 402", async () => {
      for (let i = 0; i < 2; i++) assert.equal((await first.fetch(resource)).status, 200);
      // A fresh client: its cold start reads the chain (claimed 250000), not the 270000 charged;
      // the server's corrective 402 carries its state and the last voucher, the client retries.
      const seen: number[] = [];
      const cold = payer(new InMemoryClientChannelStorage(), async (req) => {
        const res = await fetch(req);
        seen.push(res.status);
        return res;
      });
      const r = await cold.fetch(resource);
      assert.deepEqual(seen, [402, 402, 200]);
      assert.equal(r.status, 200, await r.clone().text());
      const settled = decodePaymentResponseHeader(r.headers.get("payment-response")!);
      const state = settled.extra?.channelState as Record<string, unknown>;
      assert.equal(state.chargedCumulativeAmount, String(PRICE * BigInt(calls + 3)));
      assert.equal(await charged(), PRICE * BigInt(calls + 3));
    });

    // From here on, `cold` is the client whose state matches the server's.
    const client = payer();
    assert.equal((await client.fetch(resource)).status, 200);
    let total = PRICE * BigInt(calls + 4);

    await t.step(
      "an upstream failure charges nothing; the same voucher base works after",
      async () => {
        const failures = async () =>
          ((await svc.db.sql`
            select t.failed::int from x402_listing_totals t
            join x402_listings l on l.id = t.listing_id where l.slug = 'quotes'`)[0]?.failed ??
            0) as number;
        const before = await failures();
        answer = () => new Response("down", { status: 503 });
        const failed = await client.fetch(resource);
        assert.equal(failed.status, 500);
        assert.equal(failed.headers.get("payment-response"), null);
        assert.equal(await charged(), total);
        assert.equal(await failures(), before + 1, "the listing counts the failed call");
        answer = () => Response.json({ quote: "to be or not to be" });
        assert.equal((await client.fetch(resource)).status, 200);
        total += PRICE;
        assert.equal(await charged(), total);
      },
    );

    const voucherHeader = async (max: bigint, key = buyer) =>
      encodeHeader({
        x402Version: 2,
        accepted: requirement,
        payload: {
          type: "voucher",
          channelConfig: config,
          voucher: await signVoucher(key, channelId, max.toString(), NETWORK),
        },
      });
    const refused = async (header: string) => {
      const r = await fetch(resource, { headers: { "payment-signature": header } });
      assert.equal(r.status, 402);
      await r.body?.cancel();
      return JSON.parse(atob(r.headers.get("payment-required")!));
    };

    await t.step(
      "forged, stale and over-balance vouchers are refused, charging nothing",
      async () => {
        const forged = await refused(
          await voucherHeader(total + PRICE, privateKeyToAccount(generatePrivateKey())),
        );
        assert.equal(forged.error, "invalid_batch_settlement_evm_voucher_signature");
        const stale = await refused(await voucherHeader(total));
        assert.equal(stale.error, "invalid_batch_settlement_evm_cumulative_amount_mismatch");
        assert.equal(stale.accepts[1].extra.channelState.chargedCumulativeAmount, String(total));
        assert.equal(stale.accepts[1].extra.voucherState.signedMaxClaimable, String(total));
        // The next voucher, malleated (s → n − s, v flipped): the same signer recovers from it,
        // but the contract's ECDSA refuses a high s, so the claim would fail: refused here.
        const next = await signVoucher(buyer, channelId, (total + PRICE).toString(), NETWORK);
        const malleated = await refused(encodeHeader({
          x402Version: 2,
          accepted: requirement,
          payload: {
            type: "voucher",
            channelConfig: config,
            voucher: { ...next, signature: highS(next.signature) },
          },
        }));
        assert.equal(malleated.error, "invalid_batch_settlement_evm_voucher_signature");
        const greedy = await refused(await voucherHeader(total + 2n * USDC));
        assert.equal(greedy.error, "invalid_batch_settlement_evm_cumulative_amount_mismatch");
        assert.equal(await charged(), total);
        // A channel nobody funded: refused, and no record is made of it.
        const nobody = privateKeyToAccount(generatePrivateKey());
        const unfunded = buildChannelConfig(
          { signer: nobody, storage: undefined as never, salt: ZERO },
          requirement,
        );
        const unfundedId = computeChannelId(unfunded, NETWORK);
        const empty = await refused(encodeHeader({
          x402Version: 2,
          accepted: requirement,
          payload: {
            type: "voucher",
            channelConfig: unfunded,
            voucher: await signVoucher(nobody, unfundedId, PRICE.toString(), NETWORK),
          },
        }));
        assert.equal(empty.error, "invalid_batch_settlement_evm_channel_not_found");
        const rows = await svc.db.sql`
          select 1 from x402_channels where channel_id = ${unfundedId}`;
        assert.equal(rows.length, 0);
      },
    );

    await t.step("50 copies of one voucher at once: one call charged", async () => {
      const header = await voucherHeader(total + PRICE);
      const other = await createMerchant(svc);
      const r = await stampede(svc, {
        method: "GET",
        path: "/x402/quotes",
        headers: { "payment-signature": header },
      }, {
        bystander: {
          method: "GET",
          path: "/api/wallets",
          headers: { authorization: `Bearer ${other.apiKey}` },
        },
        allowed: (s) => s === 402,
      });
      assert.equal(succeeded(r).length, 1, JSON.stringify(r.byStatus));
      total += PRICE;
      assert.equal(await charged(), total);
      // The client signs on from the server's state (it did not see that call).
      assert.equal((await client.fetch(resource)).status, 200);
      total += PRICE;
    });

    await t.step(
      "the client's cooperative refund: claimed what is owed, the rest back",
      async () => {
        const before = {
          buyer: await usdcOf(buyer.address),
          seller: await usdcOf(seller.walletAddress!),
        };
        const [balance] = await channelOf(channelId);
        const settled = await client.scheme.refund(resource);
        assert.equal(settled.success, true, JSON.stringify(settled));
        assert.equal(settled.amount, String(balance - total));
        assert.equal(await usdcOf(buyer.address), before.buyer + balance - total);
        // The outstanding vouchers were claimed and paid in the same transaction.
        assert.equal(await usdcOf(seller.walletAddress!), total);
        assert.ok(before.seller < total);
        assert.deepEqual(await channelOf(channelId), [total, total]);
        const nonce = await pub.readContract({
          address: BATCH_SETTLEMENT_ADDRESS,
          abi: X402BatchSettlement.abi,
          functionName: "refundNonce",
          args: [channelId],
        });
        assert.equal(nonce, 1n);
      },
    );

    await t.step("our facilitator, driven by the standard HTTPFacilitatorClient", async () => {
      const facilitator = (key: string) => facilitatorClient(svc, key);
      const f = facilitator(seller.apiKey);
      const third = privateKeyToAccount(generatePrivateKey());
      await chain.mintUsdc({ profile: X402_PROFILE, to: third.address, amount: USDC });
      const s3 = toClientEvmSigner(third, pub);
      const cfg = buildChannelConfig(
        { signer: s3, storage: undefined as never, salt: ZERO },
        requirement,
      );
      const id = computeChannelId(cfg, NETWORK);
      const envelope = (payload: unknown) => ({
        x402Version: 2,
        accepted: requirement,
        payload: payload as Record<string, unknown>,
      });
      const deposit = await createBatchSettlementEIP3009DepositPayload(
        s3,
        2,
        requirement,
        cfg,
        "500000",
        "10000",
      );
      // The deposit's authorization malleated (a high s): USDC's ECRecover would refuse the relay.
      const dp = deposit.payload as {
        deposit: { authorization: { erc3009Authorization: { signature: `0x${string}` } } };
      };
      const auth = dp.deposit.authorization.erc3009Authorization;
      const malleated = await f.verify(
        envelope({
          ...dp,
          deposit: {
            ...dp.deposit,
            authorization: { erc3009Authorization: { ...auth, signature: highS(auth.signature) } },
          },
        }),
        requirement,
      );
      assert.equal(malleated.isValid, false);
      assert.equal(
        malleated.invalidReason,
        "invalid_batch_settlement_evm_receive_authorization_signature",
      );
      const verified = await f.verify(envelope(deposit.payload), requirement);
      assert.equal(verified.isValid, true, JSON.stringify(verified));
      assert.equal(verified.payer, third.address);
      assert.equal((verified.extra as Record<string, unknown>).balance, "0");
      const deposited = await f.settle(envelope(deposit.payload), requirement);
      assert.equal(deposited.success, true, JSON.stringify(deposited));
      assert.equal(deposited.amount, "500000");
      assert.deepEqual(await channelOf(id), [500_000n, 0n]);
      // Vouchers sent to /settle are charged (a seller that keeps no channel state), not sent.
      const voucher = async (max: bigint) =>
        envelope({
          type: "voucher",
          channelConfig: cfg,
          voucher: await signVoucher(s3, id, max.toString(), NETWORK),
        });
      for (const max of [PRICE, 2n * PRICE]) {
        const v = await f.settle(await voucher(max), requirement);
        assert.equal(v.success, true, JSON.stringify(v));
        assert.equal(v.transaction, "");
        assert.equal(v.extra?.chargedAmount, "10000");
      }
      const replay = await f.settle(await voucher(2n * PRICE), requirement);
      assert.equal(replay.errorReason, "invalid_batch_settlement_evm_cumulative_amount_mismatch");
      // Another merchant may not act on this seller's channels.
      const stranger = await createMerchant(svc);
      const claim = envelope({
        type: "claim",
        claims: [{
          voucher: { channel: cfg, maxClaimableAmount: String(3n * PRICE) },
          signature: (await signVoucher(s3, id, String(3n * PRICE), NETWORK)).signature,
          totalClaimed: String(3n * PRICE),
        }],
      });
      const theirs = await facilitator(stranger.apiKey).settle(claim, requirement);
      assert.equal(theirs.errorReason, "invalid_batch_settlement_evm_receiver_not_yours");
      // A standard server's claim joins the claim job's batch; its answer is that transaction.
      const before = await usdcOf(seller.walletAddress!);
      const claimed = await f.settle(claim, requirement);
      assert.equal(claimed.success, true, JSON.stringify(claimed));
      assert.match(claimed.transaction, /^0x[0-9a-f]{64}$/);
      assert.deepEqual(await channelOf(id), [500_000n, 3n * PRICE]);
      assert.equal(await usdcOf(seller.walletAddress!), before + 3n * PRICE);
      // The batch settled the receiver already: a settle moves nothing.
      const settled = await f.settle(
        envelope({ type: "settle", receiver: seller.walletAddress, token: usdc }),
        requirement,
      );
      assert.deepEqual([settled.success, settled.amount], [true, "0"]);
      total += 3n * PRICE;
      // A standard server's cooperative refund (the payload its refund flow completes).
      const back = await usdcOf(third.address);
      const refund = await f.settle(
        envelope({
          type: "refund",
          channelConfig: cfg,
          voucher: await signVoucher(s3, id, String(3n * PRICE), NETWORK),
          amount: "100000",
          refundNonce: "0",
          claims: [],
        }),
        requirement,
      );
      assert.equal(refund.success, true, JSON.stringify(refund));
      assert.equal(refund.amount, "100000");
      assert.equal(await usdcOf(third.address), back + 100_000n);
      assert.deepEqual(await channelOf(id), [400_000n, 3n * PRICE]);
      const stale = await f.settle(
        envelope({
          type: "refund",
          channelConfig: cfg,
          voucher: await signVoucher(s3, id, String(3n * PRICE), NETWORK),
          amount: "1",
          refundNonce: "0",
          claims: [],
        }),
        requirement,
      );
      assert.equal(stale.success, false);
    });

    await t.step(
      "the payer's timed withdrawal: no new charges, owed vouchers still claimed",
      async () => {
        const other = privateKeyToAccount(generatePrivateKey());
        await chain.mintUsdc({ profile: X402_PROFILE, to: other.address, amount: 2n * USDC });
        await chain.grantGas(X402_PROFILE, other.address);
        const scheme = new BatchSettlementEvmScheme(toClientEvmSigner(other, pub));
        const client2 = new x402Client().register(NETWORK, scheme);
        client2.setSpendControls({
          allowedAssets: [{ network: NETWORK, asset: usdc, maxAmountPerPayment: "1000000" }],
        });
        const pay = wrapFetchWithPayment(fetch, client2);
        for (let i = 0; i < 3; i++) assert.equal((await pay(resource)).status, 200);
        const cfg = scheme.buildChannelConfig(requirement);
        const id = computeChannelId(cfg, NETWORK);
        const wallet = createWalletClient({
          account: other,
          chain: rt.viemChain,
          transport: http(rt.rpcUrl),
        });
        const hash = await wallet.writeContract({
          address: BATCH_SETTLEMENT_ADDRESS,
          abi: X402BatchSettlement.abi,
          functionName: "initiateWithdraw",
          args: [{ ...cfg, withdrawDelay: 900 }, USDC - 3n * PRICE],
        });
        await pub.waitForTransactionReceipt({ hash, timeout: 20_000 });
        // Once our mirror is older than its TTL the service reads the withdrawal and stops charging.
        svc.clock.advance(31_000);
        const r = await pay(resource);
        assert.equal(r.status, 402);
        await r.body?.cancel();
        const required = JSON.parse(atob(r.headers.get("payment-required")!));
        assert.equal(required.error, "invalid_batch_settlement_evm_withdraw_pending");
        const round = await claimRound(svc.deps);
        assert.equal(round.transactions.length, 1);
        assert.deepEqual(await channelOf(id), [USDC, 3n * PRICE]);
        assert.equal(await usdcOf(seller.walletAddress!), total + 3n * PRICE);
        await totalsAgree();
      },
    );
  } finally {
    await upstream.shutdown();
    await svc.close();
  }
});
