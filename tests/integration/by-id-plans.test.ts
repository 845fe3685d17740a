/**
 * Statements that move rows by id from some statuses (src/db/by-id.ts) fetch each row by its
 * primary key whatever the table's statistics say: read while nothing was open, they let the
 * planner prefer scanning every open row through a partial index on status, per statement, a
 * cost that grows with a backlog. Checked for the gateway-balance charges (x402.batched.repo.ts:
 * the "served" marks, a release, a batch's charges, a settlement's confirmation; no index covers
 * their state any more, so what is checked is that none is read by scanning the table), the
 * chain transactions (the sender's broadcast, failed and withdrawn marks, its receipts' record),
 * the webhook deliveries (a worker's claim of one: each claim scanning every due delivery made
 * draining an outage's backlog quadratic), a payment's failure and a stream's stop. The plans
 * are the server's own, for the statements as the repositories send them (auto_explain,
 * answered as notices on one connection).
 */
import assert from "node:assert/strict";
import { createTestDatabase } from "../helpers/db.ts";
import { createSql, NO_TABLE_SCANS } from "../../src/db/client.ts";
import {
  findConfirmedByIntents,
  findLiveByIntents,
  insertSignedBatch,
  markBroadcast,
  markBroadcastMany,
  markFailed,
  markMinedMany,
  withdrawUnsent,
} from "../../src/chain/transactions.repo.ts";
import { recordRevertedAttempt } from "../../src/modules/payments/payments.repo.ts";
import { markStopped } from "../../src/modules/streams/streams.repo.ts";
import {
  batchCharges,
  confirmBatch,
  createBatch,
  type NewCharge,
  release,
  reserveAndServe,
  reserveMany,
  serve,
  serveMany,
} from "../../src/modules/x402/x402.batched.repo.ts";
import { claimAttempt } from "../../src/modules/webhooks/webhooks.repo.ts";
import { claimGatewayAttempts, settleAttempts } from "../../src/modules/x402/x402.repo.ts";
import { settleOwed } from "../helpers/x402-charges.ts";

const CHAIN = 31337;
const PAYER = "0x" + "7".repeat(40);
const hex = (bytes: number) =>
  `0x${
    Array.from(
      crypto.getRandomValues(new Uint8Array(bytes)),
      (b) => b.toString(16).padStart(2, "0"),
    ).join("")
  }`;

/** A payment of 10 from PAYER under a fresh nonce: what a charge and a pay attempt share. */
const payment = (now: Date) => ({
  id: crypto.randomUUID(),
  chainId: CHAIN,
  listingId: null,
  listingSlug: "lookups",
  merchantId: null,
  payer: PAYER,
  payee: "0x" + "5".repeat(40),
  amount: 10n,
  nonce: hex(32),
  validAfter: 0n,
  validBefore: 4_000_000_000n,
  agentId: null,
  owner: null,
  now,
});

function charge(now: Date): NewCharge {
  return { ...payment(now), domain: "batched", signature: hex(65) };
}

/** PAYER's mirror with `balance`, read from the chain `now`. */
async function payer(sql: ReturnType<typeof createSql>, balance: bigint, now: Date) {
  await sql`insert into x402_gateway_accounts (chain_id, payer, balance, synced_block, synced_at)
    values (${CHAIN}, ${PAYER}, ${balance}, 1, ${now})`;
}

/** 20,000 more payers' mirrors, written straight into the table (no ANALYZE). */
async function manyPayers(sql: ReturnType<typeof createSql>, now: Date) {
  await sql`
    insert into x402_gateway_accounts (chain_id, payer, balance, synced_block, synced_at)
    select ${CHAIN}, '0x' || lpad(to_hex(g), 40, '0'), 1, 1, ${now}
    from generate_series(1, 20000) g`;
}

/** Charges written straight into the table, `n` of them with `status`. */
async function bulk(sql: ReturnType<typeof createSql>, n: number, status: string) {
  await sql`
    insert into x402_gateway_charges (id, chain_id, payer, payee, amount, nonce, valid_after,
      valid_before, domain, signature, status, created_at)
    select gen_random_uuid(), ${CHAIN}, '0x' || lpad(to_hex(g % 64), 40, '0'), ${PAYER}, 10,
      '0x' || md5(random()::text) || md5(random()::text), 0, 4000000000, 'batched',
      '0x' || repeat('b', 130), ${status}, now()
    from generate_series(1, ${n}) g`;
}

