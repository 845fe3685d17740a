/**
 * `POST /api/x402/pay`'s group commits (x402.repo.ts `claimGatewayAttempts`, `settleAttempts`),
 * against a real PostgreSQL: what one claim statement decides for a mixed group, what one settle
 * statement writes, and many groups from several connection pools (as several processes) at once
 * against balances that run out: no overspend, every claim counted once, holds given back once,
 * no deadlock.
 */
import assert from "node:assert/strict";
import { createTestDatabase } from "../helpers/db.ts";
import { createSql } from "../../src/db/client.ts";
import {
  claimGatewayAttempt,
  claimGatewayAttempts,
  finishAttempt,
  type NewAttempt,
  settleAttempts,
} from "../../src/modules/x402/x402.repo.ts";

const CHAIN = 31337;
const hex = (bytes: number) =>
  `0x${
    Array.from(
      crypto.getRandomValues(new Uint8Array(bytes)),
      (b) => b.toString(16).padStart(2, "0"),
    ).join("")
  }`;

function attempt(payer: string, amount: bigint, now: Date, nonce = hex(32)): NewAttempt {
  return {
    listingId: null,
    listingSlug: "group",
    merchantId: null,
    scheme: "gateway",
    chainId: CHAIN,
    payer,
    payee: "0x" + "5".repeat(40),
    amount,
    nonce,
    validAfter: 0n,
    validBefore: 4_000_000_000n,
    agentId: null,
    owner: null,
    now,
  };
}

const withIds = (as: NewAttempt[]) => as.map((a) => ({ ...a, id: crypto.randomUUID() }));

