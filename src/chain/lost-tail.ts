/**
 * A local node killed outright (kill -9, a power cut) loses what it mined since its last state
 * dump (`--state-interval 1`: up to a second of blocks), while PostgreSQL kept their receipts:
 * transactions the service recorded mined (and acted on: a stop answered, a withdrawal paid) are
 * no longer on the chain, and the chain re-mines those block numbers with whatever comes next.
 *
 * At a start that loaded such a node's state, before anything is sent: every transaction recorded
 * in a block above the node's head is sent again, as its very signed bytes (the same hash, the
 * same nonce, in the order they were mined), so the chain comes back to what the database says; its
 * receipt is recorded anew. One that the chain now refuses or reverts (where it had succeeded)
 * is logged as an error with its intent: the database then says more than the chain. The log
 * watcher's cursor is moved back to the head, so events in the re-mined blocks are read (those of
 * the replayed transactions were handled already: their receipts are kept by hash and index).
 * A configured chain is never touched: its confirmations cover a reorganisation.
 */
import type { Hex, PublicClient } from "viem";
import { TransactionReceiptNotFoundError } from "viem";
import type { Logger } from "../log.ts";
import type { Sql } from "../db/client.ts";
import * as txRepo from "./transactions.repo.ts";
import * as watcherRepo from "./watcher.repo.ts";
import { CURSOR } from "./watcher.ts";

export interface LostTailReport {
  head: bigint;
  replayed: number;
  /** Replayed transactions that did not end as they had (refused, reverted, or not mined yet). */
  differing: string[];
}

export async function replayLostTail(
  sql: Sql,
  client: PublicClient,
  chainId: number,
  log: Logger,
): Promise<LostTailReport> {
  const head = await client.getBlockNumber({ cacheTime: 0 });
  const cursor = await watcherRepo.readCursor(sql, chainId, CURSOR);
  if (cursor !== null && cursor > head) await watcherRepo.saveCursor(sql, chainId, CURSOR, head);
  const lost = await txRepo.recordedAbove(sql, chainId, head);
  const report: LostTailReport = { head, replayed: 0, differing: [] };
  if (!lost.length) return report;
  log.warn("the local chain lost its last blocks (the node was killed): replaying them", {
    chainId,
    head,
    transactions: lost.length,
  });
  // The transactions still recorded in flight go too: one the dead process had sent (and the
  // node had mined in the lost blocks) without recording its receipt holds a nonce below the
  // replayed ones, which would otherwise wait in the pool for it until chain recovery's sweep
  // sent it a minute on (an audit's resumed payroll stalled so). Their receipts stay the
  // recovery's (and their waiters') to record.
  const open = await txRepo.listOpen(sql, chainId, 0);
  for (const tx of [...lost, ...open]) {
    try {
      await client.request({ method: "eth_sendRawTransaction", params: [tx.rawTx as Hex] });
    } catch (e) {
      // Already known (sent again by another start) is fine; the receipt below decides.
      log.warn("a lost transaction was refused when replayed", { intent: tx.intentKey, error: e });
    }
  }
  for (const tx of lost) {
    const receipt = await client.getTransactionReceipt({ hash: tx.txHash as Hex }).catch((e) => {
      if (e instanceof TransactionReceiptNotFoundError) return null;
      throw e;
    });
    if (!receipt) {
      // Not mined (yet): open again, for the transaction recovery to follow as any broadcast one.
      await txRepo.reopenMined(sql, tx.id);
      report.differing.push(tx.intentKey);
      continue;
    }
    const status = receipt.status === "success" ? "confirmed" : "reverted";
    await txRepo.recordReplayed(sql, tx.id, {
      status,
      blockNumber: receipt.blockNumber,
      gasUsed: receipt.gasUsed,
    });
    if (status !== tx.status) report.differing.push(tx.intentKey);
    report.replayed++;
  }
  if (report.differing.length) {
    log.error(
      "replayed transactions did not end as recorded: the records say more than the chain",
      {
        chainId,
        intents: report.differing,
      },
    );
  } else {
    log.warn("the local chain's lost blocks were replayed", { chainId, replayed: report.replayed });
  }
  return report;
}
