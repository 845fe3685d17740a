/**
 * ERC-8183 jobs over AgenticCommerce. Jobs cross merchants: the client, provider and evaluator
 * may be anyone's wallets, so any authenticated caller finds a job by its on-chain id (on the
 * chain its credential selects) and a wallet id resolves to its address whoever owns it. Each
 * action checks, before anything is signed, that the wallet id resolves to the address recorded
 * on the job and that the caller controls that wallet (403, `{ error }`); whether the job's
 * status allows the action is left to the contract (a revert is 502 with the decoded reason).
 * The job's row is locked while its transaction is sent, so two actions on one job are
 * serialised; the row changes once the transaction is mined.
 */
import { createHash } from "node:crypto";
import type { Deps } from "../../deps.ts";
import { DomainError } from "../../errors.ts";
import { checksum, lower } from "../../chain/address.ts";
import { JOB_CHAIN_STATUSES, textHash } from "../../chain/commerce.ts";
import type { ProfileName } from "../../chain/profiles.ts";
import { formatUsdc } from "../../money.ts";
import type { MerchantRow } from "../merchants/merchants.types.ts";
import { controlledWallet } from "../wallets/wallets.service.ts";
import * as repo from "./commerce.repo.ts";
import type { CreateJobInput } from "./commerce.schemas.ts";
import {
  actionsBetween,
  chainIsAhead,
  DEFAULT_COMPLETE_REASON,
  DEFAULT_REJECT_REASON,
  JOB_ID,
  type JobRole,
  type JobRow,
  ROLE_ERRORS,
} from "./commerce.rules.ts";

export type { JobRow } from "./commerce.rules.ts";

function profileOf(deps: Deps, row: Pick<JobRow, "chainId">): ProfileName {
  const p = deps.chain.profiles().find((n) => deps.chain.chainId(n) === row.chainId);
  if (!p) throw new DomainError("chain_not_configured");
  return p;
}

/** The job record every response shows. */
export function jobView(deps: Deps, j: JobRow) {
  const profile = profileOf(deps, j);
  const link = (h: string | null) => h === null ? null : deps.chain.explorerTxUrl(profile, h);
  return {
    jobId: j.jobId,
    status: j.status,
    client: checksum(j.client),
    provider: checksum(j.provider),
    evaluator: checksum(j.evaluator),
    budget: formatUsdc(j.budget, { decimals: "fixed" }),
    currency: "USDC" as const,
    description: j.description,
    expiresAt: j.expiresAt.toISOString(),
    chain: profile,
    contractAddress: checksum(j.contractAddress),
    deliverableData: j.deliverableData,
    deliverableHash: j.deliverableHash,
    reason: j.reason,
    reasonHash: j.reasonHash,
    txHash: j.createTxHash,
    explorerUrl: link(j.createTxHash)!,
    budgetTx: j.budgetTxHash,
    approveTx: j.approveTxHash,
    fundTx: j.fundTxHash,
    submitTx: j.submitTxHash,
    completeTx: j.completeTxHash,
    rejectTx: j.rejectTxHash,
    refundTx: j.refundTxHash,
    createdAt: j.createdAt.toISOString(),
    updatedAt: j.updatedAt.toISOString(),
  };
}
export type JobView = ReturnType<typeof jobView>;

