/**
 * Crash safety of the batch-settlement claim job: a second process of the deployment runs a
 * claim round and SIGKILLs itself before the claim transaction is broadcast, after it (anvil
 * mines at once), or after its receipt was recorded. The surviving process (the chain's
 * transaction recovery, then its own claim round once the dead process's claim lapsed) finishes
 * the batch it left: every charge claimed once, the seller paid once, one transaction per batch.
 * And a channel whose voucher the contract refuses is set aside without holding the others up.
 */
import assert from "node:assert/strict";
import { createPublicClient, getAddress, http } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { wrapFetchWithPayment, x402Client } from "@x402/fetch";
import { toClientEvmSigner } from "@x402/evm";
import { BatchSettlementEvmScheme } from "@x402/evm/batch-settlement/client";
import { startTestService, type TestService } from "../helpers/service.ts";
import { startCrashWorker } from "../helpers/processes.ts";
import { createMerchant } from "../helpers/accounts.ts";
import { listApi, okUpstream, X402_PROFILE } from "../helpers/x402.ts";
import { X402BatchSettlement } from "../../src/chain/contracts/artifacts/index.ts";
import { BATCH_SETTLEMENT_ADDRESS } from "../../src/chain/channels.ts";
import { claimRound } from "../../src/modules/x402/x402.channels.claims.ts";

const USDC = 1_000_000n;
const PRICE = 10_000n;
const NETWORK = "eip155:5042002" as const;
const POINTS = ["record", "broadcast", "receipt"] as const;

/** As after the claims' time to live: a dead owner's claims lapse (the database's clock). */
async function lapseClaims(svc: TestService) {
  await svc.db.sql`
    update resource_claims set expires_at = clock_timestamp() - interval '1 second'`;
}

Deno.test("x402 channel claims: a killed claim round is finished once", async (t) => {
  const svc = await startTestService({
    env: { RATE_LIMITS: "off", X402_CHANNEL_CLAIM_SECONDS: "3600" },
    // Its rounds are the test's to run: no every-minute one beside them.
    crons: false,
  });
  const upstream = okUpstream();
  const chain = svc.deps.chain;
  const rt = chain.runtime(X402_PROFILE);
  const pub = createPublicClient({ transport: http(rt.rpcUrl) });
  const usdc = getAddress(chain.contract(X402_PROFILE, "TestUSDC"));
  const usdcOf = (a: string) => chain.usdcBalance(X402_PROFILE, a.toLowerCase() as `0x${string}`);
  const claimTxs = async () =>
    Number(
      (await svc.db.sql`select count(*)::int as n from chain_transactions
        where intent_key like 'x402ch:claim:%'`)[0].n,
    );
  try {
    const seller = await createMerchant(svc);
    const resource = await listApi(svc, seller, {
      slug: "ticks",
      upstreamUrl: `http://127.0.0.1:${upstream.addr.port}/tick`,
    });
    const buyer = async () => {
      const account = privateKeyToAccount(generatePrivateKey());
      await chain.mintUsdc({ profile: X402_PROFILE, to: account.address, amount: 2n * USDC });
      const client = new x402Client().register(
        NETWORK,
        new BatchSettlementEvmScheme(toClientEvmSigner(account, pub)),
      );
      client.setSpendControls({
        allowedAssets: [{ network: NETWORK, asset: usdc, maxAmountPerPayment: "1000000" }],
      });
      return wrapFetchWithPayment(fetch, client);
    };
    const pay = await buyer();
    const payCalls = async (n: number, f = pay) => {
      for (let i = 0; i < n; i++) {
        const r = await f(resource);
        assert.equal(r.status, 200, await r.clone().text());
        await r.body?.cancel();
      }
    };
    let paid = 0n;

    for (const at of POINTS) {
      await t.step(`killed at ${at}: the survivor finishes the batch, once`, async () => {
        await payCalls(3);
        paid += 3n * PRICE;
        const txsBefore = await claimTxs();
        const started = await startCrashWorker(svc, "channel-claim-worker", { KILL_AT: at });
        try {
          const status = await started.child.status;
          assert.equal(status.signal, "SIGKILL", "the worker died by its own SIGKILL");
        } finally {
          started.child.stdout.cancel().catch(() => {});
        }
        const [left] = await svc.db.sql`
          select id from x402_channel_claims where status = 'pending' and kind = 'claim'`;
        assert.ok(left, "the dead process left its batch recorded");
        await svc.deps.chain.recover(X402_PROFILE, { minAgeMs: 0 });
        await lapseClaims(svc);
        // A round finishes the batch: this one, or the service's own every-minute round, which
        // may take it first at a minute's turn (the batch's record says which charges it settled).
        await claimRound(svc.deps);
        const [done] = await svc.db.sql`
          select status, charges from x402_channel_claims where id = ${left.id}`;
        assert.deepEqual([done.status, done.charges], ["confirmed", 3]);
        assert.equal(await claimTxs(), txsBefore + 1, "one transaction for the batch");
        assert.equal(await usdcOf(seller.walletAddress!), paid);
        const [{ pending }] = await svc.db.sql`
          select count(*)::int as pending from x402_channel_claims where status = 'pending'`;
        assert.equal(pending, 0);
        // Nothing is owed: a second round sends nothing.
        assert.equal((await claimRound(svc.deps)).transactions.length, 0);
      });
    }

    await t.step(
      "a voucher the contract refuses sets its channel aside, not the batch",
      async () => {
        const other = await buyer();
        await payCalls(2);
        await payCalls(2, other);
        paid += 4n * PRICE;
        // The first buyer's stored voucher is replaced by one its payer never signed.
        const stranger = privateKeyToAccount(generatePrivateKey());
        const [bad] = await svc.db.sql`
        select channel_id, signed_max from x402_channels order by last_request_at limit 1`;
        const forged = await stranger.signMessage({ message: "not a voucher" });
        await svc.db.sql`
        update x402_channels set signature = ${forged} where channel_id = ${bad.channelId}`;
        const round = await claimRound(svc.deps);
        assert.equal(round.transactions.length, 1);
        assert.equal(round.transactions[0].charges, 2);
        const [row] = await svc.db.sql`
        select stuck from x402_channels where channel_id = ${bad.channelId}`;
        assert.match(row.stuck, /InvalidVoucherSignature/);
        assert.equal(await usdcOf(seller.walletAddress!), paid - 2n * PRICE);
        const [, claimed] = await pub.readContract({
          address: BATCH_SETTLEMENT_ADDRESS,
          abi: X402BatchSettlement.abi,
          functionName: "channels",
          args: [bad.channelId],
        });
        assert.equal(claimed, bad.signedMax - 2n * PRICE);
      },
    );
  } finally {
    await upstream.shutdown();
    await svc.close();
  }
});
