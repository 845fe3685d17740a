/** The development mailbox: mail kept in the database when no SMTP server is configured. */
import type { Db } from "../../db/client.ts";
import type { DevMail } from "./mail.types.ts";

/** Stores one mail; a second insert with the same id (a redelivered job) is ignored. */
export async function insertDevMail(
  sql: Db,
  mail: {
    id: string;
    to: string;
    subject: string;
    text: string;
    html?: string;
    createdAt: Date;
  },
): Promise<void> {
  await sql`
    insert into dev_mailbox (id, to_address, subject, text_body, html_body, created_at)
    values (${mail.id}, ${mail.to}, ${mail.subject}, ${mail.text}, ${mail.html ?? null},
            ${mail.createdAt})
    on conflict (id) do nothing`;
}

/** Newest first; `to` filters by recipient, case-insensitively. */
export async function listDevMail(
  sql: Db,
  opts: { to?: string; limit: number },
): Promise<DevMail[]> {
  const filter = opts.to ? sql`where lower(to_address) = lower(${opts.to})` : sql``;
  return await sql<DevMail[]>`
    select id, to_address, subject, text_body, html_body, created_at
    from dev_mailbox ${filter}
    order by created_at desc, id
    limit ${opts.limit}`;
}

export async function getDevMail(sql: Db, id: string): Promise<DevMail | undefined> {
  const rows = await sql<DevMail[]>`
    select id, to_address, subject, text_body, html_body, created_at
    from dev_mailbox where id = ${id}`;
  return rows[0];
}