/** Creates the job from the client's wallet (createJob, then setBudget) and records it. */
export async function createJob(
  deps: Deps,
  m: MerchantRow,
  profile: ProfileName,
  input: CreateJobInput,
  requestKey?: string,
): Promise<JobRow> {
  const wallet = await controlledWallet(deps, m.id, { walletId: input.clientWalletId });
  if (!wallet) throw new DomainError("job_client_not_controlled");
  if (!deps.chain.has(profile)) throw new DomainError("chain_not_configured");
  const now = deps.clock.now();
  const expiresAt = new Date((Math.floor(now.getTime() / 1000) + input.expiresInSeconds) * 1000);
  const made = await deps.chain.jobs.create(profile, {
    walletId: wallet.walletId,
    provider: input.provider,
    evaluator: input.evaluator,
    expiredAt: BigInt(expiresAt.getTime() / 1000),
    description: input.description,
    budget: input.budget,
    // With an Idempotency-Key the intent comes from the key and the request, so a retry the
    // idempotency layer did not store (released after a 408 or a 5xx) finds the first
    // transactions instead of creating a second job.
    intentKey: `job:create:${
      requestKey === undefined
        ? crypto.randomUUID()
        : digest(["job-create", m.id, profile, requestKey, canonical(input)])
    }`,
  });
  return await repo.insert(deps.sql, {
    chainId: deps.chain.chainId(profile),
    contractAddress: lower(deps.chain.jobs.address(profile)),
    jobId: made.jobId.toString(),
    merchantId: m.id,
    client: lower(wallet.address),
    clientWalletId: wallet.walletId,
    provider: input.provider,
    evaluator: input.evaluator,
    budget: input.budget,
    description: input.description,
    expiresAt: new Date(Number(made.expiredAt) * 1000),
    createTxHash: made.createTx.txHash,
    budgetTxHash: made.budgetTx.txHash,
    now: deps.clock.now(),
  });
}

function keyOf(deps: Deps, profile: ProfileName, jobId: string) {
  return {
    chainId: deps.chain.chainId(profile),
    contractAddress: lower(deps.chain.jobs.address(profile)),
    jobId,
  };
}

/**
 * The chain's state wins over the row's: a job that moved on chain without its row changing (a
 * party acting on the contract directly, or a process stopped between a mined transaction and
 * its commit) is brought up to date, with the hashes the contract holds and the transactions we
 * recorded for it, if we sent them. A row never moves back.
 */
export async function reconcile(deps: Deps, row: JobRow): Promise<JobRow> {
  if (!chainIsAhead(row.status, "COMPLETED")) return row; // an end: nothing moves it
  const profile = profileOf(deps, row);
  const chain = await deps.chain.jobs.read(profile, BigInt(row.jobId));
  if (!chainIsAhead(row.status, chain.status)) return row;
  const change: repo.JobChange = { status: chain.status };
  const ZERO = `0x${"0".repeat(64)}`;
  if (chain.deliverable !== ZERO && row.deliverableHash === null) {
    change.deliverableHash = chain.deliverable;
  }
  if (chain.reason !== ZERO && row.reasonHash === null) change.reasonHash = chain.reason;
  const family = `job:${row.chainId}:${row.contractAddress}:${row.jobId}:`;
  for (const step of actionsBetween(row.status, chain.status)) {
    if (row[step.column] !== null) continue;
    const tx = await deps.chain.confirmedIntent(profile, `${family}${step.action}:`, step.suffix);
    if (tx) change[step.column] = tx.txHash;
  }
  await repo.update(deps.sql, row.id, change, deps.clock.now());
  deps.log.warn("job row caught up with the chain", {
    jobId: row.jobId,
    from: row.status,
    to: chain.status,
  });
  return (await repo.find(deps.sql, row))!;
}

/** Any caller's read: the job on the credential's chain, or job_not_found. */
export async function getJob(deps: Deps, profile: ProfileName, jobId: string): Promise<JobRow> {
  if (!JOB_ID.test(jobId) || !deps.chain.has(profile)) throw new DomainError("job_not_found");
  const row = await repo.find(deps.sql, keyOf(deps, profile, jobId));
  if (!row) throw new DomainError("job_not_found");
  return row;
}

/** The two checks before any transaction: the id is the job's party, and the caller's wallet. */
async function authorise(deps: Deps, m: MerchantRow, job: JobRow, role: JobRole, walletId: string) {
  const wallet = await deps.chain.findWallet(walletId);
  if (!wallet || lower(wallet.address) !== job[role]) {
    throw new DomainError(ROLE_ERRORS[role].mismatch);
  }
  if (!await controlledWallet(deps, m.id, { walletId })) {
    throw new DomainError(ROLE_ERRORS[role].notControlled);
  }
}

