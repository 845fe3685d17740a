/** Queue depth and the age of the oldest waiting job per queue, read from pg-boss's table. */
import type { Sql } from "../db/client.ts";
import { QUEUE_SCHEMA } from "./queue.ts";

export interface QueueStat {
  name: string;
  /** created, retry or active */
  state: string;
  n: number;
  oldestSeconds: number;
}

export async function queueStats(sql: Sql, schema = QUEUE_SCHEMA): Promise<QueueStat[]> {
  return await sql.unsafe<QueueStat[]>(
    `select name, state::text as state, count(*)::int as n,
            coalesce(extract(epoch from now() - min(created_on)), 0)::float8 as oldest_seconds
     from ${schema}.job
     where state in ('created', 'retry', 'active') and start_after <= now()
     group by name, state`,
  );
}