/** A signed transaction of CHAIN's sender to record (its bytes left empty). */
const tx = (intentKey: string, nonce: number) => ({
  chainId: CHAIN,
  intentKey,
  fromAddress: "0x" + "9".repeat(40),
  toAddress: null,
  nonce: BigInt(nonce),
  value: 0n,
  data: "0x",
  gas: 21_000n,
  maxFeePerGas: 1n,
  maxPriorityFeePerGas: 1n,
  rawTx: "0x",
  txHash: hex(32),
});

/** Another sender's transactions written straight into the table, `n` of them with `status`. */
async function bulkTxs(sql: ReturnType<typeof createSql>, n: number, status: string, from: number) {
  await sql`
    insert into chain_transactions (chain_id, intent_key, from_address, nonce, value, data,
      gas, max_fee_per_gas, max_priority_fee_per_gas, raw_tx, tx_hash, status)
    select ${CHAIN}, ${status} || g, ${"0x" + "8".repeat(40)}, ${from} + g, 0, '0x', 21000,
      1, 1, '0x', '0x' || md5(${status} || g), ${status}
    from generate_series(1, ${n}) g`;
}

/**
 * One connection whose statements' plans come back as notices; `plans(table)` answers those of
 * the statements that read or wrote `table` since it was last asked.
 */
async function planProbe(url: string, settings?: Record<string, string>) {
  const notices: string[] = [];
  const sql = createSql(url, {
    max: 1,
    name: "plans",
    settings,
    onnotice: (m) => notices.push(m),
  });
  await sql`load 'auto_explain'`;
  await sql`set auto_explain.log_min_duration = 0`;
  await sql`set auto_explain.log_level = notice`;
  return {
    sql,
    plans(table: string) {
      const out = notices.filter((n) => n.includes(` on ${table} `));
      notices.length = 0;
      return out;
    },
  };
}

/** Each scan of `table` in a plan: its line and the lines under it, up to the next node. */
function scansOf(plan: string, table: string): string[] {
  const lines = plan.split("\n");
  const out: string[] = [];
  lines.forEach((l, at) => {
    if (!(l.includes(` on ${table} `) && /Scan/.test(l))) return;
    const rest = lines.slice(at + 1);
    const end = rest.findIndex((r) => r.includes("->"));
    out.push([l, ...rest.slice(0, end < 0 ? rest.length : end)].join("\n"));
  });
  return out;
}

/** The first scan of the payers' mirrors in a plan. */
const accountsLookup = (plan: string) => scansOf(plan, "x402_gateway_accounts")[0] ?? "";

/** Each plan fetched its row(s) through `index` (the key, say), none through `partial`. */
function byPrimaryKey(plans: string[], count: number, index: string, partial: string) {
  assert.equal(plans.length, count);
  for (const plan of plans) {
    assert.match(plan, new RegExp(`(using|Scan on) ${index} `));
    assert.doesNotMatch(plan, new RegExp(`(using|Scan on) ${partial} `));
  }
}

