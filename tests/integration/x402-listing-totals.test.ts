/**
 * A listing's totals of calls paid through batch-settlement channels (x402.totals.repo.ts,
 * migration 0036), against a real PostgreSQL: a channel's calls count once its claimed total
 * passes them, whoever raised it (our confirmed claim, or a read of the chain) and however many
 * count at once.
 */
import assert from "node:assert/strict";
import { createTestDatabase } from "../helpers/db.ts";
import type { Db } from "../../src/db/client.ts";
import { createSql } from "../../src/db/client.ts";
import { mirror } from "../../src/modules/x402/x402.channels.repo.ts";
import {
  catchUpBatches,
  catchUpChannels,
  countClaimed,
} from "../../src/modules/x402/x402.totals.repo.ts";
import { mirrorBalance, testCharge } from "../helpers/x402-charges.ts";
import { confirmClaim, createClaim } from "../../src/modules/x402/x402.channels.claims.repo.ts";
import {
  createBatch,
  merchantOpen,
  reserveMany,
  serveMany,
} from "../../src/modules/x402/x402.batched.repo.ts";

const CHAIN = 31337;
const ADDR = "0x" + "5".repeat(40);

/** A merchant and (with `slug`) a listing of 10 base units a call. */
async function seller(sql: Db, name: string, slug?: string) {
  const [m] = await sql`insert into merchants (email, business_name, password_hash)
    values (${`${name}@example.com`}, ${name}, 'x') returning id`;
  if (!slug) return { merchant: m.id as string, listing: null };
  const [l] = await sql`insert into x402_listings (merchant_id, slug, upstream_url, price,
      methods, seller, chain_id, created_at)
    values (${m.id}, ${slug}, 'http://upstream.test/', 10, '{GET}', ${ADDR}, ${CHAIN}, now())
    returning id`;
  return { merchant: m.id as string, listing: l.id as string };
}

/**
 * A channel of the merchant's with calls of 10 each (cumulative 10, 20, …), charged and signed
 * for all of them; `listing(i)`: the listing of call i (1-based), if any.
 */
async function channelWithCalls(
  sql: Db,
  c: { id: string; merchant: string; calls: number; listing: (i: number) => string | null },
) {
  await sql`insert into x402_channels (channel_id, chain_id, merchant_id, payer,
      payer_authorizer, receiver, receiver_authorizer, token, withdraw_delay, salt, created_at,
      charged, signed_max, balance)
    values (${c.id}, ${CHAIN}, ${c.merchant}, ${ADDR}, ${ADDR}, ${ADDR}, ${ADDR}, ${ADDR}, 900,
      ${"0x" + "0".repeat(64)}, now(), ${10 * c.calls}, ${10 * c.calls}, 1000)`;
  for (let i = 1; i <= c.calls; i++) {
    await sql`insert into x402_channel_charges (channel_id, listing_id, merchant_id, amount,
        cumulative, created_at)
      values (${c.id}, ${c.listing(i)}, ${c.merchant}, 10, ${10 * i}, now())`;
  }
}

/** The listing's totals: [calls, failed, revenue]. */
async function totalsOf(sql: Db, listing: string | null) {
  const [t] = await sql`select calls::int, failed::int, revenue from x402_listing_totals
    where listing_id = ${listing}`;
  return t ? [t.calls, t.failed, BigInt(t.revenue)] : [0, 0, 0n];
}

Deno.test("x402 listing totals: a channel's calls count once its claimed total passes them", async () => {
  const db = await createTestDatabase();
  const { sql } = db;
  const other = createSql(db.url, { max: 1, name: "second-counter" });
  try {
    const now = new Date();
    const { merchant, listing } = await seller(sql, "channel-totals", "channel-totals");
    const channelId = "0x" + "ab".repeat(32);
    // Five calls of 10 (cumulative 10..50), one of them not through the listing (the facilitator).
    await channelWithCalls(sql, {
      id: channelId,
      merchant,
      calls: 5,
      listing: (i) => i === 3 ? null : listing,
    });
    const totals = async () => {
      const [calls, , revenue] = await totalsOf(sql, listing);
      return [calls, revenue];
    };
    const state = (totalClaimed: bigint) => ({
      balance: 100n,
      totalClaimed,
      withdrawRequestedAt: 0,
      refundNonce: 0n,
    });

    // The chain says 20 were claimed (a claim we have no record of): the first two calls.
    await mirror(sql, channelId, state(20n), now);
    assert.deepEqual(await totals(), [2, 20n]);
    // Read again: nothing new.
    await mirror(sql, channelId, state(20n), now);
    assert.deepEqual(await totals(), [2, 20n]);
    // A stale read lowers `claimed` for a while: nothing is taken back, nothing counted twice.
    await mirror(sql, channelId, state(10n), now);
    assert.deepEqual(await totals(), [2, 20n]);
    // A claim to 50 confirmed while another counter runs beside it: calls 4 and 5 (3 is no
    // listing's), once.
    await sql`update x402_channels set claimed = 50 where channel_id = ${channelId}`;
    await Promise.all([countClaimed(sql, [channelId]), countClaimed(other, [channelId])]);
    assert.deepEqual(await totals(), [4, 40n]);
    const [ch] = await sql`select counted from x402_channels where channel_id = ${channelId}`;
    assert.equal(ch.counted, 50n);
  } finally {
    await other.end({ timeout: 1 });
    await db.drop();
  }
});

