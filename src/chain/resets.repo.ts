/** SQL for chain_resets: the record of each accepted chain reset and what it archived. */
import type { Db } from "../db/client.ts";

export async function insertReset(
  sql: Db,
  r: {
    chainId: number;
    acceptedBy: unknown;
    missingContracts: unknown;
    archivedTransactions: number;
    forgottenLogs: number;
  },
): Promise<string> {
  const [row] = await sql<{ id: string }[]>`
    insert into chain_resets (chain_id, accepted_by, missing_contracts, archived_transactions,
                              forgotten_logs)
    values (${r.chainId}, ${r.acceptedBy == null ? null : sql.json(r.acceptedBy as never)},
            ${sql.json(r.missingContracts as never)}, ${r.archivedTransactions}, ${r.forgottenLogs})
    returning id`;
  return row.id;
}
