/** SQL of the resource claims (src/db/claims.ts). Times are the database's clock. */
import type { Db } from "./client.ts";

/** Takes `resource` for `owner` unless a live claim holds it; true when taken. */
export async function tryClaim(
  sql: Db,
  resource: string,
  owner: string,
  ttlMs: number,
): Promise<boolean> {
  const rows = await sql`
    insert into resource_claims (resource, owner, claimed_at, expires_at)
    values (${resource}, ${owner}, clock_timestamp(),
            clock_timestamp() + make_interval(secs => ${ttlMs / 1000}))
    on conflict (resource) do update
      set owner = excluded.owner, claimed_at = excluded.claimed_at,
          expires_at = excluded.expires_at
      where resource_claims.expires_at < clock_timestamp()
    returning owner`;
  return rows.length === 1;
}

/** Gives `resource` back, if `owner` still holds it. */
export async function release(sql: Db, resource: string, owner: string): Promise<void> {
  await sql`delete from resource_claims where resource = ${resource} and owner = ${owner}`;
}

/** Moves a live claim's expiry on (a long action that is still working). */
export async function extend(
  sql: Db,
  resource: string,
  owner: string,
  ttlMs: number,
): Promise<boolean> {
  const rows = await sql`
    update resource_claims
      set expires_at = clock_timestamp() + make_interval(secs => ${ttlMs / 1000})
    where resource = ${resource} and owner = ${owner} returning resource`;
  return rows.length === 1;
}

/** Deletes lapsed claims (housekeeping; a lapsed claim is taken over anyway). */
export async function deleteLapsed(sql: Db): Promise<number> {
  const rows = await sql`
    delete from resource_claims where expires_at < clock_timestamp() returning resource`;
  return rows.length;
}
