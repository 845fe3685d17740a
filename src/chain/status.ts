/** What `deno task chain:status` prints about a chain's transactions, read for the operator. */
import type { Db } from "../db/client.ts";
import * as txRepo from "./transactions.repo.ts";

export async function transactionStatus(sql: Db, chainId: number) {
  return {
    counts: await txRepo.statusCounts(sql, chainId),
    open: await txRepo.listOpen(sql, chainId, 0),
  };
}
