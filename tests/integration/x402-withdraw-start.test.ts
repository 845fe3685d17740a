/**
 * Withdrawals on a vault with a delay (the batched option's vaults on real chains): the service
 * holds the keys of the seller, the payers and the agents' owners, so the API starts their
 * withdrawals (`initiateWithdrawal`), and the withdraw routes pay them once the delay has passed.
 * Against a GatewayVault deployed with a one-hour delay on the test's anvil, chain time moved
 * forward: only what no unsettled paid call needs is started, nothing is withdrawable before the
 * delay, all of it after, 50 identical starts start once, an agent's account starts through its
 * owner, and a vault with no delay refuses the start.
 */
import assert from "node:assert/strict";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { startTestService } from "../helpers/service.ts";
import { api, createMerchant } from "../helpers/accounts.ts";
import { okUpstream, randomNonce, useDelayedVault, X402_PROFILE } from "../helpers/x402.ts";
import { stampede, succeeded } from "../helpers/stampede.ts";
import { M } from "../../src/http/messages.ts";
import { claimAttempt } from "../../src/modules/x402/x402.repo.ts";

const USDC = 1_000_000n;
const DELAY = 3600n;

Deno.test("x402 withdrawals on a vault with a delay: started, then paid once matured", async (t) => {
  const svc = await startTestService({ env: { RATE_LIMITS: "off" }, crons: false });
  const upstream = okUpstream();
  const call = api(svc);
  const chain = svc.deps.chain;
  const rt = chain.runtime(X402_PROFILE);
  try {
    const m = await createMerchant(svc);
    const bearer = { authorization: `Bearer ${m.apiKey}` };
    const seller = m.walletAddress!.toLowerCase() as `0x${string}`;
    const created = await call("POST", "/api/wallets", { headers: bearer, body: {} });
    assert.equal(created.status, 201, created.text);
    const payer = created.json.wallet as { id: string; address: `0x${string}` };
    const deployedAgent = await call("POST", "/api/agent/deploy", {
      headers: bearer,
      body: { name: "Saver", metadataURI: "ipfs://bafysaver" },
    });
    assert.equal(deployedAgent.status, 201, deployedAgent.text);
    const agentId = deployedAgent.json.agentId as string;
    const sca = (deployedAgent.json.agent as { scaAddress: string }).scaAddress
      .toLowerCase() as `0x${string}`;

    await t.step("a vault with no delay: nothing to start, withdraw directly", async () => {
      const r = await call("POST", "/api/x402/seller/balance/withdraw/start", {
        headers: bearer,
        body: { amount: "1" },
      });
      assert.equal(r.status, 400, r.text);
      assert.equal(r.json.error, M.x402WithdrawNoDelay);
    });

    // A vault with a one-hour delay; the seller, the payer and the agent deposited 5 on it.
    await useDelayedVault(svc, DELAY, [seller, payer.address, sca], 5n * USDC);
    const balanceOf = (a: `0x${string}`) => chain.gateway.balance(X402_PROFILE, a);

    await t.step("the payer: only what no unsettled paid call needs is started", async () => {
      // A paid call in flight (POST /api/x402/pay between its claim and its settlement) holds 1.
      const listing = await call("POST", "/api/x402/listings", {
        headers: bearer,
        body: {
          slug: "delayed",
          upstreamUrl: `http://127.0.0.1:${upstream.addr.port}/`,
          price: "1",
          methods: ["GET"],
        },
      });
      assert.equal(listing.status, 201, listing.text);
      const [row] = await svc.db.sql`select id from x402_listings where slug = 'delayed'`;
      const now = svc.clock.now();
      const seconds = BigInt(Math.floor(now.getTime() / 1000));
      await claimAttempt(svc.db.sql, {
        listingId: row.id,
        listingSlug: "delayed",
        merchantId: null,
        scheme: "gateway",
        chainId: chain.chainId(X402_PROFILE),
        payer: payer.address.toLowerCase(),
        payee: seller,
        amount: USDC,
        nonce: randomNonce(),
        validAfter: seconds - 5n,
        validBefore: seconds + 300n,
        agentId: null,
        owner: null,
        now,
      });
      const tooMuch = await call("POST", "/api/x402/gateway/withdraw/start", {
        headers: bearer,
        body: { walletId: payer.id, amount: "4.5" },
      });
      assert.equal(tooMuch.status, 400, tooMuch.text);
      assert.equal(tooMuch.json.error, M.x402WithdrawStartExceeds);
      assert.equal(tooMuch.json.balance, "4.000000", "5 available, 1 promised");

      const started = await call("POST", "/api/x402/gateway/withdraw/start", {
        headers: { ...bearer, "idempotency-key": "payer-start-1" },
        body: { walletId: payer.id, amount: "4" },
      });
      assert.equal(started.status, 200, started.text);
      assert.equal(started.json.walletId, payer.id);
      assert.deepEqual(started.json.gateway, {
        total: "5.000000",
        available: "1.000000",
        withdrawing: "4.000000",
        withdrawable: "0.000000",
      });
      const block = await rt.client.getBlock();
      assert.equal(
        Date.parse(started.json.withdrawableAt as string) / 1000,
        Number(block.timestamp + DELAY),
      );
      // Not withdrawable yet: the withdraw route pays nothing.
      const early = await call("POST", "/api/x402/gateway/withdraw", {
        headers: { ...bearer, "idempotency-key": "payer-early" },
        body: { walletId: payer.id, amount: "4" },
      });
      assert.equal(early.status, 400, early.text);
      assert.equal(early.json.error, M.x402WithdrawExceeds);
    });

    await t.step("the seller: 50 identical starts start once, the rest 400", async () => {
      const r = await stampede(svc, {
        method: "POST",
        path: "/api/x402/seller/balance/withdraw/start",
        headers: bearer,
        body: { amount: "3" },
      });
      assert.equal(succeeded(r).length, 1, JSON.stringify(r.byStatus));
      assert.deepEqual(r.byStatus, { 200: 1, 400: r.answers.length - 1 });
      for (const a of r.answers.filter((a) => a.status === 400)) {
        assert.equal(a.json.error, M.x402WithdrawStartExceeds);
        assert.equal(a.json.balance, "2.000000");
      }
      const [ok] = succeeded(r);
      assert.equal(ok.json.sellerAddress, m.walletAddress);
      assert.deepEqual(await balanceOf(seller), {
        available: 2n * USDC,
        withdrawing: 3n * USDC,
        withdrawable: 0n,
      });
      assert.equal(
        await chain.gateway.withdrawableAt(X402_PROFILE, seller),
        BigInt(Date.parse(ok.json.withdrawableAt as string) / 1000),
      );
    });

    await t.step("an agent's account: its owner has it start the withdrawal", async () => {
      const r = await call("POST", "/api/x402/gateway/withdraw/start", {
        headers: bearer,
        body: { agentId, amount: "5" },
      });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.json.agentId, agentId);
      assert.equal((r.json.payer as string).toLowerCase(), sca);
      assert.deepEqual(await balanceOf(sca), {
        available: 0n,
        withdrawing: 5n * USDC,
        withdrawable: 0n,
      });
    });

    await t.step(
      "once the delay has passed, the withdraw routes pay what was started",
      async () => {
        await rt.client.request({
          method: "evm_increaseTime" as never,
          params: [Number(DELAY)] as never,
        });
        await rt.client.request({ method: "evm_mine" as never, params: [] as never });
        const to = privateKeyToAccount(generatePrivateKey()).address.toLowerCase() as `0x${string}`;
        const sellerPaid = await call("POST", "/api/x402/seller/balance/withdraw", {
          headers: { ...bearer, "idempotency-key": "seller-late" },
          body: { amount: "3", destinationAddress: to },
        });
        assert.equal(sellerPaid.status, 200, sellerPaid.text);
        const payerPaid = await call("POST", "/api/x402/gateway/withdraw", {
          headers: { ...bearer, "idempotency-key": "payer-late" },
          body: { walletId: payer.id, amount: "3", destinationAddress: to },
        });
        assert.equal(payerPaid.status, 200, payerPaid.text);
        const agentPaid = await call("POST", "/api/x402/gateway/withdraw", {
          headers: { ...bearer, "idempotency-key": "agent-late" },
          body: { agentId, amount: "5", destinationAddress: to },
        });
        assert.equal(agentPaid.status, 200, agentPaid.text);
        assert.equal(await chain.usdcBalance(X402_PROFILE, to), 11n * USDC);
        assert.equal((await balanceOf(sca)).withdrawing, 0n);
        const [s, p] = await Promise.all([balanceOf(seller), balanceOf(payer.address)]);
        assert.equal(s.available + s.withdrawing, 2n * USDC, "the seller's unstarted rest stays");
        assert.equal(
          p.withdrawing,
          1n * USDC,
          "the payer's 4 started, 3 paid: 1 still withdrawable",
        );
        assert.equal(p.available, 1n * USDC, "the 1 its paid call in flight holds");
      },
    );
  } finally {
    await upstream.shutdown();
    await svc.close();
  }
});
