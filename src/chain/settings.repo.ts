/** SQL for app_settings: small JSON values the chain module keeps between processes. */
import type { Db } from "../db/client.ts";

export async function putSetting(sql: Db, key: string, value: unknown): Promise<void> {
  await sql`
    insert into app_settings (key, value) values (${key}, ${sql.json(value as never)})
    on conflict (key) do update set value = excluded.value, updated_at = now()`;
}

export async function getSetting(sql: Db, key: string): Promise<unknown> {
  const [row] = await sql<{ value: unknown }[]>`select value from app_settings where key = ${key}`;
  return row?.value;
}

/** Deletes a setting and returns it: a value meant to be used once. */
export async function takeSetting(sql: Db, key: string): Promise<{ value: unknown } | undefined> {
  const [row] = await sql<{ value: unknown }[]>`
    delete from app_settings where key = ${key} returning value`;
  return row;
}
