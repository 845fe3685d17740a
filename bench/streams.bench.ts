/**
 * Streams: `GET /api/payments/stream` for one merchant with 10,000 streams (auth, the query,
 * derived values and metrics for every row, JSON), p50/p99 over sequential requests, beside the
 * same query as a bare SQL select in the same run.
 */
import { startTestService } from "../tests/helpers/service.ts";
import { createMerchant } from "../tests/helpers/accounts.ts";
import { percentile } from "./report.ts";

const STREAMS = Number(Deno.env.get("BENCH_STREAMS") ?? "10000");
const ROUNDS = Number(Deno.env.get("BENCH_ROUNDS") ?? "30");

export async function run() {
  const svc = await startTestService({ env: { RATE_LIMITS: "off" } });
  try {
    const m = await createMerchant(svc);
    const sql = svc.db.sql;
    const [{ id: walletId }] = await sql<{ id: string }[]>`
      select wallet_id as id from merchant_wallets where merchant_id = ${m.id} limit 1`;
    const t0 = performance.now();
    // Rows as the service writes them: a third ACTIVE, STOPPED and COMPLETED each.
    await sql`
      insert into streams (merchant_id, reference, profile, chain_id, sender_wallet_id, sender_sca,
        receiver_sca, rate, deposit, withdrawn, status, contract_address, tx_hash, started_at,
        ends_at, stopped_at, webhook_url, created_at)
      select ${m.id}, 'stream_bench_' || g, 'production', 5042, ${walletId},
        ${m.walletAddress!.toLowerCase()}, '0x' || lpad(to_hex(g), 40, '0'), 1000 + g, 10000000,
        case when g % 3 = 0 then 0 else 5000000 end,
        (array['ACTIVE', 'STOPPED', 'COMPLETED'])[g % 3 + 1], '0x' || repeat('ab', 20),
        '0x' || lpad(to_hex(g), 64, '0'), ${svc.clock.now()}::timestamptz - g * interval '1 second',
        ${svc.clock.now()}::timestamptz + interval '1 hour',
        case when g % 3 = 0 then null else ${svc.clock.now()}::timestamptz end, null, now()
      from generate_series(1, ${STREAMS}) g`;
    console.log(`seeded ${STREAMS} streams in ${(performance.now() - t0).toFixed(0)} ms`);

    const api: number[] = [];
    let bytes = 0;
    for (let i = 0; i < ROUNDS + 3; i++) {
      const s = performance.now();
      const res = await fetch(`${svc.baseUrl}/api/payments/stream`, {
        headers: { "x-api-key": m.apiKey },
      });
      const text = await res.text();
      if (res.status !== 200) throw new Error(`GET /api/payments/stream: ${res.status} ${text}`);
      if (i >= 3) api.push(performance.now() - s); // 3 warm-up requests
      bytes = text.length;
      const n = (JSON.parse(text).streams as unknown[]).length;
      if (n !== STREAMS) throw new Error(`expected ${STREAMS} streams, got ${n}`);
    }
    const bare: number[] = [];
    for (let i = 0; i < ROUNDS + 3; i++) {
      const s = performance.now();
      // The repo's list query, unfiltered, with the same columns and order.
      await sql`
        select id, merchant_id, reference, profile, chain_id, sender_wallet_id, sender_sca,
          receiver_sca, rate, deposit, withdrawn, status, contract_address, tx_hash, started_at,
          ends_at, stopped_at, stop_tx_hash, webhook_url, created_at
        from streams where merchant_id = ${m.id} order by started_at desc, seq desc`;
      if (i >= 3) bare.push(performance.now() - s);
    }
    const fmt = (xs: number[]) =>
      `p50 ${percentile(xs, 50).toFixed(1)} ms  p99 ${percentile(xs, 99).toFixed(1)} ms`;
    const ratio = percentile(api, 50) / percentile(bare, 50);
    console.log(
      `${"GET /api/payments/stream (10k streams)".padEnd(44)} ${fmt(api)}  (${ROUNDS} requests, ${
        (bytes / 1024).toFixed(0)
      } KiB each)  ${ratio.toFixed(2)}× the bare select's p50`,
    );
    console.log(`${"bare SQL select, same query".padEnd(44)} ${fmt(bare)}  (${ROUNDS} queries)`);
  } finally {
    await svc.close();
  }
}
