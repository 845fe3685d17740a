/**
 * Escrow creation locks the depositor's USDC in EscrowVault, so a process killed (kill -9) at any
 * point of `POST /api/escrow/create` must end, after a restart, in a complete escrow (its row,
 * `escrow.created` exactly once, the funds held once) or in nothing locked. A second process of
 * the deployment (tests/fixtures/escrow-worker.ts) serves the request and is killed:
 *
 * - before anything is signed (its intent recorded; the sender's write held back by a table
 *   lock): abandoned, nothing locked;
 * - once the create is signed and recorded, before it is broadcast: completed (the recovery
 *   broadcasts the recorded bytes);
 * - right after the broadcast (mined on anvil, receipt never recorded): completed;
 * - after the receipt is recorded, while its commit waits (held back by a table lock): completed.
 *
 * The restart is a new process of the deployment with workers: its start settles the intent (as
 * soon as the dead process's claim on the depositor lapses).
 */
import assert from "node:assert/strict";
import { startTestService, type TestService } from "../helpers/service.ts";
import { startCrashWorker } from "../helpers/processes.ts";
import { waitFor } from "../helpers/poll.ts";
import { api, createMerchant, type TestMerchant } from "../helpers/accounts.ts";
import { startReceiver } from "../helpers/receiver.ts";
import { recoverCreates } from "../../src/modules/escrow/escrow.create.ts";
import type { Sql } from "../../src/db/client.ts";

const USDC = 1_000_000n;
const P = "production" as const;

type Kill =
  | { at: "before-sign"; lock: "chain_transactions" }
  | { at: "record" | "broadcast" }
  | { at: "after-receipt"; lock: "escrows" };

/** Backends of this database waiting for a lock on `table` (the killed worker's statement). */
async function waiting(sql: Sql, table: string): Promise<number[]> {
  const rows = await sql<{ pid: number }[]>`
    select l.pid from pg_locks l
    where not l.granted and l.relation = ${table}::regclass
      and l.database = (select oid from pg_database where datname = current_database())`;
  return rows.map((r) => r.pid);
}

