/**
 * x402 work of a process killed during its upstream call (kill -9): a `POST /api/x402/pay`
 * attempt and a batched reservation, each carrying its process's liveness claim
 * (src/db/liveness.ts). While the claim lives, the work is the process's own and holds the proof's
 * nonce; once it lapsed (seconds after the kill, not the minutes any call could take), the work
 * follows the chain at once: a retry of the same proof pays, charged once, and a reservation is
 * released by the next settlement round. A process that was itself out of touch long enough to
 * be taken for dead settles nothing on the work it held.
 *
 * The reservation is written as the paid path writes it: a second process on a shared local
 * node, as the test's worker is, offers no batched option (its vault has no withdrawal delay:
 * x402.batched.ts `batchedSafe`).
 */
import assert from "node:assert/strict";
import { generatePrivateKey } from "viem/accounts";
import { startTestService, type TestService } from "../helpers/service.ts";
import { startCrashWorker } from "../helpers/processes.ts";
import { api, createMerchant } from "../helpers/accounts.ts";
import { externalBuyer, gatewayProof, listApi, X402_PROFILE } from "../helpers/x402.ts";
import { testCharge } from "../helpers/x402-charges.ts";
import {
  markWithdrawing,
  release as releaseCharge,
  reserve,
} from "../../src/modules/x402/x402.batched.repo.ts";
import { whileWithdrawing } from "../../src/modules/x402/x402.batched.mirror.ts";
import { settleRound } from "../../src/modules/x402/x402.batched.settle.ts";
import { reconcilePending } from "../../src/modules/x402/x402.reconcile.ts";
import { settleAttempt } from "../../src/modules/x402/x402.service.ts";
import { claimGatewayAttempt } from "../../src/modules/x402/x402.repo.ts";
import { answerFor } from "../../src/http/error-map.ts";
import { defaultAgentPort } from "../../src/modules/x402/x402.types.ts";
import { startLiveness } from "../../src/db/liveness.ts";
import { silentLogger } from "../../src/log.ts";

const USDC = 1_000_000n;
const PRICE = 10_000n;

/** The claim of the process that owns `owner`'s work lapses, as PROCESS_TTL_MS after a kill. */
async function lapse(svc: TestService, owner: string) {
  await svc.db.sql`update resource_claims set expires_at = clock_timestamp() - interval '1 second'
    where resource = ${"process:" + owner}`;
}

