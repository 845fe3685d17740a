/**
 * Crash-safe stream creation: four processes of the deployment are each SIGKILLed while creating
 * a stream (tests/fixtures/streams-worker.ts): after the approval, before the create was signed
 * (nothing sent); after the create was recorded, before its broadcast; after its broadcast,
 * before its receipt; after the receipt, inside the record's transaction. No process runs
 * workers then; a worker process started afterwards finishes what the crashes left (the module's
 * start hook, once the dead claims lapse): a complete ACTIVE record with exactly one
 * `stream.created` and `startedAt` the create block's time, or, where nothing was sent, nothing
 * locked (vault and sender balances unchanged). A retry of each original request with its
 * Idempotency-Key then answers with the same reference (and the same transaction where one was
 * mined), locking nothing twice.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { startTestService } from "../helpers/service.ts";
import { deploymentEnv, startCrashWorker, startProcess } from "../helpers/processes.ts";
import { api, createMerchant } from "../helpers/accounts.ts";
import { waitFor } from "../helpers/poll.ts";

const USDC = 1_000_000n;
const P = "production";
const HOOK = "http://127.0.0.1:9/hooks";
const POINTS = ["approve", "record", "broadcast", "commit"] as const;
type Point = typeof POINTS[number];

const sha256 = (s: string) => createHash("sha256").update(s).digest("hex");

Deno.test("streams: a process killed at each point of a create; the restart finishes it", async () => {
  const svc = await startTestService({ env: { RATE_LIMITS: "off" }, workers: false });
  const call = api(svc);
  const chain = svc.deps.chain;
  const sql = svc.db.sql;
  const crashed: Deno.ChildProcess[] = [];
  let restarted: Awaited<ReturnType<typeof startProcess>> | undefined;
  // Workers only while the merchant signs up (its code is mailed by a job): afterwards no process
  // runs the streams sweep until the restart.
  const mailer = await startTestService({ sameDeploymentAs: svc, env: { RATE_LIMITS: "off" } });
  let mailerOpen = true;
  try {
    const m = await createMerchant(svc);
    await mailer.close();
    mailerOpen = false;
    const headers = { "x-api-key": m.apiKey };
    const w = await call("POST", "/api/wallets", { headers, body: {} });
    const receiver = (w.json.wallet as { address: string }).address;
    const vault = chain.contract(P, "StreamVault");
    // One fresh sender wallet per point: each approves the vault first.
    const senders = {} as Record<Point, `0x${string}`>;
    for (const point of POINTS) {
      const r = await call("POST", "/api/wallets", { headers, body: { label: point } });
      assert.equal(r.status, 201, r.text);
      senders[point] = (r.json.wallet as { address: string }).address as `0x${string}`;
      await chain.mintUsdc({ profile: P, to: senders[point], amount: 10n * USDC });
    }
    const vaultBefore = await chain.usdcBalance(P, vault);
    const body = (point: Point) => ({
      senderSCA: senders[point],
      receiverSCA: receiver,
      ratePerSecond: "0.001",
      totalDeposited: "2",
      webhookUrl: HOOK,
    });
    const key = (point: Point) => `crash-${point}`;

    // Each create through its own process, which dies at its point.
    const workers = await Promise.all(
      POINTS.map((point) => startCrashWorker(svc, "streams-worker", { KILL_AT: point })),
    );
    crashed.push(...workers.map((w) => w.child));
    const answers = await Promise.all(
      POINTS.map((point, i) =>
        fetch(`${workers[i].baseUrl}/api/payments/stream`, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            ...headers,
            "idempotency-key": key(point),
          },
          body: JSON.stringify(body(point)),
        }).then((r) => r.status, () => null)
      ),
    );
    for (const [i, w] of workers.entries()) {
      const status = await w.child.status;
      w.child.stdout.cancel().catch(() => {});
      assert.equal(status.signal, "SIGKILL", `${POINTS[i]}: the worker died by its own SIGKILL`);
      assert.equal(answers[i], null, `${POINTS[i]}: no answer got out`);
    }
    crashed.length = 0;

    // What each crash left: the intent PENDING, no stream record, no event.
    const refs = {} as Record<Point, string>;
    for (const point of POINTS) {
      const [row] = await sql<{ reference: string; status: string }[]>`
        select c.reference, c.status from stream_create_requests r
        join stream_creates c on c.reference = r.reference
        where r.merchant_id = ${m.id} and r.key_hash = ${sha256(`${P}\n${key(point)}`)}`;
      assert.ok(row, `${point}: the intent was recorded before anything was sent`);
      assert.equal(row.status, "PENDING", point);
      refs[point] = row.reference;
      const [n] = await sql<{ n: number }[]>`
        select count(*)::int as n from streams where reference = ${row.reference}`;
      assert.equal(n.n, 0, `${point}: no record yet`);
    }
    const createTx = (point: Point) => chain.intent(P, `stream-create:${refs[point]}`);
    assert.equal(await createTx("approve"), null);
    assert.equal((await createTx("record"))?.status, "signed");
    // Killed before its bookkeeping: the row still says signed, the chain has it.
    assert.ok(["signed", "broadcast"].includes((await createTx("broadcast"))!.status));
    assert.equal((await createTx("commit"))?.status, "confirmed");
    assert.equal((await chain.streams.get(P, refs.approve)).status, "None");
    assert.equal((await chain.streams.get(P, refs.record)).status, "None");
    assert.equal((await chain.streams.get(P, refs.broadcast)).status, "Active");
    assert.equal((await chain.streams.get(P, refs.commit)).status, "Active");

    // The restart: its transaction recovery sends the recorded create (after its grace period;
    // here at once), and its streams start hook finishes every create once the claims lapse.
    await chain.recover(P, { minAgeMs: 0 });
    restarted = await startProcess("worker", deploymentEnv(svc));
    await waitFor(async () => {
      const open = await sql`
        select 1 from stream_creates where status = 'PENDING' and merchant_id = ${m.id}`;
      return open.length === 0;
    }, { timeoutMs: 150_000, intervalMs: 500, what: "every create finished or failed" });

    // Where nothing was sent: nothing locked, the sender's USDC intact, no stream.
    const [failed] = await sql<{ status: string }[]>`
      select status from stream_creates where reference = ${refs.approve}`;
    assert.equal(failed.status, "FAILED");
    assert.equal(await chain.usdcBalance(P, senders.approve), 10n * USDC);
    assert.equal((await chain.streams.get(P, refs.approve)).status, "None");

    // Everywhere else: the complete record, its event once, the deposit locked once.
    for (const point of ["record", "broadcast", "commit"] as const) {
      const reference = refs[point];
      const [s] = await sql<{ status: string; txHash: string; startedAt: Date; deposit: bigint }[]>`
        select status, tx_hash, started_at, deposit from streams where reference = ${reference}`;
      const onChain = await chain.streams.get(P, reference);
      const tx = (await createTx(point))!;
      assert.equal(s.status, "ACTIVE", point);
      assert.equal(s.txHash, tx.txHash, point);
      assert.equal(s.startedAt.getTime(), Number(onChain.startTime) * 1000, point);
      assert.equal(BigInt(s.deposit), 2n * USDC, point);
      const created = await sql<{ payload: string }[]>`
        select payload from webhook_deliveries where reference = ${reference} and event = 'stream.created'`;
      assert.equal(created.length, 1, `${point}: one stream.created`);
      assert.equal(JSON.parse(created[0].payload).totalDeposited, 2);
      assert.equal(await chain.usdcBalance(P, senders[point]), 8n * USDC, point);
    }
    assert.equal(await chain.usdcBalance(P, vault) - vaultBefore, 6n * USDC);

    // The clients retry with their Idempotency-Keys (a key left in progress by the dead process
    // is released here as the idempotency recovery does): the same stream, nothing locked twice.
    for (const point of POINTS) {
      await sql`delete from idempotency_keys where key_hash = ${sha256(key(point))}`;
      const before = point === "approve" ? null : await createTx(point);
      const r = await call("POST", "/api/payments/stream", {
        headers: { ...headers, "idempotency-key": key(point) },
        body: body(point),
      });
      assert.equal(r.status, 200, `${point}: ${r.text}`);
      assert.match(r.headers.get("content-type") ?? "", /application\/json/);
      assert.equal(r.json.reference, refs[point], point);
      const tx = (await createTx(point))!;
      if (before) assert.equal(r.json.txHash, before.txHash, point);
      assert.equal(r.json.txHash, tx.txHash, point);
      const created = await sql`
        select 1 from webhook_deliveries where reference = ${
        refs[point]
      } and event = 'stream.created'`;
      assert.equal(created.length, 1, `${point}: still one stream.created`);
    }
    // The retry of the one that had sent nothing locked its deposit now, once.
    assert.equal(await chain.usdcBalance(P, senders.approve), 8n * USDC);
    assert.equal(await chain.usdcBalance(P, vault) - vaultBefore, 8n * USDC);
    const [creates] = await sql<{ n: number }[]>`
      select count(*)::int as n from chain_transactions where intent_key like 'stream-create:%'`;
    assert.equal(creates.n, 4, "one create transaction per stream");
  } finally {
    for (const child of crashed) {
      try {
        child.kill("SIGKILL");
      } catch { /* already gone */ }
      await child.status;
    }
    await restarted?.stop();
    if (mailerOpen) await mailer.close();
    await svc.close();
  }
});
