import assert from "node:assert/strict";
import { z } from "zod";
import { startQueue } from "../../src/queue/queue.ts";
import { defineJob } from "../../src/queue/registry.ts";
import { silentLogger } from "../../src/log.ts";
import { createTestDatabase } from "../helpers/db.ts";
import { waitFor } from "../helpers/poll.ts";
import type { Deps } from "../../src/deps.ts";
import {
  gatewaySettleJob,
  gatewaySettleQueue,
  startGatewaySettlement,
} from "../../src/modules/x402/x402.batched.jobs.ts";
import {
  channelClaimsQueue,
  x402ChannelsModule,
} from "../../src/modules/x402/x402.channels.module.ts";

Deno.test("queue: a job sent inside a transaction exists only if the transaction commits", async () => {
  const db = await createTestDatabase();
  const queue = await startQueue({ url: db.url, log: silentLogger });
  const seen: number[] = [];
  const job = defineJob({
    name: "test.record",
    schema: z.object({ n: z.number().int() }),
    handler: (data: { n: number }) => {
      seen.push(data.n);
      return Promise.resolve();
    },
  });
  try {
    await queue.register([job], {});
    await db.sql`create table things (n int)`;

    await assert.rejects(
      db.sql.begin(async (tx) => {
        await tx`insert into things values (1)`;
        await queue.send(job, { n: 1 }, { tx });
        throw new Error("roll back");
      }),
      /roll back/,
    );
    await db.sql.begin(async (tx) => {
      await tx`insert into things values (2)`;
      await queue.send(job, { n: 2 }, { tx });
    });

    await waitFor(() => seen.includes(2), { what: "the committed job" });
    const created = await db.sql`select data from pgboss.job where name = 'test.record'`;
    assert.deepEqual(
      created.map((r) => r.data),
      [{ n: 2 }],
      "the rolled-back job was never stored",
    );
    assert.deepEqual(seen, [2]);
  } finally {
    await queue.stop();
    await db.drop();
  }
});

Deno.test("queue: a payload that breaks the job's schema is refused at send time", async () => {
  const db = await createTestDatabase();
  const queue = await startQueue({ url: db.url, log: silentLogger });
  const job = defineJob({
    name: "test.strict",
    schema: z.object({ n: z.number() }),
    handler: () => Promise.resolve(),
  });
  try {
    await queue.register([job], {}, { work: false });
    await assert.rejects(() => queue.send(job, { n: "one" } as unknown as { n: number }));
    const rows = await db.sql`select 1 from pgboss.job where name = 'test.strict'`;
    assert.equal(rows.length, 0);
  } finally {
    await queue.stop();
    await db.drop();
  }
});

Deno.test("queue: two processes sharing a database each take distinct jobs", async () => {
  const db = await createTestDatabase();
  const a = await startQueue({ url: db.url, log: silentLogger });
  const b = await startQueue({ url: db.url, log: silentLogger });
  const handled: string[] = [];
  const make = () =>
    defineJob({
      name: "test.shared",
      schema: z.object({ i: z.number() }),
      handler: (d: { i: number }) => {
        handled.push(`${d.i}`);
        return Promise.resolve();
      },
      work: { localConcurrency: 2 },
    });
  try {
    await a.register([make()], {});
    await b.register([make()], {});
    for (let i = 0; i < 30; i++) await a.send("test.shared", { i });
    await waitFor(() => handled.length >= 30, { what: "30 jobs" });
    assert.equal(new Set(handled).size, 30);
    assert.equal(handled.length, 30, "no job ran twice");
  } finally {
    await a.stop();
    await b.stop();
    await db.drop();
  }
});