Deno.test("x402 pay: claims and settlements in groups", async (t) => {
  const db = await createTestDatabase();
  const { sql } = db;
  const now = new Date();
  const fresh = new Date(now.getTime() - 60_000);
  const account = async (
    payer: string,
    balance: bigint,
    opts: { syncedAt?: Date; withdrawingUntil?: Date } = {},
  ) => {
    await sql`insert into x402_gateway_accounts (chain_id, payer, balance, synced_block,
        synced_at, withdrawing_until)
      values (${CHAIN}, ${payer}, ${balance}, 1, ${opts.syncedAt ?? now},
        ${opts.withdrawingUntil ?? null})`;
  };
  const mirror = async (payer: string) => {
    const [row] = await sql`select balance, held from x402_gateway_accounts
      where chain_id = ${CHAIN} and payer = ${payer}`;
    return { balance: BigInt(row.balance), held: BigInt(row.held) };
  };
  try {
    await t.step(
      "one claim statement: arrival order, used nonces, stale or held mirrors",
      async () => {
        const [a, b, c, d, e] = ["a", "b", "c", "d", "e"].map((x) => "0x" + x.repeat(40));
        await account(a, 25n);
        await account(b, 100n);
        await account(d, 100n, { syncedAt: new Date(now.getTime() - 120_000) });
        await account(e, 100n, { withdrawingUntil: new Date(now.getTime() + 60_000) });
        const used = attempt(b, 10n, now);
        assert.notEqual(typeof await claimGatewayAttempt(sql, used, fresh), "string");
        // a: 10 + 10 fit in 25, the third does not, nor a fourth after it (never an overspend).
        const twice = hex(32);
        const group = withIds([
          attempt(a, 10n, now),
          attempt(b, 10n, now, used.nonce),
          attempt(a, 10n, now),
          attempt(c, 1n, now),
          attempt(a, 10n, now),
          attempt(b, 30n, now, twice),
          attempt(d, 1n, now),
          attempt(a, 5n, now),
          attempt(e, 1n, now),
          attempt(b, 30n, now, twice),
        ]);
        const out = await claimGatewayAttempts(sql, group, fresh, now);
        const got = group.map((g) => {
          const r = out.get(g.id) ?? "no_funds";
          return typeof r === "string" ? r : r.status;
        });
        assert.deepEqual(got, [
          "PENDING",
          "used",
          "PENDING",
          "no_funds", // no mirror
          "no_funds",
          "PENDING",
          "no_funds", // stale mirror
          "no_funds",
          "no_funds", // a withdrawal in flight
          "used", // the same (payer, nonce) earlier in this statement
        ]);
        const first = out.get(group[0].id);
        assert.ok(first && typeof first !== "string");
        assert.equal(first.payer, a);
        assert.equal(first.amount, 10n);
        assert.equal(first.scheme, "gateway");
        assert.equal((await mirror(a)).held, 20n);
        assert.equal((await mirror(b)).held, 40n, "the used nonce holds nothing");
        assert.equal((await mirror(d)).held, 0n);
        assert.equal((await mirror(e)).held, 0n);
        const [n] = await sql`select count(*)::int as n from x402_payments
        where payer in (${a}, ${b}) and status = 'PENDING'`;
        assert.equal(n.n, 4, "the first claim and the three that fit");
      },
    );

    await t.step(
      "one settle statement: SUCCESS with its transaction, holds given back once",
      async () => {
        const p = "0x" + "f".repeat(40);
        await account(p, 100n);
        const group = withIds([attempt(p, 10n, now), attempt(p, 20n, now), attempt(p, 30n, now)]);
        const out = await claimGatewayAttempts(sql, group, fresh, now);
        const ids = group.map((g) => {
          const r = out.get(g.id);
          assert.ok(r && typeof r !== "string");
          return r.id;
        });
        assert.deepEqual(await mirror(p), { balance: 100n, held: 60n });
        // The third ended FAILED meanwhile (its hold given back there): settling it again must not
        // give the hold back twice.
        await finishAttempt(sql, ids[2], { status: "FAILED", error: "test", now });
        assert.deepEqual(await mirror(p), { balance: 100n, held: 30n });
        const tx = hex(32);
        const rows = await settleAttempts(
          sql,
          ids.map((id, i) => ({ id, upstreamStatus: 200 + i, txHash: tx })),
          now,
        );
        assert.deepEqual(
          rows.map((r) => [r.id, r.status, r.txHash, r.upstreamStatus]).sort(),
          ids.map((id, i) => [id, "SUCCESS", tx, 200 + i]).sort(),
        );
        assert.ok(rows.every((r) => r.settledAt !== null));
        assert.deepEqual(
          await mirror(p),
          { balance: 70n, held: 0n },
          "the two that were PENDING",
        );
        await settleAttempts(sql, [{ id: ids[0], upstreamStatus: 200, txHash: tx }], now);
        assert.deepEqual(await mirror(p), { balance: 70n, held: 0n }, "once only");
      },
    );

    await t.step("several pools at once, balances running out, settlements racing", async () => {
      const PAYERS = 10;
      const PRICE = 7n;
      const CAPACITY = 30n;
      const payers = Array.from(
        { length: PAYERS },
        (_, i) => `0x${i.toString(16).padStart(40, "c")}`,
      );
      for (const p of payers) await account(p, CAPACITY * PRICE);
      const pools = Array.from(
        { length: 4 },
        (_, i) => createSql(db.url, { max: 4, name: `p${i}` }),
      );
      const won = new Map<string, bigint>(payers.map((p) => [p, 0n]));
      const claimed: string[] = [];
      try {
        // 4 pools × 4 connections × 10 rounds of groups of 16 (random payers): 2,560 attempts
        // on 300 calls' worth; each round settles what it claimed, in one statement.
        await Promise.all(pools.flatMap((pool) =>
          Array.from({ length: 4 }, async () => {
            for (let round = 0; round < 10; round++) {
              const group = withIds(Array.from(
                { length: 16 },
                () => attempt(payers[Math.floor(Math.random() * PAYERS)], PRICE, new Date()),
              ));
              const out = await claimGatewayAttempts(pool, group, fresh, new Date());
              const mine: string[] = [];
              group.forEach((g) => {
                const r = out.get(g.id);
                if (r && typeof r !== "string") {
                  won.set(g.payer, won.get(g.payer)! + g.amount);
                  mine.push(r.id);
                }
              });
              claimed.push(...mine);
              if (mine.length) {
                await settleAttempts(
                  pool,
                  mine.map((id) => ({ id, upstreamStatus: 200, txHash: hex(32) })),
                  new Date(),
                );
              }
            }
          })
        ));
      } finally {
        await Promise.all(pools.map((p) => p.end({ timeout: 1 })));
      }
      for (const p of payers) {
        assert.equal(won.get(p), CAPACITY * PRICE, `${p} claimed exactly its balance`);
        assert.deepEqual(await mirror(p), { balance: 0n, held: 0n }, `${p}'s mirror`);
      }
      const [n] = await sql`select count(*)::int as n from x402_payments
        where payer = any(${payers}) and status = 'SUCCESS'`;
      assert.equal(n.n, claimed.length);
      assert.equal(new Set(claimed).size, claimed.length);
      assert.equal(claimed.length, PAYERS * Number(CAPACITY));
    });
  } finally {
    await db.drop();
  }
});
