/**
 * The paid path's group commit of reservations (x402.batched.repo.ts `reserveMany`), against a
 * real PostgreSQL: what one statement decides for a mixed group, and many groups from several
 * connection pools (as several processes) at once, racing settlements' confirmations, against
 * balances that run out: no overspend, every reservation counted once, no deadlock.
 */
import assert from "node:assert/strict";
import { createTestDatabase } from "../helpers/db.ts";
import { createSql } from "../../src/db/client.ts";
import {
  confirmBatch,
  createBatch,
  type NewCharge,
  release,
  reserveAndServe,
  reserveMany,
  serveMany,
  staleReserved,
} from "../../src/modules/x402/x402.batched.repo.ts";

const CHAIN = 31337;
const hex = (bytes: number) =>
  `0x${
    Array.from(
      crypto.getRandomValues(new Uint8Array(bytes)),
      (b) => b.toString(16).padStart(2, "0"),
    ).join("")
  }`;

function charge(payer: string, amount: bigint, now: Date, nonce = hex(32)): NewCharge {
  return {
    id: crypto.randomUUID(),
    chainId: CHAIN,
    listingId: null,
    listingSlug: "group",
    merchantId: null,
    payer,
    payee: "0x" + "5".repeat(40),
    amount,
    nonce,
    validAfter: 0n,
    validBefore: 4_000_000_000n,
    domain: "batched",
    signature: hex(65),
    agentId: null,
    owner: null,
    now,
  };
}

