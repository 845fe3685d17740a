/**
 * Idempotency-Key after a crash: a request killed mid-way (kill -9 of its process) leaves its key
 * in progress; a retry with the same key on another process answers 409 only while the dead
 * owner's lease runs, then takes the key over, re-runs the handler (which finds the dead request's
 * work by its intent) and answers the real result: the batch reference, paid once. A key whose
 * owner is alive answers 409 however long it works.
 */
import assert from "node:assert/strict";
import { Hono } from "hono";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { startTestService } from "../helpers/service.ts";
import { startCrashWorker } from "../helpers/processes.ts";
import { api, createMerchant } from "../helpers/accounts.ts";
import { waitFor } from "../helpers/poll.ts";
import { modules } from "../../src/modules/index.ts";
import type { AppModule } from "../../src/modules/index.ts";
import { guard } from "../../src/http/auth.ts";
import { IDEMPOTENCY_LEASE_MS, idempotent } from "../../src/http/idempotency.ts";
import { M } from "../../src/http/messages.ts";

const USDC = 1_000_000n;
const P = "production";

/** A route that works until the test lets it finish. */
function gateModule() {
  let runs = 0;
  const entered = Promise.withResolvers<void>();
  const release = Promise.withResolvers<void>();
  const mod: AppModule = {
    name: "gate",
    api: (deps) => {
      const app = new Hono();
      app.post("/api/test/gate", guard(deps, { accept: [] }), idempotent(deps), async (c) => {
        runs++;
        entered.resolve();
        await release.promise;
        return c.json({ success: true, runs }, 201);
      });
      return app;
    },
  };
  return { mod, entered: entered.promise, release: () => release.resolve(), runs: () => runs };
}

Deno.test("idempotency: a live owner's key answers 409 however long it works", async () => {
  const gate = gateModule();
  const svc = await startTestService({ env: { RATE_LIMITS: "off" }, modules: [gate.mod] });
  const post = async () => {
    const res = await fetch(`${svc.baseUrl}/api/test/gate`, {
      method: "POST",
      headers: { "content-type": "application/json", "idempotency-key": "gate-1" },
      body: "{}",
    });
    return { status: res.status, res, json: await res.json() };
  };
  try {
    const first = post();
    await gate.entered;
    // Well past any age rule and past the lease: the owner is alive and extends it.
    svc.clock.advance(60 * 60_000);
    await waitFor(async () => {
      const [{ expiresAt, claimedAt }] = await svc.db.sql<{ expiresAt: Date; claimedAt: Date }[]>`
        select expires_at, claimed_at from resource_claims where resource like 'idempotency:%'`;
      return expiresAt.getTime() - claimedAt.getTime() > IDEMPOTENCY_LEASE_MS;
    }, { timeoutMs: IDEMPOTENCY_LEASE_MS * 2, intervalMs: 200, what: "the lease to be extended" });
    const during = await post();
    assert.equal(during.status, 409);
    assert.match(during.res.headers.get("content-type") ?? "", /application\/json/);
    assert.equal(during.json.error, M.idempotencyInFlight);
    gate.release();
    const done = await first;
    assert.equal(done.status, 201);
    const again = await post();
    assert.equal(again.status, 201);
    assert.equal(again.res.headers.get("idempotent-replayed"), "true");
    assert.deepEqual(again.json, done.json);
    assert.equal(gate.runs(), 1);
  } finally {
    gate.release();
    await svc.close();
  }
});

Deno.test("idempotency: a request killed mid-way is finished by a retry on another process", async () => {
  const svc = await startTestService({ env: { RATE_LIMITS: "off" }, modules });
  const chain = svc.deps.chain;
  const sql = svc.db.sql;
  let worker: Deno.ChildProcess | undefined;
  try {
    const m = await createMerchant(svc);
    const payer = m.walletAddress!.toLowerCase() as `0x${string}`;
    await chain.mintUsdc({ profile: P, to: payer, amount: 100n * USDC });
    const recipients = [1_500_000n, 2_000_000n, 250_000n].map((amount) => ({
      address: privateKeyToAccount(generatePrivateKey()).address,
      amount,
    }));
    const body = JSON.stringify({
      recipients: recipients.map((r) => ({
        recipientSCA: r.address,
        amount: (Number(r.amount) / 1e6).toFixed(6),
      })),
    });
    const headers = {
      "content-type": "application/json",
      "x-api-key": m.apiKey,
      "idempotency-key": "payroll-after-crash",
    };

    // The request waits for its batch (PAYROLL_WAIT_MS) and its process dies right after
    // broadcasting the batch's only chunk: the client gets no answer and the key stays in progress.
    const started = await startCrashWorker(svc, "payroll-worker", {
      CRASH_AT_CHUNK: "1",
      PAYROLL_WAIT_MS: "60000",
    });
    worker = started.child;
    const lost = await fetch(`${started.baseUrl}/api/payroll/run`, {
      method: "POST",
      headers,
      body,
    }).then(async (r) => await r.text(), () => null);
    assert.equal(lost, null, "the request died with its process");
    const status = await worker.status;
    worker.stdout.cancel().catch(() => {});
    worker = undefined;
    assert.equal(status.signal, "SIGKILL");
    const [key] = await sql<{ status: string }[]>`select status from idempotency_keys`;
    assert.equal(key.status, "in_progress");

    // Retried on the surviving process: 409 while the dead owner's lease runs, then a real answer.
    const retry = async () => {
      const res = await fetch(`${svc.baseUrl}/api/payroll/run`, { method: "POST", headers, body });
      return { status: res.status, res, text: await res.text() };
    };
    const answer = await waitFor(async () => {
      const r = await retry();
      if (r.status === 409) {
        assert.equal(JSON.parse(r.text).error, M.idempotencyInFlight);
        return null;
      }
      return r;
    }, { timeoutMs: IDEMPOTENCY_LEASE_MS + 60_000, intervalMs: 500, what: "a real answer" });
    assert.equal(answer.status, 200, answer.text);
    assert.match(answer.res.headers.get("content-type") ?? "", /application\/json/);
    const json = JSON.parse(answer.text);
    const batches = await sql<{ batchRef: string }[]>`select batch_ref from payroll_batches`;
    assert.equal(batches.length, 1, "the retry found the dead request's batch");
    assert.equal(json.batchRef, batches[0].batchRef);
    assert.equal(json.status, "COMPLETED");
    assert.equal(json.successCount, recipients.length);

    // Done once: each recipient holds exactly its amount; one chunk transaction.
    for (const r of recipients) {
      assert.equal(await chain.usdcBalance(P, r.address), r.amount);
    }
    const sent = await sql`
      select 1 from chain_transactions where intent_key like ${`payroll:${json.batchRef}:%`}`;
    assert.equal(sent.length, 1);

    // The answer is now the key's stored answer.
    const again = await retry();
    assert.equal(again.status, 200);
    assert.equal(again.res.headers.get("idempotent-replayed"), "true");
    assert.equal(again.text, answer.text);
    const [stored] = await sql<{ status: string }[]>`select status from idempotency_keys`;
    assert.equal(stored.status, "done");
    // The documented shape, through the usual client.
    const view = await api(svc)("GET", `/api/payroll/run?batchRef=${json.batchRef}`, {
      headers: { "x-api-key": m.apiKey },
    });
    assert.equal(view.status, 200);
  } finally {
    if (worker) {
      try {
        worker.kill("SIGKILL");
      } catch { /* already gone */ }
      await worker.status;
    }
    await svc.close();
  }
});
