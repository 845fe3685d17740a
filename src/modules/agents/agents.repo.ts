/** SQL for ERC-8004 agents. */
import type { Db } from "../../db/client.ts";
import type { AgentRow } from "./agents.rules.ts";

export interface NewAgent {
  id: string;
  merchantId: string;
  chainId: number;
  name: string;
  metadataUri: string;
  manifest: unknown;
  ownerWalletId: string;
  ownerAddress: string;
  scaAddress: string;
  salt: string;
  identityRegistry: string;
  now: Date;
}

/** Inserts the PROVISIONING row; a row already under this id (a retried deploy) is returned. */
export async function insert(sql: Db, a: NewAgent): Promise<AgentRow> {
  const [row] = await sql<AgentRow[]>`
    insert into agents (id, merchant_id, chain_id, name, metadata_uri, manifest, owner_wallet_id,
      owner_address, sca_address, salt, identity_registry, status, created_at, updated_at)
    values (${a.id}, ${a.merchantId}, ${a.chainId}, ${a.name}, ${a.metadataUri},
      ${a.manifest === null ? null : sql.json(a.manifest as never)}, ${a.ownerWalletId},
      ${a.ownerAddress}, ${a.scaAddress}, ${a.salt}, ${a.identityRegistry}, 'PROVISIONING',
      ${a.now}, ${a.now})
    on conflict (id) do nothing
    returning *`;
  return row ?? (await byId(sql, a.id))!;
}

export async function byId(sql: Db, id: string): Promise<AgentRow | null> {
  const [row] = await sql<AgentRow[]>`select * from agents where id = ${id}`;
  return row ?? null;
}

export async function markProvisioned(
  sql: Db,
  id: string,
  p: { tokenId: string; registerTxHash: string; now: Date },
): Promise<AgentRow> {
  const [row] = await sql<AgentRow[]>`
    update agents set token_id = ${p.tokenId}, register_tx_hash = ${p.registerTxHash},
      status = 'ACTIVE_AGENT_PROVISIONED', updated_at = ${p.now}
    where id = ${id} returning *`;
  return row;
}

/**
 * Rows of `registry`, and those from before agents recorded theirs (migration 0023 could not
 * tell which registry they are in: taken to be the current one).
 */
const inRegistry = (sql: Db, registry: string) =>
  sql`(identity_registry = ${registry} or identity_registry is null)`;

/** Any merchant's live agent with this smart account (the public lookup). */
export async function findBySca(sql: Db, sca: string, registry: string): Promise<AgentRow[]> {
  return await sql<AgentRow[]>`
    select * from agents where sca_address = ${sca.toLowerCase()}
      and status = 'ACTIVE_AGENT_PROVISIONED' and ${inRegistry(sql, registry)} order by seq desc`;
}

/** Our row of a token of `registry` (a row recording the registry wins over an older one). */
export async function findByToken(
  sql: Db,
  chainId: number,
  registry: string,
  tokenId: string,
): Promise<AgentRow | null> {
  const [row] = await sql<AgentRow[]>`
    select * from agents where chain_id = ${chainId} and token_id = ${tokenId}
      and ${inRegistry(sql, registry)}
    order by identity_registry is null, seq desc limit 1`;
  return row ?? null;
}

/** The merchant's live agents matching every given filter, newest first. */
export async function search(
  sql: Db,
  merchantId: string,
  registry: string,
  f: { scaAddress?: string; tokenId?: string; namePattern?: string; limit: number },
): Promise<AgentRow[]> {
  return await sql<AgentRow[]>`
    select * from agents where merchant_id = ${merchantId}
      and status = 'ACTIVE_AGENT_PROVISIONED' and ${inRegistry(sql, registry)}
      ${f.scaAddress ? sql`and sca_address = ${f.scaAddress.toLowerCase()}` : sql``}
      ${f.tokenId ? sql`and token_id = ${f.tokenId}` : sql``}
      ${f.namePattern ? sql`and name ilike ${f.namePattern}` : sql``}
    order by seq desc limit ${f.limit}`;
}

/**
 * Deploys left half done (PROVISIONING) since before `before` in one of `registries`, oldest
 * first (one begun in a registry no longer used cannot be finished in another).
 */
export async function provisioning(
  sql: Db,
  before: Date,
  limit: number,
  registries: string[],
): Promise<AgentRow[]> {
  return await sql<AgentRow[]>`
    select * from agents where status = 'PROVISIONING' and updated_at < ${before}
      and (identity_registry = any(${registries}) or identity_registry is null)
    order by seq limit ${limit}`;
}
