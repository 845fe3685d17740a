/**
 * A batch-settlement channel whose terms commit no payer authorizer (zero): the contract checks
 * its vouchers against the payer at claim time, through ERC-1271 when the payer has code (a smart
 * account, or an EOA that delegates its code later), so what the payer's code answers may change
 * between our check and the claim. Such a voucher is claimed on chain before its call is
 * answered: here a smart account's owner revokes its signatures while the upstream works, and the
 * answer is withheld; nothing is charged, nothing is left to claim. The unmodified `@x402/evm`
 * client pays as the smart account (`payerAuthorizer` zero), and our facilitator's /settle claims
 * such a voucher before it answers the seller's server; 50 copies of one voucher at once charge
 * and claim one call; a voucher claim a stopped process left
 * (recorded, or killed at its transaction's record, broadcast or receipt) is finished by the claim
 * job, once.
 */
import assert from "node:assert/strict";
import { createPublicClient, getAddress, http } from "viem";
import { generatePrivateKey } from "viem/accounts";
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
import { createMerchant } from "../helpers/accounts.ts";
import { externalBuyer, facilitatorClient, listApi, X402_PROFILE } from "../helpers/x402.ts";
import { compileRevocable1271 } from "../helpers/erc1271.ts";
import { waitFor } from "../helpers/poll.ts";
import { startCrashWorker } from "../helpers/processes.ts";
import { stampede, succeeded } from "../helpers/stampede.ts";
import { encodeHeader } from "../../src/modules/x402/x402.exact.ts";
import { X402BatchSettlement } from "../../src/chain/contracts/artifacts/index.ts";
import { BATCH_SETTLEMENT_ADDRESS } from "../../src/chain/channels.ts";
import { claimRound } from "../../src/modules/x402/x402.channels.claims.ts";
import * as channels from "../../src/modules/x402/x402.channels.repo.ts";
import * as claims from "../../src/modules/x402/x402.channels.claims.repo.ts";

const USDC = 1_000_000n;
const PRICE = 10_000n;
const NETWORK = "eip155:5042002" as const;
const ZERO_SALT = `0x${"00".repeat(32)}` as const;
const NO_AUTHORIZER = `0x${"00".repeat(20)}` as const;