Deno.test("escrow create: killed at any point, a restart ends complete or with nothing locked", async (t) => {
  const svc = await startTestService({ env: { RATE_LIMITS: "off" } });
  const receiver = startReceiver();
  const call = api(svc);
  const chain = svc.deps.chain;
  const sql = svc.db.sql;
  try {
    const m = await createMerchant(svc);
    const beneficiary = await newWallet(svc, m);

    const scenario = async (kill: Kill) => {
      const depositor = await newWallet(svc, m);
      await chain.mintUsdc({ profile: P, to: depositor.address, amount: 10n * USDC });
      const start = await chain.usdcBalance(P, depositor.address);
      // Killed by its own hook (record, broadcast), or by the test while a lock holds it back.
      const worker = await startCrashWorker(
        svc,
        "escrow-worker",
        "lock" in kill ? {} : { KILL_AFTER_INTENT: "escrow:create:", KILL_AT: kill.at },
      );
      const idempotencyKey = `crash-${crypto.randomUUID()}`;
      const body = JSON.stringify({
        depositorWalletId: depositor.id,
        beneficiarySCA: beneficiary.address,
        amount: "4",
        expiresInSeconds: 3600,
        webhookUrl: `${receiver.url}/hooks`,
      });
      const send = (baseUrl: string) =>
        fetch(`${baseUrl}/api/escrow/create`, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            authorization: `Bearer ${m.apiKey}`,
            "idempotency-key": idempotencyKey,
          },
          body,
        });
      const request = () => send(worker.baseUrl).then((r) => r.status, () => null);
      let answer: number | null;
      if ("lock" in kill) {
        // The worker's next write waits for the lock; it is killed while it waits.
        answer = await sql.begin(async (tx) => {
          await tx.unsafe(`lock table ${kill.lock} in share mode`);
          const sent = request();
          if (kill.at === "after-receipt") {
            // The intent names the transaction; its receipt is recorded, its commit waits.
            await waitFor(async () => {
              const [c] = await tx<{ reference: string }[]>`
                select reference from escrow_creates where depositor_wallet_id = ${depositor.id}`;
              if (!c) return false;
              const sent = await tx`
                select 1 from chain_transactions
                where intent_key = ${`escrow:create:${c.reference}`} and status = 'confirmed'`;
              return sent.length > 0 && (await waiting(tx as unknown as Sql, kill.lock)).length > 0;
            }, { what: "the receipt recorded and the commit waiting", timeoutMs: 30_000 });
          } else {
            await waitFor(async () => (await waiting(tx as unknown as Sql, kill.lock)).length > 0, {
              what: "the worker's write waiting",
              timeoutMs: 30_000,
            });
          }
          worker.child.kill("SIGKILL");
          await worker.child.status;
          // The dead client's backend would finish its statement once the lock is gone (a
          // kill -9 leaves the server to find the broken connection): end it as the server would.
          for (const pid of await waiting(tx as unknown as Sql, kill.lock)) {
            await tx`select pg_terminate_backend(${pid})`;
          }
          return await sent;
        });
      } else {
        answer = await request();
        const status = await worker.child.status;
        assert.equal(status.signal, "SIGKILL", "the worker died by its own SIGKILL");
      }
      worker.child.stdout.cancel().catch(() => {});
      assert.equal(answer, null, "no answer got out");

      const [intent] = await sql<{ reference: string; status: string }[]>`
        select reference, status from escrow_creates where depositor_wallet_id = ${depositor.id}`;
      assert.ok(intent, "the intent was recorded before anything was sent");
      assert.equal(intent.status, "pending");
      const reference = intent.reference;
      assert.equal((await sql`select 1 from escrows where reference = ${reference}`).length, 0);

      // The restart: a new process of the deployment, whose start settles the intent.
      const restarted = await startTestService({ sameDeploymentAs: svc });
      try {
        const settled = await waitFor(async () => {
          const [c] = await sql<{ status: string }[]>`
            select status from escrow_creates where reference = ${reference}`;
          return c.status === "pending" ? null : c.status;
        }, { what: "the intent settled after the restart", timeoutMs: 60_000, intervalMs: 200 });
        const tx = await chain.intent(P, `escrow:create:${reference}`);
        const events = await sql<{ payload: string }[]>`
          select payload from webhook_deliveries
          where reference = ${reference} and event = 'escrow.created'`;
        const onChain = await chain.escrow.read(P, reference);
        if (kill.at === "before-sign") {
          assert.equal(settled, "abandoned");
          assert.equal(tx, null, "nothing was signed");
          assert.equal(onChain.status, "NONE", "nothing locked in the vault");
          assert.equal(await chain.usdcBalance(P, depositor.address), start);
          assert.equal((await sql`select 1 from escrows where reference = ${reference}`).length, 0);
          assert.equal(events.length, 0);
        } else {
          assert.equal(settled, "completed");
          assert.equal(tx?.status, "confirmed");
          assert.equal(onChain.status, "ACTIVE");
          assert.equal(onChain.amount, 4n * USDC);
          assert.equal(await chain.usdcBalance(P, depositor.address), start - 4n * USDC);
          const got = await call("GET", `/api/escrow?reference=${reference}`, {
            headers: { "x-api-key": m.apiKey },
          });
          assert.equal(got.status, 200, got.text);
          const e = got.json.escrow as Record<string, unknown>;
          assert.equal(e.status, "ACTIVE");
          assert.equal(e.txHash, tx.txHash);
          assert.equal(e.amount, "4.000000");
          assert.deepEqual(events.map((x) => JSON.parse(x.payload)), [{
            event: "escrow.created",
            reference,
            amount: 4,
            currency: "USDC",
            txHash: tx.txHash,
          }]);
        }
        // The client retries its request (same Idempotency-Key) once the dead one's key lapses:
        // the escrow the dead request made, or (nothing was locked) one new escrow; never two.
        const retried = await waitFor(async () => {
          const r = await send(restarted.baseUrl);
          const text = await r.text();
          return r.status === 409 ? null : { status: r.status, json: JSON.parse(text) };
        }, { what: "the retry answered", timeoutMs: 60_000, intervalMs: 250 });
        assert.equal(retried.status, 201, JSON.stringify(retried.json));
        if (kill.at !== "before-sign") assert.equal(retried.json.reference, reference);
        assert.equal(await chain.usdcBalance(P, depositor.address), start - 4n * USDC);
        const mine = await sql`
          select reference from escrows where depositor_wallet_id = ${depositor.id}`;
        assert.deepEqual(mine.map((r) => r.reference), [retried.json.reference], "one escrow");
        // Settled for good: another recovery finds nothing to do.
        assert.deepEqual(await recoverCreates(svc.deps), {
          completed: 0,
          abandoned: 0,
          pending: 0,
        });
        const count = await sql`
          select count(*)::int as n from webhook_deliveries
          where reference = ${reference} and event = 'escrow.created'`;
        assert.equal(count[0].n, kill.at === "before-sign" ? 0 : 1);
      } finally {
        await restarted.close();
      }
    };

    await t.step(
      "killed before anything is signed: nothing locked",
      () => scenario({ at: "before-sign", lock: "chain_transactions" }),
    );
    await t.step(
      "killed once signed and recorded, before broadcast: completed",
      () => scenario({ at: "record" }),
    );
    await t.step(
      "killed right after the broadcast: completed",
      () => scenario({ at: "broadcast" }),
    );
    await t.step(
      "killed after the receipt, before the commit: completed",
      () => scenario({ at: "after-receipt", lock: "escrows" }),
    );
  } finally {
    await receiver.close();
    await svc.close();
  }
});

async function newWallet(svc: TestService, m: TestMerchant) {
  const r = await api(svc)("POST", "/api/wallets", {
    headers: { "x-api-key": m.apiKey },
    body: {},
  });
  assert.equal(r.status, 201, r.text);
  return r.json.wallet as { id: string; address: `0x${string}` };
}
