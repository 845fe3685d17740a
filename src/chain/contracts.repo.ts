/** SQL for chain_contracts: where our contracts live on each chain. */
import type { Db } from "../db/client.ts";

export interface ContractRow {
  chainId: number;
  name: string;
  address: string;
  inputHash: string | null;
  deployTxHash: string | null;
  deployBlock: bigint | null;
}

export async function list(sql: Db, chainId: number): Promise<ContractRow[]> {
  return await sql<ContractRow[]>`
    select chain_id, name, address, input_hash, deploy_tx_hash, deploy_block
    from chain_contracts where chain_id = ${chainId} order by name`;
}

/**
 * The names of a chain's contracts recorded (deployed, or replaced) within the last `ms`, by the
 * database's clock: what a command's own start deployed before it looked.
 */
export async function recordedWithin(sql: Db, chainId: number, ms: number): Promise<string[]> {
  const rows = await sql<{ name: string }[]>`
    select name from chain_contracts
    where chain_id = ${chainId}
      and updated_at >= now() - make_interval(secs => ${ms / 1000})
    order by name`;
  return rows.map((r) => r.name);
}

export async function save(sql: Db, row: ContractRow): Promise<void> {
  await sql`
    insert into chain_contracts (chain_id, name, address, input_hash, deploy_tx_hash, deploy_block)
    values (${row.chainId}, ${row.name}, ${row.address}, ${row.inputHash}, ${row.deployTxHash},
            ${row.deployBlock})
    on conflict (chain_id, name) do update set
      address = excluded.address, input_hash = excluded.input_hash,
      deploy_tx_hash = excluded.deploy_tx_hash, deploy_block = excluded.deploy_block,
      updated_at = now()`;
}

export async function forget(sql: Db, chainId: number): Promise<void> {
  await sql`delete from chain_contracts where chain_id = ${chainId}`;
}