Deno.test("x402: work of a killed process is freed once its liveness claim lapses", async (t) => {
  const svc = await startTestService({
    env: { RATE_LIMITS: "off", X402_BATCH_SECONDS: "3600" },
    // The sweeps and rounds are the test's to run.
    crons: false,
  });
  // The upstream: answers at once, or (`hold`) tells the test the call arrived and answers only
  // when released (the process calling it is killed meanwhile).
  const state = { hold: false, arrived: Promise.withResolvers<void>() };
  const release = Promise.withResolvers<void>();
  const upstream = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    async () => {
      if (state.hold) {
        state.arrived.resolve();
        await release.promise;
      }
      return Response.json({ ok: true });
    },
  );
  const sql = svc.db.sql;
  const chain = svc.deps.chain;
  const call = api(svc);
  const vaultOf = async (a: string) =>
    (await chain.gateway.balance(X402_PROFILE, a.toLowerCase() as `0x${string}`)).available;
  /** A call sent to a second process of the deployment, which is killed once it reached the upstream. */
  const killedDuring = async (send: (baseUrl: string) => Promise<Response>) => {
    const worker = await startCrashWorker(svc, "money-worker", { KILL_INTENT: "^$" });
    state.hold = true;
    state.arrived = Promise.withResolvers<void>();
    const sent = send(worker.baseUrl).then(
      async (r) => `answered ${r.status}: ${await r.text()}`,
      () => "cut off",
    );
    try {
      const first = await Promise.race([state.arrived.promise.then(() => "arrived"), sent]);
      assert.equal(first, "arrived", "the call reached the upstream");
      worker.child.kill("SIGKILL");
      assert.equal((await worker.child.status).signal, "SIGKILL");
      assert.equal(await sent, "cut off", "the caller got no answer");
    } finally {
      state.hold = false;
      worker.child.stdout.cancel().catch(() => {});
    }
  };
  try {
    const seller = await createMerchant(svc);
    const sellerAddr = seller.walletAddress!.toLowerCase();
    await listApi(svc, seller, {
      slug: "slow",
      upstreamUrl: `http://127.0.0.1:${upstream.addr.port}/slow`,
    });
    const buyer = await externalBuyer(svc, generatePrivateKey(), 10n * USDC);
    await buyer.deposit(100n * PRICE);
    const mine = svc.deps.liveness!.id;
    let charged = 0n;

    await t.step("POST /api/x402/pay: a retry of the killed call's proof pays, once", async () => {
      const { proof, nonce } = await gatewayProof(svc, buyer.account, {
        to: sellerAddr,
        value: PRICE,
      });
      const body = JSON.stringify({ slug: "slow", method: "GET", paymentProof: proof });
      await killedDuring((base) =>
        fetch(`${base}/api/x402/pay`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body,
        })
      );
      const [held] = await sql`select status, owner from x402_payments where nonce = ${nonce}`;
      assert.equal(held.status, "PENDING");
      assert.ok(held.owner && held.owner !== mine, "the dead process owns it");
      const pay = () =>
        call("POST", "/api/x402/pay", {
          body: { slug: "slow", method: "GET", paymentProof: proof },
        });
      // Its process's claim still lives (as for PROCESS_TTL_MS after a kill): the call may still
      // be in flight there.
      const early = await pay();
      assert.equal(early.status, 403, early.text);
      await lapse(svc, held.owner);
      const retried = await pay();
      assert.equal(retried.status, 200, retried.text);
      charged += PRICE;
      const rows = await sql`select status, error, owner from x402_payments
        where nonce = ${nonce} order by seq`;
      assert.deepEqual(rows.map((r) => [r.status, r.owner === mine]), [
        ["FAILED", false],
        ["SUCCESS", true],
      ]);
      assert.equal(rows[0].error, "abandoned before settlement: nothing charged");
      assert.equal(await vaultOf(buyer.address), 100n * PRICE - charged);
      assert.equal(await vaultOf(sellerAddr), charged);
    });

    await t.step("a gone process's batched reservation is released by the next round", async () => {
      // As the paid path writes them (repo.reserve): one of a process that is gone (its claim
      // lapsed or never taken), one of this live process, both in their upstream call.
      const reserved = (owner: string) =>
        testCharge(buyer.address.toLowerCase(), svc.clock.now(), {
          chainId: chain.chainId(X402_PROFILE),
          payee: sellerAddr,
          amount: PRICE,
          owner,
        });
      const gone = reserved(crypto.randomUUID());
      const live = reserved(mine);
      for (const c of [gone, live]) assert.equal(await reserve(sql, c, new Date(0)), "reserved");
      const heldNow = async () =>
        BigInt(
          (await sql`select held from x402_gateway_accounts
          where payer = ${buyer.address.toLowerCase()}`)[0].held,
        );
      assert.equal(await heldNow(), 2n * PRICE);
      assert.equal((await settleRound(svc.deps)).length, 0, "nothing served: nothing to settle");
      const status = async (id: string) =>
        (await sql`select status, error from x402_gateway_charges where id = ${id}`)[0];
      assert.deepEqual({ ...await status(gone.id) }, {
        status: "released",
        error: "abandoned during the upstream call: nothing charged",
      });
      assert.equal((await status(live.id)).status, "reserved", "its call may be in flight");
      assert.equal(await heldNow(), PRICE);
      await releaseCharge(sql, live.id, {
        error: "test",
        upstreamStatus: null,
        now: svc.clock.now(),
      });
      assert.equal(await heldNow(), 0n);
      assert.equal(await vaultOf(buyer.address), 100n * PRICE - charged, "nothing charged");
    });

    await t.step("the sweep takes a gone process's attempt at once, a live one's not", async () => {
      const now = svc.clock.now();
      const insert = async (owner: string) => {
        const { nonce } = await gatewayProof(svc, buyer.account, { to: sellerAddr, value: PRICE });
        await sql`insert into x402_payments (scheme, chain_id, payer, payee, amount, nonce,
            valid_after, valid_before, status, created_at, owner)
          values ('gateway', ${chain.chainId(X402_PROFILE)}, ${buyer.address.toLowerCase()},
            ${sellerAddr}, ${PRICE}, ${nonce}, 0, 1, 'PENDING', ${now}, ${owner})`;
        return nonce;
      };
      const gone = await insert(crypto.randomUUID());
      const live = await insert(mine);
      const swept = await reconcilePending({ ...svc.deps, agents: defaultAgentPort });
      assert.deepEqual(swept, { settled: 0, failed: 1, waiting: 0 });
      const status = async (nonce: string) =>
        (await sql`select status from x402_payments where nonce = ${nonce}`)[0].status;
      assert.equal(await status(gone), "FAILED");
      assert.equal(await status(live), "PENDING", "this process's own call may be in flight");
      await sql`delete from x402_payments where nonce = ${live}`;
    });

    await t.step("a process taken for dead during the call settles nothing: 503", async () => {
      // Its attempt, claimed as the paid path claims it; then the liveness fence says the process
      // may have been taken for dead since (its beats stopped: a pause, the database away).
      const { nonce } = await gatewayProof(svc, buyer.account, { to: sellerAddr, value: PRICE });
      const seconds = BigInt(Math.floor(svc.clock.now().getTime() / 1000));
      const attempt = await claimGatewayAttempt(sql, {
        listingId: null,
        listingSlug: "slow",
        merchantId: null,
        scheme: "gateway",
        chainId: chain.chainId(X402_PROFILE),
        payer: buyer.address.toLowerCase(),
        payee: sellerAddr,
        amount: PRICE,
        nonce,
        validAfter: seconds - 5n,
        validBefore: seconds + 300n,
        agentId: null,
        owner: mine,
        now: svc.clock.now(),
      }, new Date(0));
      assert.ok(typeof attempt === "object", String(attempt));
      const fenced = {
        ...svc.deps,
        agents: defaultAgentPort,
        liveness: { ...svc.deps.liveness!, heldSince: () => false },
      };
      let settled = false;
      const refused = await settleAttempt(fenced, attempt.id, 200, () => {
        settled = true;
        return Promise.resolve("0x");
      }, { claimedAt: performance.now() }).then(() => null, (e) => e);
      assert.equal(refused?.code, "x402_attempt_lapsed");
      assert.equal(settled, false, "nothing was settled");
      const answer = answerFor(refused);
      assert.equal(answer.status, 503);
      assert.equal(answer.message, "The service is temporarily unavailable. Retry shortly.");
      const [row] = await sql`select status, owner from x402_payments where id = ${attempt.id}`;
      assert.deepEqual({ ...row }, { status: "FAILED", owner: mine });
      const [{ held }] = await sql`select held from x402_gateway_accounts
        where payer = ${buyer.address.toLowerCase()}`;
      assert.equal(BigInt(held), 0n, "its hold given back");
      assert.equal(await vaultOf(buyer.address), 100n * PRICE - charged, "nothing charged");
    });

    await t.step(
      "a killed process's withdrawal hold is cleared once nothing can be mined",
      async () => {
        // A withdrawal of the payer's runs in a second process (its own liveness claim) and holds
        // the payer's paid calls, as whileWithdrawing marks them; that process is killed before
        // sending anything (its claim lapses, its intent was never written).
        let otherNow = 0;
        const other = await startLiveness(sql, silentLogger, {
          now: () => otherNow,
          timer: false,
        });
        const intent = `x402-payer-withdraw:test:${crypto.randomUUID()}`;
        const inside = Promise.withResolvers<void>();
        const killed = Promise.withResolvers<void>();
        const withdrawal = whileWithdrawing(
          { ...svc.deps, liveness: other },
          X402_PROFILE,
          buyer.address.toLowerCase() as `0x${string}`,
          intent,
          async (fence) => {
            inside.resolve();
            await killed.promise;
            fence();
            return "sent";
          },
        ).then((r) => r, (e) => e);
        await inside.promise;
        const pay = async () => {
          const { proof } = await gatewayProof(svc, buyer.account, {
            to: sellerAddr,
            value: PRICE,
          });
          return await call("POST", "/api/x402/pay", {
            body: { slug: "slow", method: "GET", paymentProof: proof },
          });
        };
        const whileAlive = await pay();
        assert.equal(whileAlive.status, 400, "held while the withdrawing process lives");
        assert.match(String(whileAlive.json.error), /insufficient gateway balance/i);
        await lapse(svc, other.id);
        const afterKill = await pay();
        assert.equal(afterKill.status, 200, afterKill.text);
        charged += PRICE;
        const [acct] =
          await sql`select withdrawing_until, withdrawing_owner from x402_gateway_accounts
        where payer = ${buyer.address.toLowerCase()}`;
        assert.deepEqual({ ...acct }, { withdrawingUntil: null, withdrawingOwner: null });
        // Had the process only been paused (no beat for as long as its claim took to lapse), it
        // sends nothing once it resumes: its hold is gone.
        otherNow = 20_000;
        killed.resolve();
        const late = await withdrawal;
        assert.equal(late?.code, "x402_withdrawal_lapsed");
        assert.equal(answerFor(late).status, 503);
        await other.stop({ release: false });

        // A withdrawal sent before the kill (a deposit's intent stands in for it): the hold stays
        // while its transaction may still be mined, and goes once it is in a block, whether its
        // record says so yet (confirmed) or not (broadcast: the killed process did not see it
        // mined, chain recovery has not looked yet).
        const [sent] = await sql`select id, intent_key, tx_hash from chain_transactions
          where status = 'confirmed' order by created_at desc limit 1`;
        const held = async (status: string, txHash: string) => {
          await sql`update chain_transactions set status = ${status}, tx_hash = ${txHash}
            where id = ${sent.id}`;
          await markWithdrawing(
            sql,
            chain.chainId(X402_PROFILE),
            buyer.address.toLowerCase(),
            new Date(svc.clock.now().getTime() + 180_000),
            { owner: crypto.randomUUID(), intent: sent.intentKey },
          );
        };
        try {
          // Broadcast, and no block has it: refused while it may be mined.
          await held("broadcast", "0x" + "ee".repeat(32));
          const flying = await pay();
          assert.equal(flying.status, 400, flying.text);
          for (const status of ["broadcast", "confirmed"]) {
            await held(status, sent.txHash);
            const paid = await pay();
            assert.equal(paid.status, 200, `${status}: ${paid.text}`);
            charged += PRICE;
          }
        } finally {
          await sql`update chain_transactions set status = 'confirmed', tx_hash = ${sent.txHash}
            where id = ${sent.id}`;
          await markWithdrawing(
            sql,
            chain.chainId(X402_PROFILE),
            buyer.address.toLowerCase(),
            null,
          );
        }
        assert.equal(await vaultOf(buyer.address), 100n * PRICE - charged);
      },
    );

    await t.step("liveness: a gap in the beats fences the work taken before it", async () => {
      let now = 0;
      const l = await startLiveness(sql, silentLogger, { now: () => now, timer: false });
      try {
        now = 1;
        assert.equal(l.heldSince(1), true);
        now = 16_000;
        assert.equal(l.heldSince(1), false, "not extended for too long");
        await l.beat();
        assert.equal(l.heldSince(1), false, "work taken before the gap stays fenced");
        assert.equal(l.heldSince(16_001), true, "work taken after it is the process's");
        now = 20_000;
        await l.beat();
        assert.equal(l.heldSince(16_001), true);
      } finally {
        await l.stop();
      }
      const [claim] = await sql`select 1 from resource_claims where resource = ${
        "process:" + l.id
      }`;
      assert.equal(claim, undefined, "given back when stopped");
    });
  } finally {
    release.resolve();
    await upstream.shutdown();
    await svc.close();
  }
});
