/**
 * What is accepted and not yet on chain, for sellers, payers, the dashboard and /metrics: the
 * gateway-balance charges (x402.batched.*) and the batch-settlement scheme's channel charges
 * (x402.channels.*), pending until a settlement batch or a channel claim carries them.
 */
import type { Db } from "../../db/client.ts";
import type { Deps } from "../../deps.ts";
import { formatUsdcFixed as usdc } from "../../money.ts";
import { openCharges } from "./x402.batched.repo.ts";

/** An address's pending amounts in base units: owed to it (incoming), promised by it (outgoing). */
export async function pendingUnits(sql: Db, chainId: number, address: string) {
  const a = address.toLowerCase();
  const [row] = await sql<{ incoming: bigint; outgoing: bigint }[]>`
    select
      (select coalesce(sum(amount), 0) from ${openCharges(sql, chainId)}
        where payee = ${a} and status = 'pending') +
      (select coalesce(sum(least(c.charged, c.balance) - c.claimed), 0) from x402_channels c
        where c.chain_id = ${chainId} and c.receiver = ${a} and c.charged > c.claimed)
        as incoming,
      (select coalesce(sum(amount), 0) from ${openCharges(sql, chainId)} where payer = ${a})
        as outgoing`;
  return { incoming: BigInt(row.incoming), outgoing: BigInt(row.outgoing) };
}

/** An address's pending amounts, as USDC decimals. */
export async function pendingOf(sql: Db, chainId: number, address: string) {
  const p = await pendingUnits(sql, chainId, address);
  return { incoming: usdc(p.incoming), outgoing: usdc(p.outgoing) };
}

export interface SettlementView {
  pending: { kind: "gateway" | "channel"; count: number; amount: string }[];
  charges: {
    createdAt: string;
    listingSlug: string | null;
    payer: string;
    amount: string;
    status: string;
    txHash: string | null;
  }[];
  batches: {
    kind: "gateway batch" | "channel claim";
    createdAt: string;
    status: string;
    payments: number;
    txHash: string | null;
  }[];
}

/** The merchant's pending charges (both kinds), its latest charges, and the batches that carry them. */
export async function merchantSettlement(sql: Db, merchantId: string): Promise<SettlementView> {
  const [pending, charges, batches] = await Promise.all([
    sql<{ kind: "gateway" | "channel"; count: number; amount: bigint }[]>`
      select 'gateway' as kind, count(*)::int as count, coalesce(sum(amount), 0)::bigint as amount
      from ${openCharges(sql)} where merchant_id = ${merchantId} and status = 'pending'
      union all
      select 'channel', count(*)::int, coalesce(sum(g.amount), 0)::bigint
      from x402_channel_charges g join x402_channels c using (channel_id)
      where g.merchant_id = ${merchantId} and g.cumulative > c.claimed`,
    sql<
      {
        createdAt: Date;
        listingSlug: string | null;
        payer: string;
        amount: bigint;
        status: string;
        txHash: string | null;
      }[]
    >`
      select created_at, listing_slug, payer, amount, status, tx_hash from x402_gateway_charges
      where merchant_id = ${merchantId} and status <> 'reserved'
      order by created_at desc limit 20`,
    sql<
      {
        kind: "gateway batch" | "channel claim";
        createdAt: Date;
        status: string;
        payments: number;
        txHash: string | null;
      }[]
    >`
      select * from (
        (select 'gateway batch' as kind, b.created_at, b.status, m.payments, b.tx_hash
        from x402_gateway_batch_merchants m join x402_gateway_batches b on b.id = m.batch_id
        where m.merchant_id = ${merchantId}
        order by m.created_at desc limit 10)
        union all
        select 'channel claim', k.created_at, k.status, k.charges, k.tx_hash
        from x402_channel_claims k
        where k.kind = 'claim' and exists (
          select 1 from x402_channel_claim_rows r join x402_channels ch using (channel_id)
          where r.claim_id = k.id and ch.merchant_id = ${merchantId})
      ) x order by created_at desc limit 10`,
  ]);
  return {
    pending: pending.map((p) => ({ kind: p.kind, count: p.count, amount: usdc(BigInt(p.amount)) })),
    charges: charges.map((c) => ({
      createdAt: c.createdAt.toISOString(),
      listingSlug: c.listingSlug,
      payer: c.payer,
      amount: usdc(c.amount),
      status: c.status,
      txHash: c.txHash,
    })),
    batches: batches.map((b) => ({ ...b, createdAt: b.createdAt.toISOString() })),
  };
}

/** For /metrics: charges waiting per kind, the oldest one's age, the latest batches' size. */
export async function settlementStats(deps: Pick<Deps, "sql">) {
  const [row] = await deps.sql<
    {
      gatewayPending: number;
      channelPending: number;
      oldestSeconds: number | null;
      lastBatchSize: number | null;
      lastLagSeconds: number | null;
    }[]
  >`
    select
      (select count(*)::int from ${openCharges(deps.sql)} where status = 'pending')
        as gateway_pending,
      (select count(*)::int from x402_channel_charges g join x402_channels c using (channel_id)
        where g.cumulative > c.claimed) as channel_pending,
      (select extract(epoch from now() - min(served_at))::float8 from ${openCharges(deps.sql)}
        where status = 'pending') as oldest_seconds,
      (select size from x402_gateway_batches where status = 'confirmed'
        order by finished_at desc limit 1) as last_batch_size,
      (select extract(epoch from max(c.settled_at - c.served_at))::float8
        from (select charge_ids, id from x402_gateway_batches where status = 'confirmed'
          order by finished_at desc limit 1) b
        cross join unnest(b.charge_ids) as i(id)
        join x402_gateway_charges c on c.id = i.id and c.batch_id = b.id) as last_lag_seconds`;
  return row;
}
