/**
 * A webhook delivery in flight when its worker process is killed (kill -9 while the receiver
 * hangs) is attempted again within seconds of a worker being back (pg-boss sees the job's
 * heartbeat stop and retries it; the retried job takes its own claim over), ends delivered, and
 * counts each attempt once: the interrupted one, then the delivered one.
 */
import assert from "node:assert/strict";
import { startTestService } from "../helpers/service.ts";
import { deploymentEnv, type ServiceProcess, startProcess } from "../helpers/processes.ts";
import { api, createMerchant } from "../helpers/accounts.ts";
import { startReceiver } from "../helpers/receiver.ts";
import { waitFor } from "../helpers/poll.ts";
import { emit, INTERRUPTED_ERROR } from "../../src/modules/webhooks/webhooks.service.ts";

const JOBS = { JOB_HEARTBEAT_SECONDS: "10", JOB_SUPERVISE_SECONDS: "2" };

Deno.test("webhooks: a delivery in flight at a kill -9 is retried promptly after restart", async () => {
  // The receiver's timeout is a minute, so the delivery's own claim would hold it that long: only
  // the job's recovery can bring it back within the bound below.
  const env = { ...JOBS, RATE_LIMITS: "off", WEBHOOK_TIMEOUT_MS: "60000" };
  const svc = await startTestService({ env });
  const receiver = startReceiver();
  const procs: ServiceProcess[] = [];
  try {
    const m = await createMerchant(svc);
    // Deliveries are attempted by the worker processes below, not by this one.
    await svc.deps.queue.boss.offWork("webhooks.deliver");
    const workerEnv = { ...deploymentEnv(svc), ...env };
    const first = await startProcess("worker", workerEnv);
    procs.push(first);

    receiver.respond = () => "hang";
    const id = await svc.db.sql.begin((tx) =>
      emit(svc.deps, tx, {
        merchantId: m.id,
        url: `${receiver.url}/hook`,
        event: "payroll.completed",
        payload: { batchRef: "batch_crash_1", status: "COMPLETED" },
      })
    );
    await waitFor(() => receiver.received.some((r) => r.headers["webhook-id"] === id), {
      timeoutMs: 30_000,
      what: "the first attempt to reach the receiver",
    });
    Deno.kill(first.pid, "SIGKILL");
    await first.stop();
    const [inFlight] = await svc.db.sql`select status, attempts from webhook_deliveries`;
    assert.deepEqual({ ...inFlight }, { status: "pending", attempts: 1 });

    receiver.respond = () => 200;
    procs.push(await startProcess("worker", workerEnv));
    await waitFor(async () => {
      const [d] = await svc.db.sql`select status from webhook_deliveries where id = ${id}`;
      return d.status === "delivered";
    }, { timeoutMs: 45_000, intervalMs: 200, what: "the delivery to be delivered" });

    const sent = receiver.received.filter((r) => r.headers["webhook-id"] === id);
    assert.equal(sent.length, 2, "sent twice: the interrupted attempt and the retry");
    assert.equal(sent[0].body, sent[1].body);
    const r = await api(svc)("GET", "/api/webhooks/deliveries?reference=batch_crash_1", {
      cookie: m.cookie,
    });
    assert.equal(r.status, 200);
    const [d] = r.json.deliveries as Array<Record<string, unknown>>;
    assert.equal(d.status, "delivered");
    assert.equal(d.attempts, 2);
    assert.equal(d.lastStatusCode, 200);
    assert.deepEqual(
      (d.history as Array<Record<string, unknown>>).map((h) => [h.attempt, h.outcome, h.error]),
      [[1, "failed", INTERRUPTED_ERROR], [2, "delivered", null]],
    );
  } finally {
    for (const p of procs) await p.stop();
    await receiver.close();
    await svc.close();
  }
});