Deno.test("x402 charges are found by id whatever the statistics say", async (t) => {
  const db = await createTestDatabase();
  const probe = await planProbe(db.url);
  const chargePlans = () => probe.plans("x402_gateway_charges");
  try {
    const now = new Date();
    // The statistics are read while every charge is settled; then a backlog builds up, unread.
    await bulk(db.sql, 3000, "settled");
    await db.sql`analyze x402_gateway_charges`;
    await bulk(db.sql, 2000, "pending");
    await payer(db.sql, 1000n, now);
    const mine = [charge(now), charge(now), charge(now)];
    const [one, two] = [charge(now), charge(now)];
    // Ours first: the queue of charges not yet batched is taken oldest first.
    for (const group of [mine, [one, two]]) {
      const reserved = await reserveMany(db.sql, group, new Date(now.getTime() - 60_000), now);
      assert.deepEqual([...reserved.values()], Array(group.length).fill("reserved"));
    }

    await t.step("one served mark, one release", async () => {
      await serve(probe.sql, one.id, 200, now);
      assert.equal(
        await release(probe.sql, two.id, { error: "502", upstreamStatus: 502, now }),
        true,
      );
      byPrimaryKey(chargePlans(), 2, "x402_gateway_charges_pkey", "x402_gateway_charges");
      const rows = await db.sql`select id, status from x402_gateway_charges
        where id in ${db.sql([one.id, two.id])}`;
      assert.deepEqual(
        Object.fromEntries(rows.map((r) => [r.id, r.status])),
        { [one.id]: "pending", [two.id]: "released" },
      );
    });

    await t.step("the served marks", async () => {
      await serveMany(probe.sql, mine.map((c) => ({ id: c.id, upstreamStatus: 200 })), now);
      byPrimaryKey(chargePlans(), 1, "x402_gateway_charges_pkey", "x402_gateway_charges");
      const rows = await db.sql`select status from x402_gateway_charges
        where id in ${db.sql(mine.map((c) => c.id))}`;
      assert.deepEqual(rows.map((r) => r.status), ["pending", "pending", "pending"]);
    });

    await t.step("a settlement's confirmation", async () => {
      const batchId = crypto.randomUUID();
      assert.equal(await createBatch(db.sql, { id: batchId, chainId: CHAIN, max: 3, now }), 3);
      const inBatch = await batchCharges(probe.sql, batchId);
      assert.deepEqual(inBatch.map((c) => c.id).sort(), mine.map((c) => c.id).sort());
      byPrimaryKey(chargePlans(), 1, "x402_gateway_charges_pkey", "x402_gateway_charges");
      const settled = await confirmBatch(probe.sql, {
        id: batchId,
        txHash: hex(32),
        block: 2n,
        gasUsed: 100_000n,
        paid: mine.map((c) => ({ id: c.id, txHash: hex(32), block: 2n })),
        refused: [],
        now,
      });
      assert.equal(settled, 3);
      byPrimaryKey(chargePlans(), 1, "x402_gateway_charges_pkey", "x402_gateway_charges");
      const [held] = await db.sql`select held, balance from x402_gateway_accounts
        where payer = ${PAYER}`;
      // One still pending (`one`): its 10 stays held.
      assert.deepEqual([held.held, held.balance], [10n, 970n]);
    });
  } finally {
    await probe.sql.end();
    await db.drop();
  }
});

Deno.test("chain transactions are found by id whatever the statistics say", async () => {
  const db = await createTestDatabase();
  const probe = await planProbe(db.url);
  try {
    // Statistics read while every transaction was mined; then a backlog of open ones, unread.
    await bulkTxs(db.sql, 3000, "confirmed", 0);
    await db.sql`analyze chain_transactions`;
    await bulkTxs(db.sql, 2000, "broadcast", 10_000);
    const rows = await insertSignedBatch(db.sql, [1, 2, 3, 4].map((n) => tx(`mine:${n}`, n)));
    const [a, b, c, d] = rows.map((r) => r.id);
    const plans = () => probe.plans("chain_transactions");
    const pk = (n: number) =>
      byPrimaryKey(plans(), n, "chain_transactions_pkey", "chain_transactions_open");

    await markBroadcast(probe.sql, a);
    pk(1);
    await markBroadcastMany(probe.sql, [b]);
    pk(1);
    await markFailed(probe.sql, a, "refused");
    pk(1);
    await withdrawUnsent(probe.sql, [c, d], "re-queued");
    pk(1);
    const status = await db.sql`select id, status from chain_transactions
      where id in ${db.sql([a, b, c, d])}`;
    assert.deepEqual(
      Object.fromEntries(status.map((r) => [r.id, r.status])),
      { [a]: "failed", [b]: "broadcast", [c]: "failed", [d]: "failed" },
    );
  } finally {
    await probe.sql.end();
    await db.drop();
  }
});

