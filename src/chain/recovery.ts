/**
 * Recovery: finishes what a crash (or a flaky node) left in chain_transactions.
 *
 * For each transaction still `signed` or `broadcast` after a grace period:
 * - mined → record the receipt;
 * - its nonce already used by something else → `failed` (it can never be mined);
 * - otherwise re-broadcast the very same signed bytes. If the node refuses them for good and
 *   later nonces are waiting behind, a zero-value self-transfer takes the nonce so the queue
 *   moves; the original intent is marked `failed`, never re-signed.
 * It never signs a second transaction for an intent.
 */
import type { Hex } from "viem";
import { TransactionReceiptNotFoundError } from "viem";
import type { Logger } from "../log.ts";
import type { ChainRuntime } from "./runtime.ts";
import type { Signer, TxSender } from "./sender.ts";
import * as repo from "./transactions.repo.ts";
import { findWalletByAddress } from "./wallets.ts";
import type { Sql } from "../db/client.ts";

export interface RecoveryReport {
  checked: number;
  confirmed: number;
  rebroadcast: number;
  failed: number;
  unblocked: number;
}

export async function recoverTransactions(
  rt: ChainRuntime,
  sender: TxSender,
  sql: Sql,
  log: Logger,
  { minAgeMs = 30_000 } = {},
): Promise<RecoveryReport> {
  const report: RecoveryReport = {
    checked: 0,
    confirmed: 0,
    rebroadcast: 0,
    failed: 0,
    unblocked: 0,
  };
  const rows = await repo.listOpen(sql, rt.chainId, minAgeMs);
  for (const row of rows) {
    report.checked++;
    try {
      const receipt = await rt.client.getTransactionReceipt({ hash: row.txHash as Hex })
        .catch((e) => {
          if (e instanceof TransactionReceiptNotFoundError) return null;
          throw e;
        });
      if (receipt) {
        await sender.settle(row, receipt);
        report.confirmed++;
        continue;
      }
      const mined = BigInt(
        await rt.client.getTransactionCount({
          address: row.fromAddress as `0x${string}`,
          blockTag: "latest",
        }),
      );
      if (mined > row.nonce) {
        // Mined just now, between the two reads (it waited in the pool for a nonce before it),
        // is this very transaction: its receipt, not a failure (a payroll chunk marked failed so
        // was sent again, and reported unpaid though this one had paid it).
        const late = await rt.client.getTransactionReceipt({ hash: row.txHash as Hex })
          .catch(() => null);
        if (late) {
          await sender.settle(row, late);
          report.confirmed++;
          continue;
        }
        await repo.markFailed(sql, row.id, `nonce ${row.nonce} was used by another transaction`);
        report.failed++;
        continue;
      }
      // Filed by anvil's pool as waiting for a predecessor already mined: sent again afresh.
      if (row.status === "broadcast" && await sender.unstick(rt, row).catch(() => false)) {
        report.rebroadcast++;
        continue;
      }
      const outcome = await sender.broadcast(rt, row, { attempts: 2 });
      if (outcome === "accepted") {
        await repo.markBroadcast(sql, row.id);
        report.rebroadcast++;
      } else if (typeof outcome === "object") {
        await repo.markFailed(sql, row.id, outcome.rejected);
        report.failed++;
        if (await repo.hasLaterNonce(sql, rt.chainId, row.fromAddress, row.nonce)) {
          await fillNonce(rt, sender, row);
          report.unblocked++;
        }
      }
    } catch (e) {
      log.warn("recovery could not check a transaction", { txHash: row.txHash, error: e });
    }
  }
  if (report.checked) log.info("transaction recovery", { chain: rt.profile.name, ...report });
  return report;
}

/** Takes a stuck nonce with a zero-value self-transfer at a higher fee. */
async function fillNonce(rt: ChainRuntime, sender: TxSender, row: repo.TxRow): Promise<void> {
  const signer = await sender.opts.account(rt, await signerOf(sender, rt, row));
  const fees = await rt.client.estimateFeesPerGas();
  const bump = (x: bigint, old: string) => {
    const floor = BigInt(old) + BigInt(old) / 5n + 1n;
    return x > floor ? x : floor;
  };
  const raw = await signer.signTransaction({
    chainId: rt.chainId,
    type: "eip1559",
    nonce: Number(row.nonce),
    to: signer.address,
    value: 0n,
    gas: 21_000n,
    maxFeePerGas: bump(fees.maxFeePerGas, row.maxFeePerGas),
    maxPriorityFeePerGas: bump(fees.maxPriorityFeePerGas, row.maxPriorityFeePerGas),
  });
  await rt.client.sendRawTransaction({ serializedTransaction: raw });
}

async function signerOf(sender: TxSender, rt: ChainRuntime, row: repo.TxRow): Promise<Signer> {
  const relayer = rt.relayers.findIndex((r) => r.address.toLowerCase() === row.fromAddress);
  if (relayer >= 0) return { relayer };
  const w = await findWalletByAddress(sender.opts.sql, row.fromAddress);
  return w ? { walletId: w.id } : "operator" as const;
}