/** A contract refusal in the job's terms: WrongStatus and NotExpired decoded, others as they are. */
function refusal(err: unknown, action: string): unknown {
  if (!(err instanceof DomainError) || err.code !== "chain_reverted") return err;
  const reason = err.details.hint ?? "";
  const wrong = /WrongStatus\(\d+, (\d+)\)/.exec(reason);
  if (wrong) {
    const status = JOB_CHAIN_STATUSES[Number(wrong[1])] ?? wrong[1];
    return new DomainError("job_wrong_status", {
      hint: `The job is ${status} on chain; ${action} is not allowed in that status.`,
    });
  }
  // Our checks made the caller the role's party, so the contract's Unauthorized can only be the
  // state: an OPEN job is rejected by its client, not by the evaluator.
  if (/^Unauthorized\(/.test(reason)) {
    return new DomainError("job_wrong_status", {
      hint: `The contract refused ${action} by this party in the job's current status.`,
    });
  }
  const early = /NotExpired\((\d+)\)/.exec(reason);
  if (early) {
    return new DomainError("job_not_expired", {
      hint: `A refund is possible from ${new Date(Number(early[1]) * 1000).toISOString()}.`,
    });
  }
  return err;
}

/**
 * One action on a job: find it (404), authorise the caller's wallet for `role` (403), then, with
 * the row locked, send and record the change in the same database transaction.
 */
async function act<T>(
  deps: Deps,
  m: MerchantRow,
  profile: ProfileName,
  input: { jobId: string; walletId: string; role: JobRole; action: string },
  send: (job: JobRow) => Promise<T>,
  change: (result: T) => repo.JobChange,
): Promise<{ job: JobRow; result: T }> {
  const found = await getJob(deps, profile, input.jobId);
  await authorise(deps, m, found, input.role, input.walletId);
  try {
    return await inTransaction();
  } catch (e) {
    // Refused for the job's status: the chain may have moved without the row; catch up.
    if (e instanceof DomainError && e.code === "job_wrong_status") {
      await reconcile(deps, found).catch(() => {});
    }
    throw e;
  }
  async function inTransaction() {
    return await deps.sql.begin(async (db) => {
      const job = (await repo.find(db, keyOf(deps, profile, input.jobId), { lock: true }))!;
      let result: T;
      try {
        result = await send(job);
      } catch (e) {
        throw refusal(e, input.action);
      }
      await repo.update(db, job.id, change(result), deps.clock.now());
      return { job, result };
    }) as { job: JobRow; result: T };
  }
}

/**
 * An action's intent. With an Idempotency-Key it comes from the key and the request, so a retry
 * the idempotency layer did not store (released after a 408 or a 5xx) finds the first
 * transaction and answers with it. Without one, a repeat is a new request, which the contract
 * refuses in the job's new status.
 */
function intent(job: JobRow, action: string, req: Keyed) {
  const tail = req.requestKey === undefined
    ? crypto.randomUUID()
    : digest([`job-${action}`, req.merchantId, req.requestKey, canonical(req.input)]);
  return `job:${job.chainId}:${job.contractAddress}:${job.jobId}:${action}:${tail}`;
}

/** Who asked, with which Idempotency-Key (if any) and body: what a keyed intent is made of. */
interface Keyed {
  merchantId: string;
  requestKey?: string;
  input: unknown;
}

/** A request body as text for a digest (amounts are bigint). */
const canonical = (input: unknown) =>
  JSON.stringify(input, (_, v) => typeof v === "bigint" ? v.toString() : v);

const digest = (parts: string[]) => createHash("sha256").update(parts.join("\n")).digest("hex");

export async function fund(
  deps: Deps,
  m: MerchantRow,
  profile: ProfileName,
  input: { jobId: string; clientWalletId: string },
  requestKey?: string,
) {
  const keyed = { merchantId: m.id, requestKey, input };
  const { result } = await act(
    deps,
    m,
    profile,
    { jobId: input.jobId, walletId: input.clientWalletId, role: "client", action: "fund" },
    (job) =>
      deps.chain.jobs.fund(profile, {
        walletId: input.clientWalletId,
        client: job.client as `0x${string}`,
        jobId: BigInt(job.jobId),
        budget: job.budget,
        intentKey: intent(job, "fund", keyed),
      }),
    (r) => ({
      status: "FUNDED",
      approveTxHash: r.approveTx?.txHash ?? null,
      fundTxHash: r.fundTx.txHash,
    }),
  );
  return {
    jobId: input.jobId,
    status: "FUNDED" as const,
    approveTx: result.approveTx?.txHash ?? null,
    fundTx: result.fundTx.txHash,
    explorerUrl: deps.chain.explorerTxUrl(profile, result.fundTx.txHash),
  };
}

export async function submit(
  deps: Deps,
  m: MerchantRow,
  profile: ProfileName,
  input: { jobId: string; providerWalletId: string; deliverableData: string },
  requestKey?: string,
) {
  const keyed = { merchantId: m.id, requestKey, input };
  const deliverableHash = textHash(input.deliverableData);
  const { result } = await act(
    deps,
    m,
    profile,
    { jobId: input.jobId, walletId: input.providerWalletId, role: "provider", action: "submit" },
    (job) =>
      deps.chain.jobs.act(profile, {
        walletId: input.providerWalletId,
        action: "submit",
        jobId: BigInt(job.jobId),
        hash: deliverableHash,
        intentKey: intent(job, "submit", keyed),
      }),
    (tx) => ({
      status: "SUBMITTED",
      submitTxHash: tx.txHash,
      deliverableData: input.deliverableData,
      deliverableHash,
    }),
  );
  return {
    jobId: input.jobId,
    status: "SUBMITTED" as const,
    deliverableHash,
    txHash: result.txHash,
    explorerUrl: deps.chain.explorerTxUrl(profile, result.txHash),
  };
}

/** complete (→ COMPLETED, the budget paid to the provider) or reject (→ REJECTED, refunded). */
export async function evaluate(
  deps: Deps,
  m: MerchantRow,
  profile: ProfileName,
  action: "complete" | "reject",
  input: { jobId: string; evaluatorWalletId: string; reason?: string },
  requestKey?: string,
) {
  const keyed = { merchantId: m.id, requestKey, input };
  const reason = input.reason ??
    (action === "complete" ? DEFAULT_COMPLETE_REASON : DEFAULT_REJECT_REASON);
  const reasonHash = textHash(reason);
  const status = action === "complete" ? "COMPLETED" as const : "REJECTED" as const;
  const { result } = await act(
    deps,
    m,
    profile,
    { jobId: input.jobId, walletId: input.evaluatorWalletId, role: "evaluator", action },
    (job) =>
      deps.chain.jobs.act(profile, {
        walletId: input.evaluatorWalletId,
        action,
        jobId: BigInt(job.jobId),
        hash: reasonHash,
        intentKey: intent(job, action, keyed),
      }),
    (tx) => ({
      status,
      reason,
      reasonHash,
      ...(action === "complete" ? { completeTxHash: tx.txHash } : { rejectTxHash: tx.txHash }),
    }),
  );
  return {
    jobId: input.jobId,
    status,
    reasonHash,
    txHash: result.txHash,
    explorerUrl: deps.chain.explorerTxUrl(profile, result.txHash),
  };
}

/** After expiry the client takes the budget back (claimRefund → EXPIRED). */
export async function refund(
  deps: Deps,
  m: MerchantRow,
  profile: ProfileName,
  input: { jobId: string; clientWalletId: string },
  requestKey?: string,
) {
  const keyed = { merchantId: m.id, requestKey, input };
  const { result } = await act(
    deps,
    m,
    profile,
    { jobId: input.jobId, walletId: input.clientWalletId, role: "client", action: "refund" },
    (job) =>
      deps.chain.jobs.act(profile, {
        walletId: input.clientWalletId,
        action: "claimRefund",
        jobId: BigInt(job.jobId),
        intentKey: intent(job, "refund", keyed),
      }),
    (tx) => ({ status: "EXPIRED", refundTxHash: tx.txHash }),
  );
  return {
    jobId: input.jobId,
    status: "EXPIRED" as const,
    txHash: result.txHash,
    explorerUrl: deps.chain.explorerTxUrl(profile, result.txHash),
  };
}

/** The contract's view of a job (operators, tests comparing it with ours). */
export async function onChain(deps: Deps, job: JobRow) {
  return await deps.chain.jobs.read(profileOf(deps, job), BigInt(job.jobId));
}
