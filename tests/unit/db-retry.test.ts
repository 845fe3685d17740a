/**
 * `retryWhileNotReady`: what the start of a role does again while its database is away (the
 * clock is the test's: each pause moves it on, nothing sleeps for real).
 */
import assert from "node:assert/strict";
import { databaseNotReady, retryWhileNotReady } from "../../src/db/wait.ts";
import { reconnectPause } from "../../src/db/client.ts";

function coded(code: string, message = code): Error {
  return Object.assign(new Error(message), { code });
}

function clock() {
  const c = { now: 0, pauses: [] as number[] };
  return {
    c,
    now: () => c.now,
    sleep: (ms: number) => {
      c.pauses.push(ms);
      c.now += ms;
      return Promise.resolve();
    },
  };
}

Deno.test("retryWhileNotReady: made again while the database recovers, within one budget", async () => {
  const t = clock();
  const left: number[] = [];
  let calls = 0;
  const { value, failed } = await retryWhileNotReady((msLeft) => {
    left.push(msLeft);
    calls++;
    t.c.now += 100; // each start takes a while before it fails
    if (calls <= 2) {
      return Promise.reject(coded("57P03", "the database system is in recovery mode"));
    }
    return Promise.resolve("started");
  }, { timeoutMs: 10_000, now: t.now, sleep: t.sleep });
  assert.equal(value, "started");
  assert.equal(failed, 2);
  assert.deepEqual(t.c.pauses, [250, 500]);
  // Each attempt is told what is left of the one budget.
  assert.deepEqual(left, [10_000, 10_000 - 100 - 250, 10_000 - 200 - 750]);
});

Deno.test("retryWhileNotReady: a refusal waiting cannot cure, a stop asked, the end of the budget", async () => {
  const t = clock();
  let calls = 0;
  await assert.rejects(
    retryWhileNotReady(() => {
      calls++;
      return Promise.reject(coded("28P01", "password authentication failed"));
    }, { timeoutMs: 10_000, now: t.now, sleep: t.sleep }),
    (e: unknown) => (e as { code?: string }).code === "28P01",
  );
  assert.equal(calls, 1);

  calls = 0;
  await assert.rejects(
    retryWhileNotReady(() => {
      calls++;
      return Promise.reject(coded("57P03"));
    }, { timeoutMs: 10_000, now: t.now, sleep: t.sleep, giveUp: () => true }),
    (e: unknown) => (e as { code?: string }).code === "57P03",
  );
  assert.equal(calls, 1, "no second start once a stop was asked");

  const u = clock();
  await assert.rejects(
    retryWhileNotReady(() => Promise.reject(coded("57P03")), {
      timeoutMs: 3_000,
      now: u.now,
      sleep: u.sleep,
    }),
    (e: unknown) =>
      e instanceof Error && /within 3 s \(DATABASE_STARTUP_WAIT_MS\)/.test(e.message) &&
      databaseNotReady(e.cause),
  );
  assert.equal(u.c.now, 3_000);
});

Deno.test("databaseNotReady: the queue driver's connect timeout and closed connection, which have no code", () => {
  assert.equal(databaseNotReady(new Error("Connection terminated unexpectedly")), true);
  const e = new Error(
    "timeout exceeded when trying to connect (Queue: webhooks.deliver, Worker: 6e5bc77d)",
  );
  assert.equal(databaseNotReady(e), true);
  assert.equal(databaseNotReady(new Error("timeout exceeded")), false);
  assert.equal(databaseNotReady(coded("23505", "timeout exceeded when trying to connect")), false);
});

Deno.test("a pool's reconnect pause: postgres.js's curve, capped at 2 s", () => {
  const bounds: Array<[number, number, number]> = [
    [0, 0.005, 0.01], // a close, no failure: at once, as postgres.js does
    [1, 0.015, 0.03],
    [3, 0.135, 0.27],
    [4, 0.405, 0.81],
    [5, 1, 2], // postgres.js: 2.43 s
    [7, 1, 2], // postgres.js: 20 s
    [50, 1, 2],
  ];
  for (const [failures, low, high] of bounds) {
    for (let i = 0; i < 200; i++) {
      const s = reconnectPause(failures);
      assert.ok(s >= low - 1e-12 && s <= high + 1e-12, `${failures} failures: ${s} s`);
    }
  }
});
