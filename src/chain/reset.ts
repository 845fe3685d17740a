/**
 * Was this chain reset since we last used it? Decided from evidence only: a contract we deployed
 * has no code at its recorded address. (A changed genesis hash is no evidence: a local node
 * whose state was reloaded intact once answered with another block 0.)
 *
 * On a reset nothing is redeployed silently while the database remembers money on the old
 * chain (confirmed transactions other than our deployments, or logs the watcher acted on, such
 * as settled payments): the start is refused with the operator command that accepts the reset.
 */
import type { PublicClient } from "viem";
import type { Db, Sql } from "../db/client.ts";
import type { Logger } from "../log.ts";
import type { ProfileConfig } from "./profiles.ts";
import * as contractsRepo from "./contracts.repo.ts";
import * as txRepo from "./transactions.repo.ts";
import * as watcherRepo from "./watcher.repo.ts";
import * as resetsRepo from "./resets.repo.ts";
import { putSetting, takeSetting } from "./settings.repo.ts";

export const ACCEPT_RESET_COMMAND = "deno task chain:accept-reset";

export interface ResetEvidence {
  /** Recorded contracts with no code at their address. */
  missing: { name: string; address: string }[];
}

export interface OrphanCounts {
  transactions: number;
  handledLogs: number;
}

/** Thrown when a start would orphan what the database remembers about a reset chain. */
export class ChainResetRefusedError extends Error {
  constructor(
    readonly profile: string,
    readonly chainId: number,
    readonly evidence: ResetEvidence,
    readonly orphans: OrphanCounts,
  ) {
    super(refusalText(profile, chainId, evidence, orphans));
    this.name = "ChainResetRefusedError";
  }
}

export function refusalText(
  profile: string,
  chainId: number,
  evidence: ResetEvidence,
  orphans: OrphanCounts,
): string {
  const gone = evidence.missing.map((m) => `${m.name} at ${m.address}`).join(", ");
  return `chain ${profile} (id ${chainId}) was reset: our contracts have no code there any ` +
    `more (${gone}). The database remembers ${orphans.transactions} transaction(s) and ` +
    `${orphans.handledLogs} settled log(s) on it, which a redeployment would orphan. ` +
    `Nothing was changed. If the old chain is really gone (restore DATA_DIR/chains/${profile} ` +
    `or the node's data otherwise), run \`${ACCEPT_RESET_COMMAND} ${profile}\` and start again.`;
}

/** Recorded contracts (not fixed by configuration) whose code is gone. */
export async function findResetEvidence(
  sql: Db,
  client: PublicClient,
  profile: ProfileConfig,
): Promise<ResetEvidence | null> {
  const missing: ResetEvidence["missing"] = [];
  for (const row of await contractsRepo.list(sql, profile.chainId)) {
    if (profile.contracts[row.name as keyof typeof profile.contracts]) continue;
    const code = await client.getCode({ address: row.address as `0x${string}` });
    if (!code || code === "0x") missing.push({ name: row.name, address: row.address });
  }
  return missing.length ? { missing } : null;
}

export async function countOrphans(sql: Db, chainId: number): Promise<OrphanCounts> {
  return {
    transactions: await txRepo.countMoneyTransactions(sql, chainId),
    handledLogs: await watcherRepo.countReceipts(sql, chainId),
  };
}

const acceptKey = (chainId: number) => `chain:${chainId}:reset-accepted`;

/** `deno task chain:accept-reset`: the next start may treat this chain as new. */
export async function acceptReset(sql: Db, chainId: number, by: string): Promise<void> {
  await putSetting(sql, acceptKey(chainId), { by, at: new Date().toISOString() });
}

/**
 * At start, before contracts are checked or deployed: nothing to do when our contracts are where
 * we left them; forget the old chain when it was reset and nothing would be orphaned, or the
 * operator accepted the reset; refuse otherwise. An acceptance is used by one start only.
 */
export async function checkForReset(
  sql: Sql,
  client: PublicClient,
  profile: ProfileConfig,
  log: Logger,
): Promise<void> {
  const evidence = await findResetEvidence(sql, client, profile);
  await sql.begin(async (tx) => {
    const accepted = await takeSetting(tx, acceptKey(profile.chainId));
    if (!evidence) return;
    const orphans = await countOrphans(tx, profile.chainId);
    const orphaning = orphans.transactions > 0 || orphans.handledLogs > 0;
    if (orphaning && !accepted) {
      throw new ChainResetRefusedError(profile.name, profile.chainId, evidence, orphans);
    }
    const failed = await txRepo.failAllOpen(tx, profile.chainId, "chain was reset");
    const resetId = await resetsRepo.insertReset(tx, {
      chainId: profile.chainId,
      acceptedBy: accepted ? accepted.value : null,
      missingContracts: evidence.missing,
      archivedTransactions: orphans.transactions,
      forgottenLogs: orphans.handledLogs,
    });
    // The new chain starts clean: intent keys, hashes and log receipts of the old one would
    // otherwise pass for work already done.
    await txRepo.archiveAll(tx, profile.chainId, resetId);
    await contractsRepo.forget(tx, profile.chainId);
    await watcherRepo.forgetChain(tx, profile.chainId);
    log.warn("chain was reset: our contracts are gone; they will be deployed again", {
      chainId: profile.chainId,
      missing: evidence.missing,
      orphans,
      acceptedBy: accepted?.value ?? null,
      openTransactionsFailed: failed,
      resetId,
    });
  });
}
