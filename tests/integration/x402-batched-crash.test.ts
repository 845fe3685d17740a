/**
 * Crash safety of batched settlement on the gateway balance: a second process of the deployment
 * runs a settlement round and SIGKILLs itself when the batch's transaction is recorded (signed,
 * not broadcast), broadcast (anvil mines it at once) or its receipt recorded (the batch's own
 * bookkeeping not done). The surviving process (the chain's transaction recovery, then its own
 * round once the dead process's claim lapsed) finishes the batch it left: each charge settled
 * exactly once, the seller paid once, one transaction per batch. And a reservation whose process
 * died during the upstream call is released, charging nothing.
 */
import assert from "node:assert/strict";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { startTestService, type TestService } from "../helpers/service.ts";
import { startCrashWorker } from "../helpers/processes.ts";
import { createMerchant } from "../helpers/accounts.ts";
import { externalBuyer, listApi, okUpstream, X402_PROFILE } from "../helpers/x402.ts";
import { batchedPayment } from "../helpers/x402-batched.ts";
import { settleRound } from "../../src/modules/x402/x402.batched.settle.ts";
import { STALE_RESERVATION_MS } from "../../src/modules/x402/x402.batched.rules.ts";
import { QUEUE_SCHEMA } from "../../src/queue/queue.ts";

const USDC = 1_000_000n;
const PRICE = 10_000n;
const POINTS = ["record", "broadcast", "receipt"] as const;

/** As after the claims' time to live: a dead owner's claims lapse (the database's clock). */
async function lapseClaims(svc: TestService) {
  await svc.db.sql`
    update resource_claims set expires_at = clock_timestamp() - interval '1 second'`;
}

Deno.test("x402 batched settlement: a killed round is finished exactly once", async (t) => {
  const svc = await startTestService({
    env: { RATE_LIMITS: "off", X402_BATCH_SECONDS: "3600" },
    // Its rounds are the test's to run: no every-minute one beside them.
    crons: false,
  });
  const upstream = okUpstream();
  const chain = svc.deps.chain;
  const sql = svc.db.sql;
  const vaultOf = async (a: string) =>
    (await chain.gateway.balance(X402_PROFILE, a.toLowerCase() as `0x${string}`)).available;
  const batchTxs = async () =>
    Number(
      (await sql`select count(*)::int as n from chain_transactions
        where intent_key like 'x402gw:batch:%'`)[0].n,
    );
  try {
    const seller = await createMerchant(svc);
    const resource = await listApi(svc, seller, {
      slug: "ticks",
      upstreamUrl: `http://127.0.0.1:${upstream.addr.port}/tick`,
    });
    const sellerAddr = seller.walletAddress!.toLowerCase();
    const key = generatePrivateKey();
    const buyer = await externalBuyer(svc, key, 1n * USDC);
    await buyer.deposit(100n * PRICE);
    const account = privateKeyToAccount(key);
    const payCalls = async (n: number) => {
      for (let i = 0; i < n; i++) {
        const header = await batchedPayment(svc, account, resource, {
          to: sellerAddr,
          value: PRICE,
        });
        const r = await fetch(resource, { headers: { "payment-signature": header } });
        assert.equal(r.status, 200, await r.text());
      }
    };
    let paid = 0n;

    for (const at of POINTS) {
      await t.step(`killed at ${at}: the survivor finishes the batch, once`, async () => {
        await payCalls(3);
        paid += 3n * PRICE;
        const txsBefore = await batchTxs();
        const started = await startCrashWorker(svc, "gateway-settle-worker", { KILL_AT: at });
        try {
          const status = await started.child.status;
          assert.equal(status.signal, "SIGKILL", "the worker died by its own SIGKILL");
        } finally {
          started.child.stdout.cancel().catch(() => {});
        }
        const [left] = await sql`
          select id from x402_gateway_batches where status = 'pending'`;
        assert.ok(left, "the dead process left its batch recorded");
        // Its round's claim lapses at most 15 s after the kill (ROUND_CLAIM_TTL_MS), not a minute
        // on: settlement pauses that long. What is left of it now, whenever it was last extended.
        const [claim] = await sql`
          select extract(epoch from expires_at - clock_timestamp())::float8 as s
          from resource_claims where resource like 'x402-gateway-settle:%'`;
        assert.ok(claim && claim.s <= 15, `the round's claim lives ${claim?.s} s more`);
        // And the job that ran it is retried once its heartbeat stops, not left to the
        // per-minute cron (the chain of rounds each queueing the next would be broken).
        const [queue] = await sql`select retry_limit, retry_delay from ${
          sql(QUEUE_SCHEMA)
        }.queue where name = 'x402.gateway-settle'`;
        assert.deepEqual({ ...queue }, { retryLimit: 1, retryDelay: 0 });
        await svc.deps.chain.recover(X402_PROFILE, { minAgeMs: 0 });
        await lapseClaims(svc);
        const round = await settleRound(svc.deps);
        assert.deepEqual(round.map((b) => b.id), [left.id]);
        assert.equal(round[0].settled, 3);
        assert.equal(await batchTxs(), txsBefore + 1, "one transaction for the batch");
        assert.equal(await vaultOf(sellerAddr), paid, "the seller paid once");
        assert.equal(await vaultOf(buyer.address), 100n * PRICE - paid);
        const [c] = await sql`
          select count(*) filter (where status = 'settled')::int as settled,
                 count(*) filter (where status <> 'settled')::int as other,
                 count(distinct tx_hash) filter (where batch_id = ${left.id})::int as txs
          from x402_gateway_charges`;
        assert.equal(c.settled, Number(paid / PRICE));
        assert.equal(c.other, 0);
        assert.equal(c.txs, 1);
        const [{ held }] = await sql`select held from x402_gateway_accounts`;
        assert.equal(BigInt(held), 0n, "nothing held once all is settled");
        assert.equal((await settleRound(svc.deps)).length, 0, "nothing owed: nothing sent");
      });
    }

    await t.step("a reservation left by a dead process is released: nothing charged", async () => {
      const now = svc.clock.now();
      const id = crypto.randomUUID();
      // As a reservation writes it: the charge, and its place in the queue of unbatched ones.
      await sql`
        insert into x402_gateway_charges (id, chain_id, payer, payee, amount, nonce, valid_after,
          valid_before, domain, signature, status, created_at)
        values (${id}, ${chain.chainId(X402_PROFILE)},
          ${buyer.address.toLowerCase()}, ${sellerAddr}, ${PRICE}, ${"0x" + "ab".repeat(32)}, 0,
          ${BigInt(Math.floor(now.getTime() / 1000) + 86400)}, 'batched', '0x00', 'reserved',
          ${new Date(now.getTime() - STALE_RESERVATION_MS - 1000)})`;
      await sql`insert into x402_gateway_unbatched (chain_id, charge_id)
        values (${chain.chainId(X402_PROFILE)}, ${id})`;
      await sql`update x402_gateway_accounts set held = held + ${PRICE}`;
      assert.equal((await settleRound(svc.deps)).length, 0);
      const [r] = await sql`select status from x402_gateway_charges where status <> 'settled'`;
      assert.equal(r.status, "released");
      const [{ held }] = await sql`select held from x402_gateway_accounts`;
      assert.equal(BigInt(held), 0n);
      assert.equal(await vaultOf(sellerAddr), paid);
    });
  } finally {
    await upstream.shutdown();
    await svc.close();
  }
});