Deno.test("queue: every queue's jobs carry a heartbeat, also on a queue created before", async () => {
  const db = await createTestDatabase();
  const job = defineJob({
    name: "test.beat",
    schema: z.object({}),
    handler: () => Promise.resolve(),
  });
  // An earlier version created the queue without a heartbeat.
  const old = await startQueue({ url: db.url, log: silentLogger });
  await old.boss.createQueue("test.beat");
  await old.stop();
  const queue = await startQueue({ url: db.url, log: silentLogger, heartbeatSeconds: 12 });
  try {
    await queue.register([job], {}, { work: false });
    const [q] = await db.sql`select heartbeat_seconds from pgboss.queue where name = 'test.beat'`;
    assert.equal(q.heartbeatSeconds, 12);
    await queue.send(job, {});
    const [j] = await db.sql`select heartbeat_seconds from pgboss.job where name = 'test.beat'`;
    assert.equal(j.heartbeatSeconds, 12, "a worker that stops beating has its job retried");
  } finally {
    await queue.stop();
    await db.drop();
  }
});

Deno.test("queue: a job's cron is scheduled unless crons are off (a test running its rounds)", async () => {
  const db = await createTestDatabase();
  const queue = await startQueue({ url: db.url, log: silentLogger });
  const job = (name: string) =>
    defineJob({
      name,
      schema: z.object({}),
      cron: "* * * * *",
      handler: () => Promise.resolve(),
    });
  try {
    await queue.register([job("test.cron-on")], {}, { work: false });
    await queue.register([job("test.cron-off")], {}, { work: false, crons: false });
    const rows = await db.sql`select name from pgboss.schedule order by name`;
    assert.deepEqual(rows.map((r) => r.name), ["test.cron-on"]);
  } finally {
    await queue.stop();
    await db.drop();
  }
});

Deno.test("queue: hasten starts now what waits longer than a bound (a stately queue's round)", async () => {
  const db = await createTestDatabase();
  const queue = await startQueue({ url: db.url, log: silentLogger });
  let runs = 0;
  const job = defineJob({
    name: "test.round",
    schema: z.object({}),
    queue: { policy: "stately" },
    handler: () => {
      runs++;
      return Promise.resolve();
    },
  });
  try {
    await queue.register([job], {});
    // A round queued an hour ahead (an earlier process's interval): a newer send is dropped.
    assert.ok(await queue.send(job, {}, { startAfter: 3_600_000 }));
    assert.equal(await queue.send(job, {}), null, "the queue keeps the one waiting");
    assert.equal(await queue.hasten(job, 3_700_000), 0, "within the bound: left alone");
    assert.equal(await queue.hasten(job, 5_000), 1);
    await waitFor(() => runs === 1, { what: "the hastened round" });
    assert.equal(await queue.hasten(job, 5_000), 0, "nothing left waiting");
  } finally {
    await queue.stop();
    await db.drop();
  }
});

Deno.test("queue: x402's start runs at once the rounds an earlier, slower process queued", async () => {
  const db = await createTestDatabase();
  const queue = await startQueue({ url: db.url, log: silentLogger });
  try {
    // The queues as a worker registers them; no worker here, the rows are what is checked.
    await queue.register([gatewaySettleJob, ...x402ChannelsModule.jobs!], {} as Deps, {
      work: false,
      crons: false,
    });
    for (const q of [gatewaySettleQueue, channelClaimsQueue]) {
      assert.ok(await queue.send(q, {}, { startAfter: 3_600_000 }), "queued an hour ahead");
    }
    const deps = {
      queue,
      config: { X402_BATCH_SECONDS: 5, X402_CHANNEL_CLAIM_SECONDS: 10 },
    } as unknown as Deps;
    await startGatewaySettlement(deps);
    await x402ChannelsModule.onStart!(deps);
    const rows = await db.sql`
      select name, count(*)::int as n,
        bool_and(start_after <= now() + interval '1 second') as now
      from pgboss.job where name in ('x402.gateway-settle', 'x402.channel-claims')
      group by name order by name`;
    assert.deepEqual(rows.map((r) => ({ ...r })), [
      { name: "x402.channel-claims", n: 1, now: true },
      { name: "x402.gateway-settle", n: 1, now: true },
    ]);
  } finally {
    await queue.stop();
    await db.drop();
  }
});
