/**
 * Payroll: a batch is recorded PROCESSING with every recipient before anything is sent, then
 * paid in chunks through BatchPayout (one operator transaction per chunk, chunks pipelined,
 * each recipient's outcome from the contract's events), or, for an external payer wallet, turned
 * into signature requests. The end state and `payroll.completed` are written in one transaction,
 * once. Work on a batch is serialised by a resource claim that holds no connection (taken before
 * the batch is written); every chunk is an intent, so a process killed mid-batch is resumed (at a
 * worker's start, by the run job and the sweep) without paying anyone twice. Batches are found by
 * merchant and the credential's environment (chain); an Idempotency-Key is the environment's too.
 */
import { isUniqueViolation } from "../../db/client.ts";
import { bigintJson, sha256 } from "../../codec.ts";
import type { Deps } from "../../deps.ts";
import { DomainError } from "../../errors.ts";
import { checksum } from "../../chain/address.ts";
import { withClaim } from "../../db/claims.ts";
import { CHUNK_SIZE, type ProfileName } from "../../chain/index.ts";
import type { MerchantRow } from "../merchants/merchants.types.ts";
import * as repo from "./payroll.repo.ts";
import type { BatchRow, RecipientRow, RunInput } from "./payroll.types.ts";
import {
  assignChunks,
  BATCH_CLAIM_TTL_MS,
  batchClaim,
  newBatchRef,
  ZERO_AMOUNT_ERROR,
} from "./payroll.rules.ts";
import { BACKSTOP_SECONDS, runBatchQueue } from "./payroll.queues.ts";
import { processBatch, processLocked } from "./payroll.process.ts";

export type { BatchRow } from "./payroll.types.ts";
export { batchView, results, runMessage } from "./payroll.views.ts";
export { enqueueStalled, finalizeIn, processBatch, resumeOpen } from "./payroll.process.ts";

/**
 * Who would pay a batch of `total` and whether it can (the dashboard's preview): the payout
 * wallet, and for a managed one its USDC on `profile` (`short` when below the total: the run
 * would fail the recipients past the balance). An external wallet signs each payment itself.
 */
export async function previewPayer(
  deps: Deps,
  m: MerchantRow,
  profile: ProfileName,
  total: bigint,
): Promise<{ address: string; managed: boolean; balance: bigint | null; short: boolean }> {
  const payer = payerOf(m);
  if (payer.kind !== "managed") {
    return { address: checksum(payer.address), managed: false, balance: null, short: false };
  }
  const balance = await deps.chain.usdcBalance(profile, payer.address as `0x${string}`);
  return { address: checksum(payer.address), managed: true, balance, short: balance < total };
}

/** The payer: always the merchant's own payout wallet, never the request's. */
function payerOf(m: MerchantRow) {
  if (m.walletProvider === "MANAGED" && m.managedWalletId && m.walletAddress) {
    return { kind: "managed", walletId: m.managedWalletId, address: m.walletAddress };
  }
  if (m.walletProvider !== "MANAGED" && m.walletAddress) {
    return { kind: m.walletProvider, walletId: null, address: m.walletAddress };
  }
  throw new DomainError("payout_wallet_missing");
}

/**
 * Records the batch (or finds the one this Idempotency-Key already made in this environment),
 * then works on it for up to PAYROLL_WAIT_MS; whatever is left continues in the background.
 */
