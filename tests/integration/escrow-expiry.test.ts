/**
 * The automatic refund at expiry: a job enqueued with each escrow for its `expiresAt`, and the
 * per-minute sweep. Time moves with the injected clock and anvil's evm_increaseTime; a DISPUTED
 * escrow waits for the arbiter; running the job again sends nothing.
 */
import assert from "node:assert/strict";
import { startTestService } from "../helpers/service.ts";
import { api, createMerchant } from "../helpers/accounts.ts";
import { startReceiver } from "../helpers/receiver.ts";
import { waitFor } from "../helpers/poll.ts";
import { rpc } from "../helpers/chain.ts";
import { getEscrow, onChain } from "../../src/modules/escrow/escrow.service.ts";
import { sweepExpired } from "../../src/modules/escrow/escrow.expiry.ts";
import { refundExpiredJob } from "../../src/modules/escrow/escrow.jobs.ts";

const USDC = 1_000_000n;

Deno.test("escrow expiry: refunded automatically once expired on both clocks", async (t) => {
  const svc = await startTestService({ env: { RATE_LIMITS: "off" } });
  const receiver = startReceiver();
  const call = api(svc);
  const chain = svc.deps.chain;
  const profile = "production" as const;
  const rpcUrl = chain.runtime(profile).rpcUrl;
  const moveChain = async (seconds: number) => {
    await rpc(rpcUrl, "evm_increaseTime", [seconds]);
    await rpc(rpcUrl, "evm_mine", []);
  };
  try {
    const a = await createMerchant(svc);
    const wallet = async () => {
      const r = await call("POST", "/api/wallets", {
        headers: { "x-api-key": a.apiKey },
        body: {},
      });
      return r.json.wallet as { id: string; address: string };
    };
    const depositor = await wallet();
    const beneficiary = await wallet();
    await chain.mintUsdc({ profile, to: depositor.address as `0x${string}`, amount: 100n * USDC });
    let n = 0;
    const create = async (expiresInSeconds: number) => {
      const r = await call("POST", "/api/escrow/create", {
        headers: { authorization: `Bearer ${a.apiKey}`, "idempotency-key": `x${n++}` },
        body: {
          depositorWalletId: depositor.id,
          beneficiarySCA: beneficiary.address,
          amount: "2",
          expiresInSeconds,
          webhookUrl: `${receiver.url}/h`,
        },
      });
      assert.equal(r.status, 201, r.text);
      return r.json.reference as string;
    };
    const state = async (reference: string) => {
      const row = await getEscrow(svc.deps, { merchantId: a.id, profile: "production" }, reference);
      assert.equal((await onChain(svc.deps, row)).status, row.status, "database = contract");
      return row;
    };
    const txCount = async () =>
      Number((await svc.db.sql`select count(*)::int as n from chain_transactions`)[0].n);
    const handle = (reference: string) =>
      refundExpiredJob.handler({ reference }, { deps: svc.deps } as never);

    const expiring = await create(60);
    const disputed = await create(60);
    const later = await create(3600);
    const d = await call("POST", "/api/escrow/dispute", {
      headers: { authorization: `Bearer ${a.apiKey}`, "idempotency-key": "dispute" },
      body: { reference: disputed, callerSCA: beneficiary.address, reason: "missing" },
    });
    assert.equal(d.status, 200, d.text);

    await t.step("each escrow's refund job is enqueued for its expiresAt", async () => {
      const row = await state(expiring);
      const jobs = await svc.db.sql<{ startAfter: Date }[]>`
        select start_after from pgboss.job
        where name = 'escrow.refund-expired' and data->>'reference' = ${expiring}`;
      assert.equal(jobs.length, 1);
      assert.equal(jobs[0].startAfter.getTime(), row.expiresAt.getTime());
    });

    await t.step("before expiry nothing is refunded or sent", async () => {
      const sent = await txCount();
      assert.equal(await sweepExpired(svc.deps), 0);
      // A job run before its time (clock skew) is retried by pg-boss, having sent nothing.
      await assert.rejects(handle(later), /not expired on chain yet/);
      assert.equal((await state(expiring)).status, "ACTIVE");
      assert.equal(await txCount(), sent);
    });

    await t.step("our clock past expiry but not the chain's: early, retried", async () => {
      svc.clock.advance(61_000);
      const sent = await txCount();
      await assert.rejects(handle(expiring), /not expired on chain yet/);
      assert.equal((await state(expiring)).status, "ACTIVE");
      assert.equal(await txCount(), sent, "the revert was caught at estimation");
    });

    await t.step("both clocks past expiry: ACTIVE refunded, DISPUTED waits", async () => {
      await moveChain(61);
      const before = await chain.usdcBalance(profile, depositor.address as `0x${string}`);
      assert.equal(await sweepExpired(svc.deps), 1);
      const row = await state(expiring);
      assert.equal(row.status, "REFUNDED");
      assert.equal(
        await chain.usdcBalance(profile, depositor.address as `0x${string}`),
        before + 2n * USDC,
      );
      assert.equal((await state(disputed)).status, "DISPUTED");
      assert.equal((await state(later)).status, "ACTIVE");
      const got = await waitFor(
        () =>
          receiver.received.map((r) => JSON.parse(r.body)).find((b) =>
            b.event === "refund.completed" && b.reference === expiring
          ),
        { what: "refund.completed" },
      );
      assert.deepEqual(got, {
        event: "refund.completed",
        reference: expiring,
        amount: 2,
        txHash: row.refundTxHash,
      });
    });

    await t.step("the job again, or the sweep again: nothing more is sent", async () => {
      const sent = await txCount();
      await handle(expiring);
      await handle(disputed);
      assert.equal(await sweepExpired(svc.deps), 0);
      assert.equal(await txCount(), sent);
      const events = await svc.db.sql`
        select 1 from webhook_deliveries where reference = ${expiring} and event = 'refund.completed'`;
      assert.equal(events.length, 1);
    });
  } finally {
    await receiver.close();
    await svc.close();
  }
});
