/** SQL for consumer accounts. */
import type { Db } from "../../db/client.ts";

export interface ConsumerRow {
  id: string;
  walletType: "MANAGED" | "EXTERNAL";
  walletAddress: string;
  managedWalletId: string | null;
  createdAt: Date;
  lastSeenAt: Date;
}

export async function insertManaged(
  sql: Db,
  f: { walletAddress: string; managedWalletId: string; now: Date },
): Promise<ConsumerRow> {
  const [row] = await sql<ConsumerRow[]>`
    insert into consumers (wallet_type, wallet_address, managed_wallet_id, created_at, last_seen_at)
    values ('MANAGED', ${f.walletAddress}, ${f.managedWalletId}, ${f.now}, ${f.now})
    returning *`;
  return row;
}

/** The account of an external address: created on first connect, lastSeenAt updated after. */
export async function upsertExternal(sql: Db, address: string, now: Date): Promise<ConsumerRow> {
  const [row] = await sql<ConsumerRow[]>`
    insert into consumers (wallet_type, wallet_address, created_at, last_seen_at)
    values ('EXTERNAL', ${address}, ${now}, ${now})
    on conflict (wallet_address) where wallet_type = 'EXTERNAL'
    do update set last_seen_at = excluded.last_seen_at
    returning *`;
  return row;
}

export async function findById(sql: Db, id: string): Promise<ConsumerRow | null> {
  const [row] = await sql<ConsumerRow[]>`select * from consumers where id = ${id}`;
  return row ?? null;
}