Deno.test("x402 reservations: a group in one statement", async (t) => {
  const db = await createTestDatabase();
  const { sql } = db;
  const now = new Date();
  const fresh = new Date(now.getTime() - 60_000);
  const account = async (payer: string, balance: bigint, syncedAt = now) => {
    await sql`insert into x402_gateway_accounts (chain_id, payer, balance, synced_block, synced_at)
      values (${CHAIN}, ${payer}, ${balance}, 1, ${syncedAt})`;
  };
  const held = async (payer: string) =>
    BigInt(
      (await sql`select held from x402_gateway_accounts where payer = ${payer}`)[0].held,
    );
  try {
    await t.step("fits in arrival order, used nonces, stale or missing mirrors", async () => {
      const [a, b, c, d] = ["a", "b", "c", "d"].map((x) => "0x" + x.repeat(40));
      await account(a, 25n);
      await account(b, 100n);
      await account(d, 100n, new Date(now.getTime() - 120_000));
      const used = charge(b, 10n, now);
      assert.equal((await reserveMany(sql, [used], fresh, now)).get(used.id), "reserved");
      // a: 10 + 10 fit in 25, the third does not, nor a fourth after it (never an overspend).
      const group = [
        charge(a, 10n, now),
        charge(b, 10n, now, used.nonce),
        charge(a, 10n, now),
        charge(c, 1n, now),
        charge(a, 10n, now),
        charge(b, 30n, now),
        charge(d, 1n, now),
        charge(a, 5n, now),
      ];
      const out = await reserveMany(sql, group, fresh, now);
      const got = group.map((g) => out.get(g.id) ?? "no_funds");
      assert.deepEqual(got, [
        "reserved",
        "used",
        "reserved",
        "no_funds",
        "no_funds",
        "reserved",
        "no_funds",
        "no_funds",
      ]);
      assert.equal(await held(a), 20n);
      assert.equal(await held(b), 40n, "the used nonce holds nothing");
      assert.equal(await held(d), 0n);
      const rows = await sql`
        select id from x402_gateway_charges where status = 'reserved' order by id`;
      assert.deepEqual(
        rows.map((r) => r.id).sort(),
        [used.id, group[0].id, group[2].id, group[5].id].sort(),
      );
    });

    await t.step("in flight until served: never batched, released when abandoned", async () => {
      const p = "0x" + "e".repeat(40);
      await account(p, 1_000n);
      const [served, failed, abandoned] = [1, 2, 3].map(() => charge(p, 10n, now));
      const out = await reserveMany(sql, [served, failed, abandoned], fresh, now);
      assert.deepEqual([...out.values()], ["reserved", "reserved", "reserved"]);
      const batch = () =>
        createBatch(sql, { id: crypto.randomUUID(), chainId: CHAIN, max: 10, now });
      assert.equal(await batch(), 0, "nothing is owed while the upstreams are in flight");
      await serveMany(sql, [{ id: served.id, upstreamStatus: 200 }], now);
      const [row] = await sql`select status, served_at, upstream_status
        from x402_gateway_charges where id = ${served.id}`;
      assert.equal(row.status, "pending");
      assert.ok(row.servedAt);
      assert.equal(row.upstreamStatus, 200);
      const error = { error: "upstream: 503", upstreamStatus: 503, now };
      assert.equal(await release(sql, served.id, error), false, "a served charge is owed");
      assert.equal(await release(sql, failed.id, error), true);
      assert.equal(await batch(), 1, "the served charge alone");
      const later = new Date(now.getTime() + 1);
      const mine = new Set([served.id, failed.id, abandoned.id]);
      assert.deepEqual(
        (await staleReserved(sql, CHAIN, later)).filter((id) => mine.has(id)),
        [abandoned.id],
        "the abandoned one alone is in flight",
      );
      await serveMany(sql, [{ id: failed.id, upstreamStatus: 200 }], now);
      const [f] = await sql`select status, served_at from x402_gateway_charges
        where id = ${failed.id}`;
      assert.deepEqual({ ...f }, { status: "released", servedAt: null }, "released stays so");
      assert.equal(await held(p), 20n, "held: the served charge and the abandoned one");
    });

    await t.step("reservations and served marks in one statement", async () => {
      const p = "0x" + "f".repeat(40);
      await account(p, 30n);
      const earlier = [1, 2, 3].map(() => charge(p, 10n, now));
      await reserveMany(sql, earlier, fresh, now);
      const [released] = [earlier[2]];
      await release(sql, released.id, { error: "upstream: 502", upstreamStatus: 502, now });
      // Two served, one released meanwhile (its mark changes nothing), and a reservation that
      // does not fit: the marks are written whatever the reservations find.
      const late = charge(p, 25n, now);
      const marks = earlier.map((c, i) => ({ id: c.id, upstreamStatus: 200 + i }));
      const out = await reserveAndServe(sql, [late], marks, fresh, now);
      assert.equal(out.get(late.id), undefined, "no room: 30 less 20 held");
      const rows = await sql`select id, status, upstream_status from x402_gateway_charges
        where id in ${sql(earlier.map((c) => c.id))}`;
      const byId = new Map(rows.map((r) => [r.id, [r.status, r.upstreamStatus]]));
      assert.deepEqual(earlier.map((c) => byId.get(c.id)), [
        ["pending", 200],
        ["pending", 201],
        ["released", 502],
      ]);
      const fits = charge(p, 10n, now);
      const more = await reserveAndServe(sql, [fits], [], fresh, now);
      assert.equal(more.get(fits.id), "reserved");
      assert.equal(await held(p), 30n);
    });

    await t.step("several pools at once, balances running out, settlements racing", async () => {
      const PAYERS = 12;
      const PRICE = 7n;
      const CAPACITY = 40n;
      const payers = Array.from(
        { length: PAYERS },
        (_, i) => `0x${i.toString(16).padStart(40, "e")}`,
      );
      for (const p of payers) await account(p, CAPACITY * PRICE);
      const pools = Array.from(
        { length: 4 },
        (_, i) => createSql(db.url, { max: 4, name: `p${i}` }),
      );
      const won = new Map<string, bigint>(payers.map((p) => [p, 0n]));
      const reservedIds: string[] = [];
      try {
        // 4 pools × 4 connections × 12 rounds of groups of 24 (random payers, random order):
        // 4,608 attempts on 480 calls' worth.
        await Promise.all(pools.flatMap((pool) =>
          Array.from({ length: 4 }, async () => {
            for (let round = 0; round < 12; round++) {
              const group = Array.from(
                { length: 24 },
                () => charge(payers[Math.floor(Math.random() * PAYERS)], PRICE, new Date()),
              );
              const out = await reserveMany(pool, group, fresh, new Date());
              for (const g of group) {
                if (out.get(g.id) === "reserved") {
                  won.set(g.payer, won.get(g.payer)! + g.amount);
                  reservedIds.push(g.id);
                }
              }
              // Now and then a settlement confirms what is pending, locking payers' rows in
              // its own transaction (held and balance both lowered).
              if (round % 4 === 3) {
                const pending = await pool<{ id: string }[]>`
                  update x402_gateway_charges set status = 'pending'
                  where id in (select id from x402_gateway_charges where status = 'reserved'
                    order by random() limit 30 for update skip locked)
                  returning id`;
                if (pending.length) {
                  await confirmBatch(pool, {
                    id: crypto.randomUUID(),
                    txHash: hex(32),
                    block: 10n,
                    gasUsed: null,
                    paid: pending.map((p) => ({ id: p.id, txHash: hex(32), block: 10n })),
                    refused: [],
                    now: new Date(),
                  });
                }
              }
            }
          })
        ));
      } finally {
        await Promise.all(pools.map((p) => p.end({ timeout: 1 })));
      }
      for (const p of payers) {
        assert.equal(won.get(p), CAPACITY * PRICE, `${p} reserved exactly its balance`);
        const [row] = await sql`
          select a.balance, a.held,
            (select coalesce(sum(amount), 0) from x402_gateway_charges
              where payer = a.payer and status = 'reserved')::bigint as open,
            (select coalesce(sum(amount), 0) from x402_gateway_charges
              where payer = a.payer and status = 'settled')::bigint as settled
          from x402_gateway_accounts a where a.payer = ${p}`;
        assert.equal(BigInt(row.held), BigInt(row.open), "the hold is what is still open");
        assert.equal(
          BigInt(row.balance) + BigInt(row.settled),
          CAPACITY * PRICE,
          "the balance lost what was settled",
        );
      }
      const [n] = await sql`select count(*)::int as n from x402_gateway_charges
        where payer = any(${payers}) and status in ('reserved', 'settled')`;
      assert.equal(n.n, reservedIds.length);
      assert.equal(new Set(reservedIds).size, reservedIds.length);
    });
  } finally {
    await db.drop();
  }
});
