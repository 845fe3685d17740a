/**
 * Catching up with the chain: an action's transaction mined without its row's commit (a process
 * killed in between) is applied by the sweep exactly as the action applies it: the row's status
 * and transaction hash, the event once, a second run changing nothing. The crash is simulated by
 * sending the action's transaction with its real intent key through the chain module (what `act`
 * sends) and leaving the row alone, or by a real action whose commit fails after the receipt.
 * A refused action catches its escrow up too.
 */
import assert from "node:assert/strict";
import { IDEMPOTENCY_LEASE_MS } from "../../src/http/idempotency.ts";
import { startTestService } from "../helpers/service.ts";
import { startCrashWorker } from "../helpers/processes.ts";
import { waitFor } from "../helpers/poll.ts";
import { api, createMerchant } from "../helpers/accounts.ts";
import { startReceiver } from "../helpers/receiver.ts";
import { dispute, getEscrow, onChain, resolve } from "../../src/modules/escrow/escrow.service.ts";
import { catchUpOpen } from "../../src/modules/escrow/escrow.catchup.ts";
import { refundSweepJob } from "../../src/modules/escrow/escrow.jobs.ts";
import type { Deps } from "../../src/deps.ts";

const USDC = 1_000_000n;

Deno.test("escrow catch-up: actions mined without their commit are applied once", async (t) => {
  const svc = await startTestService({ env: { RATE_LIMITS: "off" } });
  const call = api(svc);
  const chain = svc.deps.chain;
  const profile = "production" as const;
  const receiver = startReceiver();
  const hookUrl = `${receiver.url}/h`;
  try {
    const a = await createMerchant(svc);
    const merchant = { merchantId: a.id, profile: "production" as const };
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
    const post = (path: string, body: unknown) =>
      call("POST", path, {
        headers: { authorization: `Bearer ${a.apiKey}`, "idempotency-key": `c${n++}` },
        body,
      });
    const create = async () => {
      const r = await post("/api/escrow/create", {
        depositorWalletId: depositor.id,
        beneficiarySCA: beneficiary.address,
        amount: "3",
        expiresInSeconds: 3600,
        webhookUrl: hookUrl,
      });
      assert.equal(r.status, 201, r.text);
      return r.json.reference as string;
    };
    const row = (reference: string) => getEscrow(svc.deps, merchant, reference);
    const chainStatus = async (reference: string) =>
      (await onChain(svc.deps, await row(reference))).status;
    /** The events recorded for delivery (the outbox), parsed. */
    const events = async (reference: string, event: string) =>
      (await svc.db.sql<{ payload: string }[]>`
        select payload from webhook_deliveries where reference = ${reference} and event = ${event}`)
        .map((r) => JSON.parse(r.payload));
    const intent = async (action: string, reference: string) =>
      (await chain.intent(profile, `escrow:${action}:${reference}`))!;
    /** What `act` sends for a party's action, with its intent key; the row is left alone. */
    const crashAct = (
      action: "release" | "dispute",
      reference: string,
      walletId: string,
      reason?: string,
    ) =>
      chain.escrow.act(profile, {
        action,
        reference,
        walletId,
        reason,
        intentKey: `escrow:${action}:${reference}`,
      });
    const explorer = (hash: string) => chain.explorerTxUrl(profile, hash);

    await t.step("release mined, row ACTIVE: the sweep releases it, one event", async () => {
      const reference = await create();
      const tx = await crashAct("release", reference, depositor.id);
      assert.equal((await row(reference)).status, "ACTIVE");
      assert.equal(await chainStatus(reference), "RELEASED");
      assert.deepEqual(await events(reference, "escrow.released"), []);

      assert.equal(await catchUpOpen(svc.deps), 1);
      const e = await row(reference);
      assert.equal(e.status, "RELEASED");
      assert.equal(e.releaseTxHash, tx.txHash);
      assert.equal(
        e.releasedAt?.getTime(),
        (await intent("release", reference)).confirmedAt!
          .getTime(),
      );
      assert.deepEqual(await events(reference, "escrow.released"), [{
        event: "escrow.released",
        reference,
        amount: 3,
        currency: "USDC",
        releaseTxHash: tx.txHash,
      }]);

      assert.equal(await catchUpOpen(svc.deps), 0, "a second run changes nothing");
      assert.equal((await events(reference, "escrow.released")).length, 1);
      assert.deepEqual(await row(reference), e);
    });

    await t.step("dispute killed before its commit: reason and disputedBy recovered", async () => {
      const reference = await create();
      // The real action, its commit failing after the receipt (the event's enqueue throws):
      // the transaction is mined, the row and the outbox rolled back, as after a SIGKILL.
      const crashing = {
        ...svc.deps,
        queue: new Proxy(svc.deps.queue, {
          get: (target, p) =>
            p === "send" ? () => Promise.reject(new Error("killed before commit")) : Reflect.get(
              target,
              p,
            ),
        }),
      } as Deps;
      await assert.rejects(
        dispute(crashing, { merchantId: a.id, profile: "production" }, {
          reference,
          callerSCA: beneficiary.address.toLowerCase(),
          reason: "parcel never arrived",
        }),
        /killed before commit/,
      );
      assert.equal((await row(reference)).status, "ACTIVE");
      assert.equal(await chainStatus(reference), "DISPUTED");
      assert.deepEqual(await events(reference, "escrow.disputed"), []);

      assert.equal(await catchUpOpen(svc.deps), 1);
      const e = await row(reference);
      const tx = await intent("dispute", reference);
      assert.equal(e.status, "DISPUTED");
      assert.equal(e.disputeReason, "parcel never arrived");
      assert.equal(e.disputedBy, beneficiary.address.toLowerCase());
      assert.equal(e.disputeTxHash, tx.txHash);
      assert.deepEqual(await events(reference, "escrow.disputed"), [{
        event: "escrow.disputed",
        reference,
        amount: 3,
        currency: "USDC",
        disputedBy: beneficiary.address,
        reason: "parcel never arrived",
        txHash: tx.txHash,
        disputedAt: e.disputedAt!.toISOString(),
        explorerUrl: explorer(tx.txHash),
      }]);
      assert.equal(await catchUpOpen(svc.deps), 0);
      assert.equal((await events(reference, "escrow.disputed")).length, 1);
    });

    await t.step(
      "dispute then resolution, both mined: applied in order, outcome recovered",
      async () => {
        const reference = await create();
        // The depositor's dispute with the default reason, then the arbiter's refund.
        await crashAct("dispute", reference, depositor.id, "No reason provided");
        const resolved = await chain.escrow.resolve(profile, {
          reference,
          released: false,
          intentKey: `escrow:resolve:${reference}`,
        });
        assert.equal(await chainStatus(reference), "REFUNDED");
        assert.equal((await row(reference)).status, "ACTIVE");

        assert.equal(await catchUpOpen(svc.deps), 1);
        const e = await row(reference);
        assert.equal(e.status, "REFUNDED");
        assert.equal(e.resolution, "refunded");
        assert.equal(e.resolveTxHash, resolved.txHash);
        assert.equal(e.disputedBy, depositor.address.toLowerCase());
        assert.equal(e.disputeReason, "No reason provided");
        assert.deepEqual(await events(reference, "dispute.resolved"), [{
          event: "dispute.resolved",
          reference,
          outcome: "refunded",
          resolveTxHash: resolved.txHash,
        }]);
        assert.equal((await events(reference, "escrow.disputed")).length, 1);
        assert.deepEqual(
          (await events(reference, "escrow.disputed"))[0].disputedBy,
          depositor.address,
        );
      },
    );

    await t.step("resolve mined on a DISPUTED row: released outcome recovered", async () => {
      const reference = await create();
      const d = await post("/api/escrow/dispute", {
        reference,
        callerSCA: depositor.address,
        reason: "late",
      });
      assert.equal(d.status, 200, d.text);
      const resolved = await chain.escrow.resolve(profile, {
        reference,
        released: true,
        intentKey: `escrow:resolve:${reference}`,
      });
      assert.equal((await row(reference)).status, "DISPUTED");
      // The per-minute sweep's handler: catch-up, then refunds due (none).
      await refundSweepJob.handler({}, { deps: svc.deps } as never);
      const e = await row(reference);
      assert.equal(e.status, "RELEASED");
      assert.equal(e.resolution, "released");
      assert.equal(e.resolveTxHash, resolved.txHash);
      assert.deepEqual(await events(reference, "dispute.resolved"), [{
        event: "dispute.resolved",
        reference,
        outcome: "released",
        resolveTxHash: resolved.txHash,
      }]);
      await refundSweepJob.handler({}, { deps: svc.deps } as never);
      assert.equal((await events(reference, "dispute.resolved")).length, 1);
    });

    await t.step("confirmation mined, then a dispute: the confirmation recorded too", async () => {
      const reference = await create();
      const confirmed = await chain.escrow.act(profile, {
        action: "confirm",
        reference,
        walletId: beneficiary.id,
        intentKey: `escrow:confirm:${reference}`,
      });
      const d = await post("/api/escrow/dispute", {
        reference,
        callerSCA: depositor.address,
        reason: "",
      });
      assert.equal(d.status, 200, d.text);
      assert.equal((await row(reference)).confirmedAt, null);
      assert.equal(await catchUpOpen(svc.deps), 1);
      const e = await row(reference);
      assert.equal(e.status, "DISPUTED");
      assert.equal(e.confirmTxHash, confirmed.txHash);
      assert.ok(e.confirmedAt);
      assert.equal((await events(reference, "escrow.disputed")).length, 1);
      assert.equal(await catchUpOpen(svc.deps), 0);
    });

    await t.step("the other party's action refused for the state: the row caught up", async () => {
      const reference = await create();
      const disputeTx = await crashAct("dispute", reference, beneficiary.id, "No reason provided");
      const sent = await chain.intent(profile, `escrow:release:${reference}`);
      assert.equal(sent, null);
      const r = await post("/api/escrow/release", { reference, callerSCA: depositor.address });
      assert.equal(r.status, 400, r.text);
      assert.equal(r.json.error, "Escrow is DISPUTED — cannot release.");
      const e = await row(reference);
      assert.equal(e.status, "DISPUTED", "the answer and the row agree");
      assert.equal(e.disputeTxHash, disputeTx.txHash);
      assert.equal(e.disputedBy, beneficiary.address.toLowerCase());
      assert.equal((await events(reference, "escrow.disputed")).length, 1);
      assert.equal(await chain.intent(profile, `escrow:release:${reference}`), null);
      assert.equal(await catchUpOpen(svc.deps), 0);
    });

    await t.step(
      "the arbiter's resolve on a row left ACTIVE: caught up, then resolved",
      async () => {
        const reference = await create();
        await crashAct("dispute", reference, depositor.id, "No reason provided");
        const r = await resolve(svc.deps, reference, "refunded");
        assert.equal(r.done, "resolveRefunded");
        const e = await row(reference);
        assert.equal(e.status, "REFUNDED");
        assert.equal(e.disputeTxHash, (await intent("dispute", reference)).txHash);
        assert.equal(e.resolveTxHash, r.txHash);
        assert.equal(await chainStatus(reference), "REFUNDED");
        assert.equal((await events(reference, "escrow.disputed")).length, 1);
        assert.equal((await events(reference, "dispute.resolved")).length, 1);
      },
    );
  } finally {
    await receiver.close();
    await svc.close();
  }
});