Deno.test("the sender's statements over a list of transactions stay on the keys as the table grows", async () => {
  const db = await createTestDatabase();
  const probe = await planProbe(db.url);
  let nonce = 0;
  /** What the sender does with a batch: looks its intents up, records, broadcasts, mines. */
  const send = async () => {
    const txs = [1, 2].map(() => tx(crypto.randomUUID(), nonce++));
    const keys = txs.map((t) => t.intentKey);
    assert.equal((await findLiveByIntents(probe.sql, CHAIN, keys)).size, 0);
    const rows = await insertSignedBatch(db.sql, txs);
    const ids = rows.map((r) => r.id);
    await markBroadcastMany(probe.sql, ids);
    const mined = await markMinedMany(
      probe.sql,
      ids.map((id) => ({
        id,
        status: "confirmed" as const,
        blockNumber: 7n,
        gasUsed: 21_000n,
        contractAddress: null,
      })),
    );
    assert.deepEqual(mined.map((r) => [r.id, r.status]), ids.map((id) => [id, "confirmed"]));
    assert.equal((await findConfirmedByIntents(probe.sql, CHAIN, keys)).size, 2);
  };
  try {
    // Young: a few transactions, the statements run often enough on one connection for a
    // prepared statement's plan to be cached generic (from the sixth run); then the table grows,
    // with no ANALYZE in between (autovacuum's comes a minute later). The cached plans scanned
    // the whole table, or every transaction of the chain, per statement: 28 to 33 ms each at
    // 50,000 transactions, and growing with every transaction ever sent.
    for (let i = 0; i < 8; i++) await send();
    await bulkTxs(db.sql, 20_000, "confirmed", 100_000);
    probe.plans("chain_transactions");
    await send();
    const plans = probe.plans("chain_transactions");
    assert.equal(plans.length, 4);
    for (const plan of plans) {
      assert.match(
        plan,
        /Index Cond: \((t\.)?id = |Index Cond: \(\(chain_id = .*\) AND \(intent_key = ANY/,
        plan,
      );
      assert.doesNotMatch(plan, /Seq Scan on chain_transactions /, plan);
    }
  } finally {
    await probe.sql.end();
    await db.drop();
  }
});

Deno.test("webhook deliveries are claimed by id whatever the statistics say", async () => {
  const db = await createTestDatabase();
  const probe = await planProbe(db.url);
  try {
    const [m] = await db.sql`insert into merchants (email, business_name, password_hash)
      values ('plans@example.com', 'Plans', 'x') returning id`;
    const deliveries = async (n: number, status: string, due: Date | null) => {
      await db.sql`
        insert into webhook_deliveries (id, merchant_id, event, url, payload, status, attempts,
          round_failures, next_attempt_at, created_at, updated_at)
        select ${status} || g, ${m.id}, 'payment.completed', 'https://example.com/hook', '{}',
          ${status}, 1, 0, ${due}, now(), now()
        from generate_series(1, ${n}) g`;
    };
    const now = new Date();
    // Statistics read while every delivery had gone out; then an outage's backlog, all due.
    await deliveries(3000, "delivered", null);
    await db.sql`analyze webhook_deliveries`;
    await deliveries(2000, "pending", new Date(now.getTime() - 60_000));
    const claimed = await claimAttempt(probe.sql, "pending17", now, 30_000, "worker-1");
    assert.equal(claimed?.id, "pending17");
    assert.equal(claimed?.attempts, 2);
    byPrimaryKey(
      probe.plans("webhook_deliveries"),
      1,
      "webhook_deliveries_pkey",
      "webhook_deliveries_due",
    );
  } finally {
    await probe.sql.end();
    await db.drop();
  }
});

Deno.test("payments and streams are moved by id whatever the statistics say", async () => {
  const db = await createTestDatabase();
  const probe = await planProbe(db.url);
  try {
    const [m] = await db.sql`insert into merchants (email, business_name, password_hash)
      values ('plans@example.com', 'Plans', 'x') returning id`;
    const payments = async (n: number, status: string) => {
      await db.sql`
        insert into payments (reference, merchant_id, kind, amount, chain_id, pay_to, status,
          expires_at, created_at, updated_at)
        select ${status} || g, ${m.id}, 'link', 1000, ${CHAIN}, ${PAYER}, ${status},
          now() + interval '1 hour', now(), now()
        from generate_series(1, ${n}) g`;
    };
    const streams = async (n: number, status: string) => {
      await db.sql`
        insert into streams (merchant_id, reference, profile, chain_id, sender_wallet_id,
          sender_sca, receiver_sca, rate, deposit, status, contract_address, tx_hash, started_at,
          ends_at)
        select ${m.id}, ${status} || g, 'local', ${CHAIN}, gen_random_uuid(), ${PAYER}, ${PAYER},
          1, 100, ${status}, ${PAYER}, '0x' || md5(${status} || g), now(),
          now() + interval '1 hour'
        from generate_series(1, ${n}) g`;
    };
    // Statistics read while none was open; then thousands open, unread.
    await payments(3000, "SUCCESS");
    await streams(3000, "COMPLETED");
    await db.sql`analyze payments`;
    await db.sql`analyze streams`;
    await payments(2000, "PENDING");
    await streams(2000, "ACTIVE");

    const [p] = await db.sql`select id from payments where reference = 'PENDING17'`;
    assert.equal(await recordRevertedAttempt(probe.sql, p.id, "reverted", new Date()), true);
    byPrimaryKey(probe.plans("payments"), 1, "payments_pkey", "payments_pending_expiry");

    const [st] = await db.sql`select id from streams where reference = 'ACTIVE17'`;
    const stopped = await markStopped(probe.sql, st.id, {
      withdrawn: 10n,
      stoppedAt: new Date(),
      txHash: hex(32),
    });
    assert.equal(stopped?.status, "STOPPED");
    byPrimaryKey(probe.plans("streams"), 1, "streams_pkey", "streams_active_due");
  } finally {
    await probe.sql.end();
    await db.drop();
  }
});

Deno.test("x402 group statements are planned for the table as it is, not as it was", async () => {
  const db = await createTestDatabase();
  const probe = await planProbe(db.url);
  const chargePlans = () => probe.plans("x402_gateway_charges");
  try {
    const now = new Date();
    await payer(db.sql, 1000000n, now);
    const fresh = new Date(now.getTime() - 60_000);
    const round = async () => {
      const group = [charge(now), charge(now)];
      await reserveMany(db.sql, group, fresh, now);
      await serveMany(probe.sql, group.map((c) => ({ id: c.id, upstreamStatus: 200 })), now);
      await settleOwed(probe.sql, now);
    };
    // Young: a few rows, the statements run often enough on one connection for a prepared
    // statement's plan to be cached generic (from the sixth run).
    for (let i = 0; i < 8; i++) await round();
    // Then the table grows, with no ANALYZE in between (autovacuum's comes a minute later).
    await bulk(db.sql, 20_000, "settled");
    chargePlans();
    await round();
    const plans = chargePlans();
    assert.ok(plans.length >= 4, `${plans.length} plans`);
    for (const plan of plans) {
      assert.doesNotMatch(plan, /Seq Scan on x402_gateway_charges /, plan);
    }
  } finally {
    await probe.sql.end();
    await db.drop();
  }
});

Deno.test("the paid path's writes, one prepared statement, stay on the indexes as the tables grow", async () => {
  const db = await createTestDatabase();
  // As the service's paid-path connection is (service.ts): no table scans.
  const probe = await planProbe(db.url, NO_TABLE_SCANS);
  try {
    const now = new Date();
    await payer(db.sql, 1000000n, now);
    const fresh = new Date(now.getTime() - 60_000);
    let last: NewCharge[] = [];
    const round = async () => {
      const group = [charge(now), charge(now)];
      const marks = last.map((c) => ({ id: c.id, upstreamStatus: 200 }));
      const out = await reserveAndServe(probe.sql, group, marks, fresh, now);
      assert.deepEqual([...out.values()], ["reserved", "reserved"]);
      last = group;
    };
    // Young: a few rows, run often enough on one connection for the prepared statement's plan to
    // be cached generic (from the sixth run).
    for (let i = 0; i < 8; i++) await round();
    // Then the charges and the payers' mirrors grow, with no ANALYZE in between.
    await bulk(db.sql, 20_000, "settled");
    await manyPayers(db.sql, now);
    probe.plans("x402_gateway_charges");
    const marked = last;
    await round();
    const plans = probe.plans("x402_gateway_charges");
    assert.equal(plans.length, 1);
    assert.doesNotMatch(plans[0], /Seq Scan on x402_gateway_(charges|accounts) /, plans[0]);
    // The payers' mirrors by their key, not a whole index read then joined: 20,000 rows here,
    // every payer's row per statement (it was so until this assertion).
    assert.match(accountsLookup(plans[0]), /Index Cond: .*chain_id = .*payer = /, plans[0]);
    assert.match(plans[0], /Index Scan using x402_gateway_charges_pkey on x402_gateway_charges c/);
    const rows = await db.sql`select status, upstream_status from x402_gateway_charges
      where id in ${db.sql(marked.map((c) => c.id))}`;
    assert.deepEqual(rows.map((r) => [r.status, r.upstreamStatus]), [
      ["pending", 200],
      ["pending", 200],
    ]);
  } finally {
    await probe.sql.end();
    await db.drop();
  }
});

Deno.test("the pay path's group statements stay on the indexes as the tables grow", async () => {
  const db = await createTestDatabase();
  // Both go through the paid path's connection (no table scans: x402.service.ts), each probed
  // on a connection of its own.
  const claims = await planProbe(db.url, NO_TABLE_SCANS);
  const settles = await planProbe(db.url, NO_TABLE_SCANS);
  try {
    const now = new Date();
    await payer(db.sql, 1000000000n, now);
    const fresh = new Date(now.getTime() - 60_000);
    const round = async () => {
      const attempts = [0, 1].map(() => ({ ...payment(now), scheme: "gateway" as const }));
      const claimed = await claimGatewayAttempts(claims.sql, attempts, fresh, now);
      assert.equal([...claimed.values()].filter((c) => c !== "used").length, 2);
      const settled = await settleAttempts(
        settles.sql,
        attempts.map((a) => ({ id: a.id, upstreamStatus: 200, txHash: hex(32) })),
        now,
      );
      assert.deepEqual(settled.map((r) => r.status), ["SUCCESS", "SUCCESS"]);
    };
    // Young: run often enough on each connection for the prepared statements' plans to be
    // cached generic (from the sixth run).
    for (let i = 0; i < 8; i++) await round();
    // Then the attempts and the payers' mirrors grow, with no ANALYZE in between.
    await db.sql`
      insert into x402_payments (scheme, chain_id, payer, payee, amount, nonce, valid_after,
        valid_before, status, created_at)
      select 'gateway', ${CHAIN}, '0x' || lpad(to_hex(g % 64), 40, '0'), ${PAYER}, 10,
        '0x' || md5(random()::text) || md5(random()::text), 0, 4000000000, 'SUCCESS', now()
      from generate_series(1, 20000) g`;
    await manyPayers(db.sql, now);
    claims.plans("x402_gateway_accounts");
    settles.plans("x402_gateway_accounts");
    await round();
    const claimed = claims.plans("x402_gateway_accounts");
    const settled = settles.plans("x402_payments");
    assert.ok(scansOf(settled[0] ?? "", "x402_payments").length > 0, "the attempts are read");
    for (const plans of [claimed, settled]) {
      assert.equal(plans.length, 1);
      assert.doesNotMatch(plans[0], /Seq Scan on x402_(payments|gateway_accounts) /, plans[0]);
      // Every row by its key: no scan of a whole index either (every attempt ever made, or every
      // payer's row, per statement).
      for (const table of ["x402_payments", "x402_gateway_accounts"]) {
        for (const scan of scansOf(plans[0], table)) {
          assert.match(scan, /(Index|Recheck) Cond: /, plans[0]);
        }
      }
      assert.match(accountsLookup(plans[0]), /Index Cond: .*chain_id = .*payer = /, plans[0]);
    }
  } finally {
    await claims.sql.end();
    await settles.sql.end();
    await db.drop();
  }
});

Deno.test("the paid path's connection never compiles a plan with JIT", async () => {
  const db = await createTestDatabase();
  // As the service's paid-path connection is (service.ts). A statement there that must scan
  // somewhere carries enable_seqscan's disable cost (10^10), far above jit_above_cost: with JIT
  // on, PostgreSQL compiled it with LLVM first. postgres.js's own first statement on a connection
  // (its array types, read from pg_type by a scan) made the first paid call after each start
  // wait ~300 ms. Where the server has no JIT, there is nothing to compile either way.
  const sql = createSql(db.url, { max: 1, name: "paid", settings: NO_TABLE_SCANS });
  try {
    await sql`create temporary table must_scan (x int)`;
    const [plan] = await sql<{ "QUERY PLAN": unknown }[]>`
      explain (analyze, format json) select count(*) from must_scan`;
    const text = JSON.stringify(plan["QUERY PLAN"]);
    assert.match(text, /"Node Type":"Seq Scan"/, text);
    assert.doesNotMatch(text, /"JIT"/, text);
  } finally {
    await sql.end();
    await db.drop();
  }
});
