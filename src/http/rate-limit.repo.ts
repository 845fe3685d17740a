/** SQL for rate limits: fixed-window counters and per-merchant overrides. */
import type { Db } from "../db/client.ts";

/**
 * Counts one hit and returns the window's count with the merchant's override for the bucket
 * (null without one), in one statement: one round trip per hit, and an operator's change to an
 * override applies to the very next request with no cache to expire.
 */
export async function countHit(
  sql: Db,
  hit: { bucket: string; subject: string; windowStart: Date; merchantId: string | null },
): Promise<{ count: number; override: number | null }> {
  const [row] = await sql<{ count: number; override: number | null }[]>`
    with hit as (
      insert into rate_limit_counters as c (bucket, subject, window_start, count)
      values (${hit.bucket}, ${hit.subject}, ${hit.windowStart}, 1)
      on conflict (bucket, subject, window_start) do update set count = c.count + 1
      returning c.count
    )
    select hit.count,
           (select o.per_minute from rate_limit_overrides o
            where o.merchant_id = ${hit.merchantId}::uuid and o.bucket = ${hit.bucket}) as override
    from hit`;
  return row;
}

/**
 * Counts one hit in each of several buckets for one subject, in one statement (a request
 * counts in its general bucket and its group's): one round trip however many buckets.
 */
export async function countHits(
  sql: Db,
  hit: { buckets: string[]; subject: string; windowStart: Date; merchantId: string | null },
): Promise<Array<{ bucket: string; count: number; override: number | null }>> {
  return await sql<{ bucket: string; count: number; override: number | null }[]>`
    with hit as (
      insert into rate_limit_counters as c (bucket, subject, window_start, count)
      select b, ${hit.subject}, ${hit.windowStart}, 1 from unnest(${hit.buckets}::text[]) as b
      on conflict (bucket, subject, window_start) do update set count = c.count + 1
      returning c.bucket, c.count
    )
    select hit.bucket, hit.count,
           (select o.per_minute from rate_limit_overrides o
            where o.merchant_id = ${hit.merchantId}::uuid and o.bucket = hit.bucket) as override
    from hit`;
}

export async function setOverride(
  sql: Db,
  merchantId: string,
  bucket: string,
  perMinute: number,
): Promise<void> {
  await sql`
    insert into rate_limit_overrides (merchant_id, bucket, per_minute)
    values (${merchantId}, ${bucket}, ${perMinute})
    on conflict (merchant_id, bucket) do update set per_minute = excluded.per_minute`;
}

export async function deleteOverride(sql: Db, merchantId: string, bucket: string): Promise<void> {
  await sql`delete from rate_limit_overrides where merchant_id = ${merchantId} and bucket = ${bucket}`;
}

/** Deletes windows that started before `before`; returns how many rows went. */
export async function deleteWindowsBefore(sql: Db, before: Date): Promise<number> {
  const result = await sql`delete from rate_limit_counters where window_start < ${before}`;
  return result.count;
}