Deno.test("escrow catch-up: a process SIGKILLed after its release was mined", async () => {
  const svc = await startTestService({ env: { RATE_LIMITS: "off" } });
  const receiver = startReceiver();
  const call = api(svc);
  const chain = svc.deps.chain;
  const profile = "production" as const;
  let worker: Deno.ChildProcess | undefined;
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
    await chain.mintUsdc({ profile, to: depositor.address as `0x${string}`, amount: 10n * USDC });
    const c = await call("POST", "/api/escrow/create", {
      headers: { authorization: `Bearer ${a.apiKey}`, "idempotency-key": "k1" },
      body: {
        depositorWalletId: depositor.id,
        beneficiarySCA: beneficiary.address,
        amount: "4",
        expiresInSeconds: 3600,
        webhookUrl: `${receiver.url}/h`,
      },
    });
    assert.equal(c.status, 201, c.text);
    const reference = c.json.reference as string;

    const started = await startCrashWorker(svc, "escrow-worker", {
      KILL_AFTER_INTENT: `escrow:release:${reference}`,
    });
    worker = started.child;

    // The release through the second process, which dies once its transaction is out.
    const release = (base: string) =>
      fetch(`${base}/api/escrow/release`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "x-api-key": a.apiKey,
          "idempotency-key": "release-1",
        },
        body: JSON.stringify({ reference, callerSCA: depositor.address }),
      });
    const answer = await release(started.baseUrl).then((r) => r.status, () => null);
    const status = await worker.status;
    worker.stdout.cancel().catch(() => {});
    worker = undefined;
    assert.equal(status.signal, "SIGKILL", "the worker died by its own SIGKILL");
    assert.equal(answer, null, "no answer got out");

    const stale = await getEscrow(svc.deps, { merchantId: a.id, profile: "production" }, reference);
    assert.equal(stale.status, "ACTIVE", "the row was never committed");
    assert.equal((await onChain(svc.deps, stale)).status, "RELEASED");
    const count = async () =>
      (await svc.db.sql`
        select 1 from webhook_deliveries where reference = ${reference} and event = 'escrow.released'`)
        .length;
    assert.equal(await count(), 0);

    // The surviving process's catch-up, before its transaction recovery's grace period is over
    // (not run here): it reads the receipt itself (an outside audit saw the row ACTIVE for 100 s
    // while a refused action said RELEASED).
    assert.equal(await catchUpOpen(svc.deps), 1);
    const e = await getEscrow(svc.deps, { merchantId: a.id, profile: "production" }, reference);
    const tx = (await chain.intent(profile, `escrow:release:${reference}`))!;
    assert.equal(e.status, "RELEASED");
    assert.equal(e.releaseTxHash, tx.txHash);
    const got = await waitFor(
      () =>
        receiver.received.map((r) => JSON.parse(r.body)).find((b) =>
          b.event === "escrow.released" && b.reference === reference
        ),
      { what: "escrow.released" },
    );
    assert.deepEqual(got, {
      event: "escrow.released",
      reference,
      amount: 4,
      currency: "USDC",
      releaseTxHash: tx.txHash,
    });
    assert.equal(await catchUpOpen(svc.deps), 0);
    assert.equal(await count(), 1);

    // The client retries with its key once the dead owner's lease is over: the release it asked
    // for is answered (200, its transaction), not refused as "Escrow is RELEASED" (a 400 that
    // would tell it a paid release failed, and every retry after it the same).
    const { retried, body } = await waitFor(async () => {
      const r = await release(svc.baseUrl);
      const b = await r.json();
      // 409 while the dead owner's lease (real time) runs.
      return r.status === 409 ? undefined : { retried: r, body: b };
    }, { timeoutMs: IDEMPOTENCY_LEASE_MS + 60_000, intervalMs: 500, what: "the key taken over" });
    assert.equal(retried.status, 200, JSON.stringify(body));
    assert.equal(body.txHash, tx.txHash);
    assert.equal(body.escrow.status, "RELEASED");
    const again = await release(svc.baseUrl);
    assert.equal(again.status, 200);
    assert.equal(again.headers.get("idempotent-replayed"), "true");
    assert.equal((await again.json()).txHash, tx.txHash);
    assert.equal(await count(), 1);
    // Another request (another key) for the same release is refused for the state, as before.
    const other = await call("POST", "/api/escrow/release", {
      headers: { "x-api-key": a.apiKey, "idempotency-key": "release-2" },
      body: { reference, callerSCA: depositor.address },
    });
    assert.equal(other.status, 400, other.text);
    // Nothing paid twice: the beneficiary holds the amount once.
    assert.equal(await chain.usdcBalance(profile, beneficiary.address as `0x${string}`), 4n * USDC);
  } finally {
    if (worker) {
      try {
        worker.kill("SIGKILL");
      } catch { /* already gone */ }
      await worker.status;
    }
    await receiver.close();
    await svc.close();
  }
});
