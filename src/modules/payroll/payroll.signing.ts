/**
 * Signature requests: a payroll payment from an external payer wallet waits for the merchant's
 * browser wallet to send the USDC transfer itself. The merchant reports the transaction; it is
 * accepted only if it is mined, succeeded, and carries a USDC Transfer from the merchant's
 * linked wallet to the recipient for exactly the amount, and no other request used it. The last
 * one paid completes the batch (and sends `payroll.completed`).
 */
import { isUniqueViolation } from "../../db/client.ts";
import type { Deps } from "../../deps.ts";
import { DomainError } from "../../errors.ts";
import type { ProfileName } from "../../chain/index.ts";
import { checksum } from "../../chain/address.ts";
import { formatUsdc } from "../../money.ts";
import type { MerchantRow } from "../merchants/merchants.types.ts";
import * as repo from "./payroll.repo.ts";
import { finalizeIn } from "./payroll.service.ts";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function view(deps: Deps, r: repo.SignRequestRow) {
  const p = r.profile as ProfileName;
  return {
    id: r.requestId!,
    batchRef: r.batchRef,
    index: r.idx,
    recipientSCA: checksum(r.recipientSca),
    amount: formatUsdc(r.amount, { decimals: "fixed" }),
    amountUnits: r.amount.toString(),
    label: r.label,
    memo: r.memo,
    status: "PENDING_SIGNATURE" as const,
    payerSCA: checksum(r.payerSca),
    token: deps.chain.has(p) ? deps.chain.contract(p, "TestUSDC") : "",
    chainId: r.chainId,
    createdAt: r.createdAt.toISOString(),
  };
}
export type SignRequestView = ReturnType<typeof view>;

/** The merchant's pending sign requests in the credential's environment (`profile`). */
export async function listSignRequests(deps: Deps, merchant: MerchantRow, profile: ProfileName) {
  if (!deps.chain.has(profile)) return [];
  const rows = await repo.pendingSignRequests(deps.sql, merchant.id, deps.chain.chainId(profile));
  return rows.map((r) => view(deps, r));
}

/**
 * Reports the transaction that paid a sign request of the credential's environment (another
 * environment's request is not found). The chain is read before anything is locked; the request,
 * and the batch's end state when it was the last, are then written in one short transaction.
 */
export async function submitSignRequest(
  deps: Deps,
  merchant: MerchantRow,
  profile: ProfileName,
  id: string,
  txHash: `0x${string}`,
) {
  const req = UUID.test(id) && deps.chain.has(profile)
    ? await repo.findSignRequest(deps.sql, merchant.id, deps.chain.chainId(profile), id)
    : null;
  if (!req) throw new DomainError("sign_request_not_found");
  if (req.status !== "PENDING_SIGNATURE") throw new DomainError("sign_request_not_pending");
  const usedBy = await repo.signTxUsedBy(deps.sql, txHash);
  // Used by this very request: a concurrent report of it got there after our read above, and we
  // answer as a report after that one would.
  if (usedBy === req.requestId) throw new DomainError("sign_request_not_pending");
  if (usedBy) throw new DomainError("sign_tx_reused");
  const p = req.profile as ProfileName;
  if (!deps.chain.has(p)) throw new DomainError("chain_not_configured");
  const mined = await deps.chain.payroll.usdcTransfersIn(p, txHash);
  if (!mined) throw new DomainError("sign_tx_not_found");
  const wallet = merchant.walletAddress?.toLowerCase();
  const match = mined.status === "success" && !!wallet &&
    mined.transfers.some((t) =>
      t.from === wallet && t.to === req.recipientSca.toLowerCase() && t.value === req.amount
    );
  if (!match) throw new DomainError("sign_tx_mismatch");
  // The request, and the batch's end state when it was the last, in one transaction.
  let done;
  try {
    done = await deps.sql.begin(async (tx) => {
      await repo.lockBatch(tx, req.batchId);
      const row = await repo.completeSignRequest(tx, id, txHash, deps.clock.now());
      if (row) await finalizeIn(deps, tx, req.batchId);
      return row;
    });
  } catch (e) {
    if (isUniqueViolation(e)) throw new DomainError("sign_tx_reused");
    throw e;
  }
  if (!done) throw new DomainError("sign_request_not_pending");
  const batch = (await repo.findById(deps.sql, req.batchId))!;
  return {
    signRequest: {
      id,
      status: "SUCCESS" as const,
      txHash,
      explorerUrl: deps.chain.explorerTxUrl(p, txHash),
    },
    batch: {
      batchRef: batch.batchRef,
      status: batch.status,
      pendingSignatureCount: batch.pendingSignatureCount,
    },
  };
}