Deno.test("x402 batch-settlement: a channel without a payer authorizer is claimed before its answer", async (t) => {
  const svc = await startTestService({
    env: { RATE_LIMITS: "off", X402_CHANNEL_CLAIM_SECONDS: "3600" },
    // Its rounds are the test's to run: no every-minute one beside them.
    crons: false,
  });
  let duringCall: (() => Promise<void>) | null = null;
  const upstream = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    async () => {
      const during = duringCall;
      duringCall = null;
      await during?.();
      return Response.json({ quote: "to be or not to be" });
    },
  );
  const chain = svc.deps.chain;
  const rt = chain.runtime(X402_PROFILE);
  const pub = createPublicClient({ transport: http(rt.rpcUrl) });
  const usdc = getAddress(chain.contract(X402_PROFILE, "TestUSDC"));
  const usdcOf = (a: string) => chain.usdcBalance(X402_PROFILE, a.toLowerCase() as `0x${string}`);
  const channelOf = (id: `0x${string}`) =>
    pub.readContract({
      address: BATCH_SETTLEMENT_ADDRESS,
      abi: X402BatchSettlement.abi,
      functionName: "channels",
      args: [id],
    });
  const { abi, bytecode } = compileRevocable1271();
  try {
    const seller = await createMerchant(svc);
    const resource = await listApi(svc, seller, {
      slug: "quotes",
      upstreamUrl: `http://127.0.0.1:${upstream.addr.port}/quote`,
    });
    const requirement = {
      scheme: "batch-settlement",
      network: NETWORK,
      amount: PRICE.toString(),
      asset: usdc,
      payTo: seller.walletAddress!,
      maxTimeoutSeconds: 300,
      extra: {
        name: "USD Coin",
        version: "2",
        receiverAuthorizer: getAddress(rt.operator!.address),
        withdrawDelay: 900,
        minDeposit: "1000000",
      },
    };

    /** A smart account (ERC-1271, its owner's key) holding `funds` USDC, and its owner. */
    const smartAccount = async (funds: bigint) => {
      const owner = await externalBuyer(svc, generatePrivateKey(), 0n);
      const hash = await owner.wallet.deployContract({ abi, bytecode, args: [owner.address] });
      const receipt = await waitFor(() => pub.getTransactionReceipt({ hash }), {
        what: "the account deployed",
      });
      const address = getAddress(receipt.contractAddress!);
      await chain.mintUsdc({
        profile: X402_PROFILE,
        to: address.toLowerCase() as `0x${string}`,
        amount: funds,
      });
      // The account's signer: its address, its owner's signatures (which it vouches for).
      const signer = toClientEvmSigner({
        address,
        signTypedData: (m: Parameters<typeof owner.account.signTypedData>[0]) =>
          owner.account.signTypedData(m),
      }, pub);
      const revoke = async () => {
        await owner.mined(
          await owner.wallet.writeContract({ address, abi, functionName: "revoke", args: [] }),
        );
      };
      // The unmodified client, told to commit no payer authorizer: the payer itself signs.
      const client = new x402Client().register(
        NETWORK,
        new BatchSettlementEvmScheme(signer, {
          storage: new InMemoryClientChannelStorage(),
          payerAuthorizer: NO_AUTHORIZER,
        }),
      );
      client.setSpendControls({
        allowedAssets: [{ network: NETWORK, asset: usdc, maxAmountPerPayment: "1000000" }],
      });
      // Its channel to the seller: the terms the client builds, without a payer authorizer.
      const terms = {
        ...buildChannelConfig(
          { signer, storage: undefined as never, salt: ZERO_SALT },
          requirement,
        ),
        payerAuthorizer: NO_AUTHORIZER,
      };
      return {
        address,
        signer,
        revoke,
        pay: wrapFetchWithPayment(fetch, client),
        terms,
        channelId: computeChannelId(terms, NETWORK),
      };
    };

    const account = await smartAccount(2n * USDC);
    const pay = account.pay;
    const channelId = account.channelId;
    const channelRow = async () =>
      (await svc.db.sql`
        select charged, claimed, stuck, payer_authorizer from x402_channels
        where channel_id = ${channelId}`)[0];

    await t.step("each paid call's voucher is claimed on chain before the answer", async () => {
      for (let i = 1n; i <= 2n; i++) {
        const r = await pay(resource);
        assert.equal(
          r.status,
          200,
          r.headers.get("payment-required")
            ? atob(r.headers.get("payment-required")!)
            : await r.clone().text(),
        );
        assert.deepEqual(await r.json(), { quote: "to be or not to be" });
        const settled = decodePaymentResponseHeader(r.headers.get("payment-response")!);
        assert.equal(settled.success, true);
        assert.equal(settled.payer, account.address);
        const claimTx = settled.extra?.claimTransaction as string;
        assert.match(claimTx, /^0x[0-9a-f]{64}$/);
        const receipt = await pub.getTransactionReceipt({ hash: claimTx as `0x${string}` });
        assert.equal(receipt.status, "success");
        console.log(`voucher claimed before the answer: ${receipt.gasUsed} gas`);
        // Claimed and paid to the seller before the answer came.
        assert.deepEqual(await channelOf(channelId), [USDC, i * PRICE]);
        assert.equal(await usdcOf(seller.walletAddress!), i * PRICE);
      }
      const row = await channelRow();
      assert.equal(row.payerAuthorizer, NO_AUTHORIZER);
      assert.deepEqual([row.charged, row.claimed], [2n * PRICE, 2n * PRICE]);
      const claims = await svc.db.sql`
        select kind, status, charges from x402_channel_claims order by created_at`;
      assert.deepEqual(
        claims.map((c) => [c.kind, c.status, c.charges]),
        [["voucher", "confirmed", 1], ["voucher", "confirmed", 1]],
      );
    });

    await t.step(
      "revoked while the upstream works: the claim is refused, the answer withheld, nothing charged",
      async () => {
        duringCall = account.revoke;
        const r = await pay(resource);
        assert.equal(duringCall, null, "the upstream was called");
        assert.equal(r.status, 402);
        const body = await r.text();
        assert.doesNotMatch(body, /to be or not to be/);
        const required = JSON.parse(atob(r.headers.get("payment-required")!));
        assert.equal(required.error, "invalid_batch_settlement_evm_voucher_signature");
        // Nothing was charged for it, nothing is owed: the channel is left alone.
        const row = await channelRow();
        assert.deepEqual([row.charged, row.claimed], [2n * PRICE, 2n * PRICE]);
        assert.ok(row.stuck, "the channel is set aside");
        const [{ n }] = await svc.db.sql`
          select count(*)::int as n from x402_channel_charges where channel_id = ${channelId}`;
        assert.equal(n, 2);
        assert.deepEqual(await channelOf(channelId), [USDC, 2n * PRICE]);
        assert.equal((await claimRound(svc.deps)).transactions.length, 0);
        assert.equal(await usdcOf(seller.walletAddress!), 2n * PRICE);
      },
    );

    await t.step("our facilitator's /settle claims such a voucher before it answers", async () => {
      const f = facilitatorClient(svc, seller.apiKey);
      const other = await smartAccount(USDC);
      const { terms, channelId: id } = other;
      const envelope = (payload: unknown) => ({
        x402Version: 2,
        accepted: requirement,
        payload: payload as Record<string, unknown>,
      });
      const deposit = await createBatchSettlementEIP3009DepositPayload(
        other.signer,
        2,
        requirement,
        terms,
        "500000",
        PRICE.toString(),
      );
      const deposited = await f.settle(envelope(deposit.payload), requirement);
      assert.equal(deposited.success, true, JSON.stringify(deposited));
      assert.deepEqual(await channelOf(id), [500_000n, 0n]);
      const before = await usdcOf(seller.walletAddress!);
      const v = await f.settle(
        envelope({
          type: "voucher",
          channelConfig: terms,
          voucher: await signVoucher(other.signer, id, PRICE.toString(), NETWORK),
        }),
        requirement,
      );
      assert.equal(v.success, true, JSON.stringify(v));
      assert.match(v.transaction, /^0x[0-9a-f]{64}$/);
      assert.deepEqual(await channelOf(id), [500_000n, PRICE]);
      assert.equal(await usdcOf(seller.walletAddress!), before + PRICE);
      // One such voucher at a time: while another request holds the channel (claiming its own),
      // the next is refused as busy, charging nothing.
      const holder = crypto.randomUUID();
      const now = new Date();
      assert.ok(
        await channels.hold(svc.db.sql, {
          channelId: id,
          pendingId: holder,
          until: new Date(now.getTime() + 60_000),
          now,
        }),
      );
      const busy = await f.settle(
        envelope({
          type: "voucher",
          channelConfig: terms,
          voucher: await signVoucher(other.signer, id, (2n * PRICE).toString(), NETWORK),
        }),
        requirement,
      );
      assert.equal(busy.errorReason, "invalid_batch_settlement_evm_channel_busy");
      await channels.release(svc.db.sql, id, holder);
      assert.equal((await channels.find(svc.db.sql, id))?.charged, PRICE);

      // A voucher claim a stopped process recorded and never sent: the claim job leaves a fresh
      // one to the request finishing it, and finishes it once it is older than a hold.
      const next = await signVoucher(other.signer, id, (2n * PRICE).toString(), NETWORK);
      const sql = svc.db.sql;
      const charged = await channels.chargeVoucher(sql, {
        channelId: id,
        price: PRICE,
        maxClaimable: 2n * PRICE,
        signature: next.signature,
        merchantId: null,
        now: new Date(),
      });
      assert.equal(charged?.charged, 2n * PRICE);
      const left = crypto.randomUUID();
      await claims.createClaim(sql, {
        id: left,
        chainId: chain.chainId(X402_PROFILE),
        kind: "voucher",
        channelId: id,
        rows: [{
          channelId: id,
          maxClaimable: 2n * PRICE,
          signature: next.signature,
          totalClaimed: 2n * PRICE,
        }],
        now: new Date(),
      });
      const status = async () =>
        (await sql`select status from x402_channel_claims where id = ${left}`)[0].status;
      // The claim job's own batch claims the channel meanwhile; the live claim stays the request's.
      await claimRound(svc.deps);
      assert.equal(await status(), "pending");
      assert.deepEqual(await channelOf(id), [500_000n, 2n * PRICE]);
      await sql`
        update x402_channel_claims set created_at = now() - interval '3 minutes'
        where id = ${left}`;
      await claimRound(svc.deps);
      assert.equal(await status(), "confirmed");
      assert.deepEqual(await channelOf(id), [500_000n, 2n * PRICE]);
    });

    await t.step(
      "50 copies of one voucher at once: one call charged, one claim transaction",
      async () => {
        const payerAccount = await smartAccount(USDC);
        // Opened (and its first call claimed) by the client.
        const opened = await payerAccount.pay(resource);
        assert.equal(opened.status, 200);
        await opened.body?.cancel();
        const { terms, channelId: id } = payerAccount;
        const header = encodeHeader({
          x402Version: 2,
          accepted: requirement,
          payload: {
            type: "voucher",
            channelConfig: terms,
            voucher: await signVoucher(payerAccount.signer, id, String(2n * PRICE), NETWORK),
          },
        });
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
          allowed: (status) => status === 402,
        });
        assert.equal(succeeded(r).length, 1, JSON.stringify(r.byStatus));
        assert.deepEqual(await channelOf(id), [USDC, 2n * PRICE]);
        const [{ n }] = await svc.db.sql`
          select count(*)::int as n from x402_channel_claims
          where channel_id = ${id} and kind = 'voucher' and status = 'confirmed'`;
        assert.equal(n, 2, "the opening call's claim and this one's");
        const [{ calls }] = await svc.db.sql`
          select count(*)::int as calls from x402_channel_charges where channel_id = ${id}`;
        assert.equal(calls, 2);
      },
    );

    for (const at of ["record", "broadcast", "receipt"] as const) {
      await t.step(
        `killed at the voucher claim's ${at}: the claim job finishes it, once`,
        async () => {
          const payerAccount = await smartAccount(USDC);
          const before = await usdcOf(seller.walletAddress!);
          const worker = await startCrashWorker(svc, "money-worker", {
            KILL_INTENT: "^x402ch:voucher:",
            KILL_AT: at,
          });
          try {
            // The call deposits, is served and charged; the process dies claiming its voucher.
            await assert.rejects(payerAccount.pay(`${worker.baseUrl}/x402/quotes`));
            assert.equal((await worker.child.status).signal, "SIGKILL");
          } finally {
            worker.child.stdout.cancel().catch(() => {});
          }
          const id = payerAccount.channelId;
          const sql = svc.db.sql;
          const [left] = await sql`
            select id from x402_channel_claims where kind = 'voucher' and status = 'pending'
              and channel_id = ${id}`;
          assert.ok(left, "the dead process left its voucher claim recorded");
          // The survivor: the chain's recovery, then the claim job once the claim is stale.
          await chain.recover(X402_PROFILE, { minAgeMs: 0 });
          await sql`
            update x402_channel_claims set created_at = now() - interval '3 minutes'
            where id = ${left.id}`;
          // A round finishes it: this one, or the service's own every-minute round, which may
          // come first at a minute's turn (and may have claimed the channel's charge already).
          await claimRound(svc.deps);
          const [done] = await sql`select status from x402_channel_claims where id = ${left.id}`;
          assert.equal(done.status, "confirmed");
          assert.ok(await claims.claimCovering(sql, id, PRICE), "the call's charge is settled");
          assert.deepEqual(await channelOf(id), [USDC, PRICE]);
          assert.equal(await usdcOf(seller.walletAddress!), before + PRICE);
          const [{ n }] = await sql`
            select count(*)::int as n from chain_transactions
            where intent_key = ${`x402ch:voucher:${left.id}`}`;
          assert.equal(n, 1, "one transaction for the claim");
          assert.equal((await claimRound(svc.deps)).transactions.length, 0);
        },
      );
    }
  } finally {
    await upstream.shutdown();
    await svc.close();
  }
});
