/**
 * Crash safety: a second process of the deployment answers POST /api/payroll/run with PROCESSING
 * (PAYROLL_WAIT_MS=0), keeps paying in the background and is SIGKILLed right after broadcasting
 * its second chunk. The stalled-batch sweep of the surviving process resumes the batch through
 * pg-boss, re-using the recorded chunk transactions by intent key: every recipient is paid
 * exactly once (balances and Payout events on chain), none is skipped, one webhook.
 */
import assert from "node:assert/strict";
import { getAddress, keccak256, parseAbiItem, toHex } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { startTestService } from "../helpers/service.ts";
import { startCrashWorker } from "../helpers/processes.ts";
import { api, createMerchant } from "../helpers/accounts.ts";
import { startReceiver } from "../helpers/receiver.ts";
import { waitFor } from "../helpers/poll.ts";
import { enqueueStalled } from "../../src/modules/payroll/payroll.service.ts";
import { CHUNK_SIZE } from "../../src/chain/index.ts";

const USDC = 1_000_000n;
const P = "production";
const N = CHUNK_SIZE * 2 + 50; // three chunks

Deno.test("payroll: a worker killed mid-batch; the batch resumes and pays everyone once", async () => {
  const svc = await startTestService({ env: { RATE_LIMITS: "off" } });
  const receiver = startReceiver();
  const chain = svc.deps.chain;
  const sql = svc.db.sql;
  let worker: Deno.ChildProcess | undefined;
  try {
    const m = await createMerchant(svc);
    const payer = m.walletAddress!.toLowerCase() as `0x${string}`;
    await chain.mintUsdc({ profile: P, to: payer, amount: 1000n * USDC });
    const start = await chain.usdcBalance(P, payer);
    const recipients = Array.from({ length: N }, (_, i) => ({
      recipientSCA: privateKeyToAccount(generatePrivateKey()).address,
      amount: (BigInt(i + 1) * 1000n).toString(), // base units; sent below as USDC
    }));
    const total = recipients.reduce((s, r) => s + BigInt(r.amount), 0n);

    const started = await startCrashWorker(svc, "payroll-worker", {
      CRASH_AT_CHUNK: "2",
      PAYROLL_WAIT_MS: "0",
    });
    worker = started.child;

    const body = {
      recipients: recipients.map((r) => ({
        recipientSCA: r.recipientSCA,
        amount: (Number(r.amount) / 1e6).toFixed(6),
      })),
      webhookUrl: `${receiver.url}/payroll`,
    };
    // The answer may or may not get out before the kill; the batch is in the database either way.
    const answer = await fetch(`${started.baseUrl}/api/payroll/run`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": m.apiKey },
      body: JSON.stringify(body),
    }).then(async (r) => ({ status: r.status, json: await r.json() }), () => null);
    const status = await worker.status;
    worker.stdout.cancel().catch(() => {});
    worker = undefined;
    assert.equal(status.signal, "SIGKILL", "the worker died by its own SIGKILL");
    if (answer) {
      assert.equal(answer.status, 200);
      assert.equal(answer.json.status, "PROCESSING");
    }

    const [batch] = await sql<{ id: string; batchRef: string; status: string }[]>`
      select id, batch_ref, status from payroll_batches`;
    assert.equal(batch.status, "PROCESSING");
    const sent = await sql<{ intentKey: string }[]>`
      select intent_key from chain_transactions where intent_key like ${`payroll:${batch.batchRef}:%`}`;
    assert.equal(sent.length, 2, "killed after the second of three chunks was broadcast");

    // The surviving process: its sweep finds the stalled batch, pg-boss runs it.
    svc.clock.set(new Date(svc.clock.now().getTime() + 5 * 60_000));
    assert.equal(await enqueueStalled(svc.deps), 1);
    const done = await waitFor(async () => {
      const r = await api(svc)("GET", `/api/payroll/run?batchRef=${batch.batchRef}`, {
        headers: { "x-api-key": m.apiKey },
      });
      const b = r.json.batch as { status: string; successCount: number } | undefined;
      return b && b.status !== "PROCESSING" ? b : null;
    }, { what: "the resumed batch", timeoutMs: 60_000, intervalMs: 200 });
    assert.equal(done.status, "COMPLETED");
    assert.equal(done.successCount, N);

    // On chain: each recipient holds exactly its amount; the payer paid the total once.
    const balances = await Promise.all(
      recipients.map((r) => chain.usdcBalance(P, r.recipientSCA as `0x${string}`)),
    );
    balances.forEach((b, i) => assert.equal(b, BigInt(recipients[i].amount), `recipient ${i}`));
    assert.equal(await chain.usdcBalance(P, payer), start - total);
    const logs = await chain.runtime(P).client.getLogs({
      address: chain.contract(P, "BatchPayout"),
      event: parseAbiItem(
        "event Payout(bytes32 indexed chunkId, uint256 index, address indexed recipient, uint256 amount, bool ok)",
      ),
      args: {
        chunkId: [0, 1, 2].map((c) => keccak256(toHex(`${batch.batchRef}:${c}`))),
      },
      fromBlock: 0n,
    });
    assert.equal(logs.length, N, "one Payout event per recipient, none repeated");
    assert.deepEqual(
      logs.map((l) => getAddress(l.args.recipient!)),
      recipients.map((r) => getAddress(r.recipientSCA)),
    );
    const chunks = await sql`
      select intent_key from chain_transactions
      where intent_key like ${`payroll:${batch.batchRef}:%`} and status = 'confirmed'`;
    assert.equal(chunks.length, 3);

    await waitFor(() => receiver.received.find((x) => x.body.includes(batch.batchRef)), {
      what: "payroll.completed",
      timeoutMs: 15_000,
    });
    const deliveries = await sql`
      select count(*)::int as n from webhook_deliveries where reference = ${batch.batchRef}`;
    assert.equal(deliveries[0].n, 1);
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
