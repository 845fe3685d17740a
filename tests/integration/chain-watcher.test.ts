import assert from "node:assert/strict";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";
import { rpc, startTestChain } from "../helpers/chain.ts";
import { TestUSDC } from "../../src/chain/contracts/artifacts/index.ts";
import { type LogHandler, LogWatcher } from "../../src/chain/watcher.ts";
import type { Chain } from "../../src/chain/index.ts";
import { silentLogger } from "../../src/log.ts";

const USDC = 1_000_000n;

function transferHandler(opts: { failOnce?: number } = {}): LogHandler & { calls: number } {
  let seen = 0;
  let failed = false;
  const h = {
    name: "test.usdc-transfer",
    contract: "TestUSDC" as const,
    abi: TestUSDC.abi,
    eventName: "Transfer",
    calls: 0,
    async handle(
      tx: Parameters<LogHandler["handle"]>[0],
      event: Parameters<LogHandler["handle"]>[1],
    ) {
      h.calls++;
      seen++;
      await tx`insert into watched (tx_hash, log_index, value)
               values (${event.transactionHash}, ${event.logIndex}, ${event.args.value as bigint})`;
      if (opts.failOnce && seen === opts.failOnce && !failed) {
        failed = true;
        throw new Error("simulated crash in the middle of a batch");
      }
    },
  };
  return h;
}

async function makeTransfers(chain: Chain, n: number) {
  const from = await chain.createWallet("test");
  const to = await chain.createWallet("test");
  await chain.mintUsdc({ profile: "testnet", to: from.address, amount: 1000n * USDC });
  for (let i = 0; i < n; i++) {
    await chain.transferUsdc({
      profile: "testnet",
      from: { walletId: from.id },
      to: to.address,
      amount: BigInt(i + 1) * USDC,
      intentKey: `w:${crypto.randomUUID()}`,
    });
  }
}

async function counts(db: TestDatabase) {
  const rows = await db.sql<{ n: number }[]>`
    select count(*)::int as n from watched group by tx_hash, log_index`;
  return { logs: rows.length, maxPerLog: Math.max(0, ...rows.map((r) => r.n)) };
}

function watcherFor(chain: Chain, db: TestDatabase, handler: LogHandler) {
  const w = new LogWatcher({
    sql: db.sql,
    log: silentLogger,
    runtimes: [chain.runtime("testnet")],
    pollIntervalMs: 20,
    batchSize: 3,
  });
  w.register(handler);
  return w;
}

async function drain(w: LogWatcher, chain: Chain) {
  for (let i = 0; i < 100; i++) {
    const r = await w.pollOnce(chain.runtime("testnet"));
    if (!r.more && r.from === undefined) return;
  }
  throw new Error("watcher did not catch up");
}

Deno.test("watcher: a crash mid-range rolls the batch back; every log is handled once", async () => {
  const db = await createTestDatabase();
  await db.sql`create table watched (tx_hash text, log_index int, value numeric)`;
  const chain = await startTestChain(db.sql);
  try {
    await makeTransfers(chain, 6);
    const h = transferHandler({ failOnce: 4 });
    const w = watcherFor(chain, db, h);
    const rt = chain.runtime("testnet");
    await assert.rejects(() => drain(w, chain), /simulated crash/);
    const cursorAtCrash = await w.cursor(rt);
    // "Restart": a new watcher over the same database.
    const w2 = watcherFor(chain, db, h);
    await drain(w2, chain);
    const c = await counts(db);
    assert.equal(c.logs, 7, "mint + 6 transfers");
    assert.equal(c.maxPerLog, 1);
    assert.ok((await w2.cursor(rt))! > (cursorAtCrash ?? -1n));

    // A lost cursor re-reads everything and hands nothing over twice.
    await db.sql`delete from chain_cursors`;
    const before = h.calls;
    await drain(w2, chain);
    assert.equal(h.calls, before);
    assert.equal((await counts(db)).maxPerLog, 1);
  } finally {
    await chain.stop();
    await db.drop();
  }
});

Deno.test("watcher: two watchers (two processes) polling together hand each log over once", async () => {
  const db = await createTestDatabase();
  await db.sql`create table watched (tx_hash text, log_index int, value numeric)`;
  const chain = await startTestChain(db.sql);
  try {
    await makeTransfers(chain, 8);
    const a = watcherFor(chain, db, transferHandler());
    const b = watcherFor(chain, db, transferHandler());
    await Promise.all([drain(a, chain), drain(b, chain), drain(a, chain)]);
    const c = await counts(db);
    assert.equal(c.logs, 9);
    assert.equal(c.maxPerLog, 1);
  } finally {
    await chain.stop();
    await db.drop();
  }
});

Deno.test("watcher: logs inside the confirmation depth wait for more blocks", async () => {
  const db = await createTestDatabase();
  await db.sql`create table watched (tx_hash text, log_index int, value numeric)`;
  const chain = await startTestChain(db.sql, { env: { TESTNET_CONFIRMATIONS: "3" } });
  try {
    const rt = chain.runtime("testnet");
    const w = watcherFor(chain, db, transferHandler());
    await drain(w, chain);
    const base = (await counts(db)).logs;
    await makeTransfers(chain, 1); // mint + transfer: two new blocks at the head
    await drain(w, chain);
    assert.equal((await counts(db)).logs, base, "too fresh to handle");
    await rpc(rt.rpcUrl, "anvil_mine", ["0x3"]);
    await drain(w, chain);
    assert.equal((await counts(db)).logs, base + 2);
  } finally {
    await chain.stop();
    await db.drop();
  }
});

Deno.test("watcher: the running loop picks up new logs by itself", async () => {
  const db = await createTestDatabase();
  await db.sql`create table watched (tx_hash text, log_index int, value numeric)`;
  const chain = await startTestChain(db.sql);
  try {
    chain.watcher.register(transferHandler());
    chain.watcher.start();
    await makeTransfers(chain, 2);
    const { waitFor } = await import("../helpers/poll.ts");
    await waitFor(async () => (await counts(db)).logs === 3, { what: "3 handled logs" });
  } finally {
    await chain.stop();
    await db.drop();
  }
});