export async function runBatch(
  deps: Deps,
  merchant: MerchantRow,
  profile: ProfileName,
  input: RunInput,
  requestKey?: string,
  waitMs = deps.config.PAYROLL_WAIT_MS,
): Promise<{ batch: BatchRow; recipients: RecipientRow[] }> {
  if (!deps.chain.has(profile)) throw new DomainError("chain_not_configured");
  // A recipient that is the token or one of our vaults: paid there, the USDC is stranded.
  const stranded = input.recipients.findIndex((r) =>
    deps.chain.isServiceContract(profile, r.recipientSCA)
  );
  if (stranded >= 0) {
    throw new DomainError("payroll_recipient_contract", {
      hint: `recipients[${stranded}].recipientSCA is ${input.recipients[stranded].recipientSCA}`,
    });
  }
  const payer = payerOf(merchant);
  const chainId = deps.chain.chainId(profile);
  const keyHash = requestKey === undefined ? null : sha256(requestKey);
  const requestHash = sha256(
    bigintJson([profile, input]),
  );
  const sameRequest = (b: BatchRow) => {
    if (b.requestHash !== requestHash) throw new DomainError("payroll_request_key_reused");
    return b;
  };
  const earlier = keyHash
    ? await repo.findByRequestKey(deps.sql, merchant.id, chainId, keyHash)
    : null;
  let batch: BatchRow;
  let work: Promise<unknown>;
  if (earlier) {
    batch = sameRequest(earlier);
    work = processBatch(deps, batch.id);
  } else {
    // The batch's claim is taken before its row exists: a PROCESSING batch is never unclaimed
    // while its request works on it.
    const id = crypto.randomUUID();
    const created = Promise.withResolvers<BatchRow>();
    work = withClaim(deps.sql, batchClaim(id), async () => {
      created.resolve(
        await create(deps, merchant, profile, payer, input, id, keyHash, requestHash),
      );
      return await processLocked(deps, id);
    }, { ttlMs: BATCH_CLAIM_TTL_MS, waitMs: 0 });
    work.catch((e) => created.reject(e));
    try {
      batch = await created.promise;
    } catch (e) {
      // The same key, concurrently: the other request's batch is this one.
      if (!keyHash || !isUniqueViolation(e)) throw e;
      const other = await repo.findByRequestKey(deps.sql, merchant.id, chainId, keyHash);
      if (!other) throw e;
      batch = sameRequest(other);
      work = processBatch(deps, batch.id);
    }
  }
  await waitBounded(deps, work, waitMs);
  return await snapshot(deps, batch.id);
}

async function create(
  deps: Deps,
  merchant: MerchantRow,
  profile: ProfileName,
  payer: ReturnType<typeof payerOf>,
  input: RunInput,
  id: string,
  keyHash: string | null,
  requestHash: string,
): Promise<BatchRow> {
  const chunks = assignChunks(input.recipients, CHUNK_SIZE);
  const now = deps.clock.now();
  const total = input.recipients.reduce((s, r) => s + r.amount, 0n);
  return await deps.sql.begin(async (tx) => {
    const zero = input.recipients.filter((r) => r.amount === 0n).length;
    const row = await repo.insertBatch(
      tx,
      {
        id,
        merchantId: merchant.id,
        batchRef: newBatchRef(now),
        profile,
        chainId: deps.chain.chainId(profile),
        payerSca: payer.address.toLowerCase() as `0x${string}`,
        payerWalletKind: payer.kind,
        payerWalletId: payer.walletId,
        totalAmount: total,
        recipientCount: input.recipients.length,
        failedCount: zero,
        webhookUrl: input.webhookUrl,
        description: input.description,
        requestKeyHash: keyHash,
        requestHash,
        createdAt: now,
      },
      input.recipients.map((r, i) => ({
        idx: i,
        recipientSca: r.recipientSCA,
        amount: r.amount,
        label: r.label,
        memo: r.label ?? input.description,
        chunk: chunks[i],
        status: r.amount === 0n ? "FAILED" : "PENDING",
        error: r.amount === 0n ? ZERO_AMOUNT_ERROR : null,
      })),
    );
    await deps.queue.send(runBatchQueue, { batchId: row.id }, {
      tx,
      startAfter: BACKSTOP_SECONDS * 1000,
    });
    return row;
  });
}

/** Waits for `work` up to `ms`; it goes on in the background (its failure is logged). */
async function waitBounded(deps: Deps, work: Promise<unknown>, ms: number): Promise<void> {
  const logged = work.catch((e) => deps.log.warn("payroll batch paused", { error: e }));
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([
    logged,
    new Promise<void>((resolve) => (timer = setTimeout(resolve, ms))),
  ]);
  clearTimeout(timer);
}

async function snapshot(deps: Deps, batchId: string) {
  const batch = (await repo.findById(deps.sql, batchId))!;
  return { batch, recipients: await repo.recipients(deps.sql, batchId) };
}

/**
 * One of the merchant's batches in the credential's environment (`profile`), with its
 * recipients (the first `limit`, when given); another environment's is not found.
 */
export async function getBatch(
  deps: Deps,
  merchantId: string,
  profile: ProfileName,
  batchRef: string,
  limit?: number,
) {
  const b = deps.chain.has(profile)
    ? await repo.findByRef(deps.sql, merchantId, deps.chain.chainId(profile), batchRef)
    : null;
  if (!b) throw new DomainError("payroll_not_found");
  return { batch: b, recipients: await repo.recipients(deps.sql, b.id, limit) };
}

export async function listBatches(
  deps: Deps,
  merchantId: string,
  profile: ProfileName,
  limit = 20,
) {
  if (!deps.chain.has(profile)) return [];
  return await repo.listBatches(deps.sql, merchantId, deps.chain.chainId(profile), limit);
}
