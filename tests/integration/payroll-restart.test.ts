/**
 * A payroll batch interrupted by kill -9 is resumed within seconds of a restart and pays every
 * recipient exactly once, with one `payroll.completed`. A second process of the deployment
 * (tests/fixtures/payroll-worker.ts, PAYROLL_WAIT_MS=0) takes the run and is killed:
 *
 * - at the payer's permit, once signed and recorded (before broadcast), and right after its
 *   broadcast;
 * - at the second chunk, once signed and recorded (before broadcast), and right after its
 *   broadcast;
 * - after the first chunk's receipt is recorded, while its outcome's commit waits (held back by a
 *   table lock; blocks are held back until the lock is in place);
 * - at the permit, signed but not broadcast, with the restart after the permit's deadline (the
 *   recorded permit is mined reverted; a fresh one is signed under the next attempt's intent).
 *
 * The deployment's first process runs no job workers, so nothing resumes the batch before the
 * restart: a new process of the deployment with workers, whose start resumes it at once (as soon
 * as the dead process's claim on the batch lapses).
 */
import assert from "node:assert/strict";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { startTestService } from "../helpers/service.ts";
import { startCrashWorker } from "../helpers/processes.ts";
import { createMerchant, type TestMerchant } from "../helpers/accounts.ts";
import { startReceiver } from "../helpers/receiver.ts";
import { waitFor } from "../helpers/poll.ts";
import { rpc } from "../helpers/chain.ts";
import { CHUNK_SIZE } from "../../src/chain/index.ts";
import type { Sql } from "../../src/db/client.ts";

const USDC = 1_000_000n;
const P = "production" as const;

type Kill =
  | {
    name: string;
    intent: "payroll-permit:" | "payroll:";
    nth: number;
    at: "record" | "broadcast";
    /** Chain time moves past the permit's deadline (an hour) before the restart. */
    stale?: true;
  }
  | { name: string; lock: "payroll_recipients" };

const KILLS: Kill[] = [
  { name: "the permit, signed but not broadcast", intent: "payroll-permit:", nth: 1, at: "record" },
  { name: "the permit, just broadcast", intent: "payroll-permit:", nth: 1, at: "broadcast" },
  { name: "the second chunk, signed but not broadcast", intent: "payroll:", nth: 2, at: "record" },
  { name: "the second chunk, just broadcast", intent: "payroll:", nth: 2, at: "broadcast" },
  { name: "the first chunk's receipt recorded, its commit waiting", lock: "payroll_recipients" },
  {
    name: "the permit, signed but not broadcast, restarted after its deadline",
    intent: "payroll-permit:",
    nth: 1,
    at: "record",
    stale: true,
  },
];

/** Backends of this database waiting for a lock on `table` (the killed worker's statement). */
async function waiting(sql: Sql, table: string): Promise<number[]> {
  const rows = await sql<{ pid: number }[]>`
    select l.pid from pg_locks l
    where not l.granted and l.relation = ${table}::regclass
      and l.database = (select oid from pg_database where datname = current_database())`;
  return rows.map((r) => r.pid);
}