Deno.test("x402 listing totals: a claim over two sellers' channels shows each its own payments", async () => {
  const db = await createTestDatabase();
  const { sql } = db;
  try {
    const now = new Date();
    const sellers: { merchant: string; channel: string }[] = [];
    for (const [i, calls] of [3, 7].entries()) {
      const { merchant } = await seller(sql, `seller-${i}`);
      const channel = "0x" + String(i + 1).repeat(64);
      await channelWithCalls(sql, { id: channel, merchant, calls, listing: () => null });
      sellers.push({ merchant, channel });
    }
    const claim = async (totals: number[], at: Date) => {
      const id = crypto.randomUUID();
      await createClaim(sql, {
        id,
        chainId: CHAIN,
        kind: "claim",
        rows: sellers.map((s, i) => ({
          channelId: s.channel,
          maxClaimable: BigInt(totals[i]),
          signature: "0x",
          totalClaimed: BigInt(totals[i]),
        })),
        now: at,
      });
      await confirmClaim(sql, { id, txHash: "0x" + "ab".repeat(32), gasUsed: null, now });
    };
    const payments = async (i: number) =>
      (await merchantOpen(sql, sellers[i].merchant)).batches.map((b) => [b.kind, b.payments]);
    // One claim collects 2 of the first seller's calls and 5 of the second's.
    await claim([20, 50], new Date(now.getTime() + 1000));
    assert.deepEqual(await payments(0), [["channel claim", 2]]);
    assert.deepEqual(await payments(1), [["channel claim", 5]]);
    // The next one the rest: 1 and 2, not counted again from the start.
    await claim([30, 70], new Date(now.getTime() + 2000));
    assert.deepEqual(await payments(0), [["channel claim", 1], ["channel claim", 2]]);
    assert.deepEqual(await payments(1), [["channel claim", 2], ["channel claim", 5]]);
  } finally {
    await db.drop();
  }
});

Deno.test("x402 listing totals: what an earlier release's process settled is caught up once", async () => {
  const db = await createTestDatabase();
  const { sql } = db;
  try {
    const now = new Date();
    const { merchant, listing } = await seller(sql, "rolling", "rolling");
    const totals = () => totalsOf(sql, listing);
    const payer = "0x" + "e".repeat(40);
    await mirrorBalance(sql, payer, 1000n, now);
    const charges = [1, 2, 3].map(() =>
      testCharge(payer, now, { listingId: listing, merchantId: merchant })
    );
    await reserveMany(sql, charges, new Date(now.getTime() - 60_000), now);
    await serveMany(sql, charges.map((c) => ({ id: c.id, upstreamStatus: 200 })), now);
    const id = crypto.randomUUID();
    assert.equal(await createBatch(sql, { id, chainId: CHAIN, max: 10, now }), 3);
    // Confirmed as the release before totals did it: its charges settled (one refused), the
    // batch confirmed, nothing added to the listing.
    await sql`update x402_gateway_charges set status = case when id = ${charges[0].id}
        then 'failed' else 'settled' end, batch_id = ${id}, tx_hash = ${"0x" + "1".repeat(64)}
      where id = any(${charges.map((c) => c.id)}::uuid[])`;
    await sql`update x402_gateway_batches set status = 'confirmed' where id = ${id}`;
    assert.deepEqual(await totals(), [0, 0, 0n]);
    assert.equal(await catchUpBatches(sql, CHAIN), 1);
    assert.deepEqual(await totals(), [2, 1, 20n]);
    assert.equal(await catchUpBatches(sql, CHAIN), 0, "counted once");
    assert.deepEqual(await totals(), [2, 1, 20n]);

    // A channel's claim confirmed by that release: claimed raised, nothing counted.
    const channelId = "0x" + "cd".repeat(32);
    await channelWithCalls(sql, { id: channelId, merchant, calls: 2, listing: () => listing });
    await sql`update x402_channels set claimed = 20 where channel_id = ${channelId}`;
    assert.equal(await catchUpChannels(sql, CHAIN), 1);
    assert.deepEqual(await totals(), [4, 1, 40n]);
    assert.equal(await catchUpChannels(sql, CHAIN), 0);
  } finally {
    await db.drop();
  }
});