Deno.test("payroll: a batch killed at any point resumes within seconds of a restart", async (t) => {
  const svc = await startTestService({ env: { RATE_LIMITS: "off" }, workers: false });
  const receiver = startReceiver();
  const chain = svc.deps.chain;
  const sql = svc.db.sql;
  const rpcUrl = chain.runtime(P).rpcUrl;
  try {
    const mailer = await startTestService({ sameDeploymentAs: svc, serve: false });
    const merchants: TestMerchant[] = [];
    for (const _ of KILLS) merchants.push(await createMerchant(svc));
    await mailer.close();

    for (const [i, kill] of KILLS.entries()) {
      await t.step(`killed at ${kill.name}`, async () => {
        const m = merchants[i];
        const payer = m.walletAddress!.toLowerCase() as `0x${string}`;
        await chain.mintUsdc({ profile: P, to: payer, amount: 1000n * USDC });
        const start = await chain.usdcBalance(P, payer);
        // Two chunks; a single one when the kill waits for the first chunk's receipt.
        const n = "lock" in kill ? 3 : CHUNK_SIZE + 3;
        const recipients = Array.from({ length: n }, (_, k) => ({
          recipientSCA: privateKeyToAccount(generatePrivateKey()).address,
          units: BigInt(k + 1) * 1000n,
        }));
        const total = recipients.reduce((s, r) => s + r.units, 0n);
        const worker = await startCrashWorker(svc, "payroll-worker", {
          PAYROLL_WAIT_MS: "0",
          ...("lock" in kill ? {} : {
            CRASH_INTENT: kill.intent,
            CRASH_AT_CHUNK: String(kill.nth),
            CRASH_AT: kill.at,
          }),
        });
        const request = () =>
          fetch(`${worker.baseUrl}/api/payroll/run`, {
            method: "POST",
            headers: { "content-type": "application/json", "x-api-key": m.apiKey },
            body: JSON.stringify({
              recipients: recipients.map((r) => ({
                recipientSCA: r.recipientSCA,
                amount: (Number(r.units) / 1e6).toFixed(6),
              })),
              webhookUrl: `${receiver.url}/payroll`,
            }),
          }).then((r) => r.body?.cancel(), () => null);
        const batchOf = async () =>
          (await sql<{ id: string; batchRef: string; status: string }[]>`
            select id, batch_ref, status from payroll_batches where merchant_id = ${m.id}`)[0];

        if ("lock" in kill) {
          // Blocks held back: the batch is recorded and its permit waits in the pool.
          await rpc(rpcUrl, "evm_setAutomine", [false]);
          try {
            const answered = request();
            await waitFor(batchOf, { what: "the batch recorded", timeoutMs: 30_000 });
            await sql.begin(async (tx) => {
              await tx.unsafe(`lock table ${kill.lock} in share mode`);
              await rpc(rpcUrl, "evm_setAutomine", [true]);
              await rpc(rpcUrl, "evm_mine", []);
              const b = (await batchOf())!;
              await waitFor(async () =>
                (await tx`
                  select 1 from chain_transactions
                  where intent_key = ${`payroll:${b.batchRef}:0`} and status = 'confirmed'`)
                    .length > 0 && (await waiting(tx as unknown as Sql, kill.lock)).length > 0, {
                what: "the chunk's receipt recorded and its outcome waiting",
                timeoutMs: 30_000,
              });
              worker.child.kill("SIGKILL");
              await worker.child.status;
              for (const pid of await waiting(tx as unknown as Sql, kill.lock)) {
                await tx`select pg_terminate_backend(${pid})`;
              }
            });
            await answered;
          } finally {
            await rpc(rpcUrl, "evm_setAutomine", [true]);
          }
        } else {
          await request();
          const status = await worker.child.status;
          assert.equal(status.signal, "SIGKILL", "the worker died by its own SIGKILL");
        }
        worker.child.stdout.cancel().catch(() => {});

        const batch = (await batchOf())!;
        assert.equal(batch.status, "PROCESSING", "interrupted");
        if ("stale" in kill) {
          await rpc(rpcUrl, "evm_increaseTime", [3601]);
          await rpc(rpcUrl, "evm_mine", []);
        }

        // The restart: its start resumes the batch.
        const restarted = await startTestService({ sameDeploymentAs: svc });
        try {
          const done = await waitFor(async () => {
            const b = await batchOf();
            return b?.status === "PROCESSING" ? null : b;
          }, { what: "the resumed batch", timeoutMs: 45_000, intervalMs: 100 });
          assert.equal(done.status, "COMPLETED");

          const balances = await Promise.all(
            recipients.map((r) => chain.usdcBalance(P, r.recipientSCA as `0x${string}`)),
          );
          balances.forEach((b, k) => assert.equal(b, recipients[k].units, `recipient ${k}`));
          assert.equal(await chain.usdcBalance(P, payer), start - total, "paid once");
          const chunks = await sql`
            select status from chain_transactions
            where intent_key like ${`payroll:${batch.batchRef}:%`}`;
          assert.deepEqual(
            chunks.map((c) => c.status),
            Array(Math.ceil(n / CHUNK_SIZE)).fill("confirmed"),
            "one transaction per chunk",
          );
          const [counts] = await sql`
            select count(*) filter (where status = 'SUCCESS')::int as paid,
              count(*)::int as all from payroll_recipients where batch_id = ${batch.id}`;
          assert.deepEqual([counts.paid, counts.all], [n, n]);
          const events = await sql`
            select count(*)::int as n from webhook_deliveries
            where reference = ${batch.batchRef} and event = 'payroll.completed'`;
          assert.equal(events[0].n, 1, "one payroll.completed");
          const reverted = await sql<{ intentKey: string }[]>`
            select intent_key from chain_transactions where status = 'reverted'
              and (intent_key like ${`%${payer}%`} or intent_key like ${`%${batch.batchRef}%`})`;
          assert.deepEqual(
            reverted.map((x) => x.intentKey.split(":")[0]),
            "stale" in kill ? ["payroll-permit"] : [],
            "only a permit signed before its deadline passed reverts",
          );
        } finally {
          await restarted.close();
        }
      });
    }
  } finally {
    await receiver.close();
    await svc.close();
  }
});
