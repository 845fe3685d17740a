/**
 * ERC-8183 jobs over AgenticCommerce. Jobs cross merchants: the client, provider and evaluator
 * may be anyone's wallets, so any authenticated caller finds a job by its on-chain id (on the
 * chain its credential selects) and a wallet id resolves to its address whoever owns it. Each
 * action checks, before anything is signed, that the wallet id resolves to the address recorded
 * on the job and that the caller controls that wallet (403, `{ error }`). Actions on one job are
 * serialised by the job's claim, which holds no connection (src/db/claims.ts): under it the job
 * is caught up with the chain, an action its status does not allow is refused (400, nothing
 * sent), the action is recorded on the row, sent with no transaction open, and its result
 * recorded in one statement (commerce.catchup.ts finishes what a crash leaves).
 */
import { bigintJson, sha256 } from "../../codec.ts";
import type { Deps } from "../../deps.ts";
import { DomainError } from "../../errors.ts";
import { withClaim } from "../../db/claims.ts";
import { checksum, lower } from "../../chain/address.ts";
import { JOB_CHAIN_STATUSES, textHash } from "../../chain/commerce.ts";
import type { ProfileName } from "../../chain/profiles.ts";
import { formatUsdc } from "../../money.ts";
import type { MerchantRow } from "../merchants/merchants.types.ts";
import { controlledWallet, usdcClaim } from "../wallets/wallets.service.ts";
import * as repo from "./commerce.repo.ts";
import type { CreateJobInput } from "./commerce.schemas.ts";
import {
  ACTION_FROM,
  actionIntents,
  DEFAULT_COMPLETE_REASON,
  DEFAULT_REJECT_REASON,
  JOB_ID,
  type JobActionName,
  type JobRole,
  type JobRow,
  type JobStatus,
  ROLE_ERRORS,
} from "./commerce.rules.ts";
import { jobClaim, reconcile, settlePending } from "./commerce.catchup.ts";

export type { JobRow } from "./commerce.rules.ts";
export { catchUpPending, reconcile } from "./commerce.catchup.ts";

/** Jobs on `profile`'s chain the merchant created or where one of `addresses` is a party. */
export async function jobsForParties(
  deps: Deps,
  profile: ProfileName,
  merchantId: string,
  addresses: string[],
  limit: number,
): Promise<JobRow[]> {
  return await repo.listForParties(deps.sql, {
    chainIds: deps.chain.has(profile) ? [deps.chain.chainId(profile)] : [],
    merchantId,
    addresses,
    limit,
  });
}

/** The job record every response shows. */
export function jobView(deps: Deps, j: JobRow) {
  const profile = deps.chain.profileOf(j.chainId);
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

/** The refusal of an action the job's status does not allow (decided before sending). */
function wrongStatus(status: JobStatus | string, action: string): DomainError {
  return new DomainError("job_wrong_status", {
    hint: `The job is ${status} on chain; ${action} is not allowed in that status.`,
  });
}

/** A contract refusal in the job's terms: WrongStatus and NotExpired decoded, others as they are. */
function refusal(err: unknown, action: string): unknown {
  if (!(err instanceof DomainError) || err.code !== "chain_reverted") return err;
  const reason = err.details.hint ?? "";
  const wrong = /WrongStatus\(\d+, (\d+)\)/.exec(reason);
  if (wrong) return wrongStatus(JOB_CHAIN_STATUSES[Number(wrong[1])] ?? wrong[1], action);
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

interface ActionSpec<T> {
  jobId: string;
  walletId: string;
  role: JobRole;
  action: JobActionName;
  keyed: Keyed;
  /** The text the row takes with the result (the chain holds only its hash). */
  text?: Partial<repo.JobChange>;
  send: (job: JobRow, intentKey: string) => Promise<T>;
  change: (result: T) => repo.JobChange;
}

/**
 * One action on a job: find it (404) and authorise the caller's wallet for its role (403), then
 * under the job's claim: settle what a dead process left pending, catch up with the chain,
 * refuse a status the action is not allowed in (400), record the action on the row, send it
 * with no transaction open, and record the result in one statement.
 */
async function act<T>(
  deps: Deps,
  m: MerchantRow,
  profile: ProfileName,
  spec: ActionSpec<T>,
): Promise<{ job: JobRow; result: T }> {
  const found = await getJob(deps, profile, spec.jobId);
  await authorise(deps, m, found, spec.role, spec.walletId);
  return await withClaim(deps.sql, jobClaim(found), async () => {
    let job = (await repo.find(deps.sql, found))!;
    if (job.pendingAction) {
      const earlier = await settlePending(deps, job);
      // A dead process's transaction not yet decided: its recovery will tell.
      if (earlier.inFlight) throw new DomainError("resource_busy");
      job = earlier.row;
    }
    const intentKey = intent(job, spec.action, spec.keyed);
    // A keyed retry whose transactions were sent answers with them (whatever the status now).
    const replay = spec.keyed.requestKey !== undefined &&
      await deps.chain.transaction(profile, actionIntents(spec.action, intentKey).at(-1)!);
    if (!replay) {
      job = await reconcile(deps, job);
      if (!ACTION_FROM[spec.action].includes(job.status)) {
        throw wrongStatus(job.status, spec.action);
      }
    }
    await repo.markPending(deps.sql, job.id, {
      action: spec.action,
      intent: intentKey,
      change: spec.text ?? {},
    });
    let result: T;
    try {
      result = await spec.send(job, intentKey);
    } catch (e) {
      await forgetUnlessInFlight(deps, profile, job, spec.action, intentKey);
      const refused = refusal(e, spec.action);
      // Refused for the job's status: the chain moved without the row; catch up.
      if (refused instanceof DomainError && refused.code === "job_wrong_status") {
        await reconcile(deps, job).catch(() => {});
      }
      throw refused;
    }
    const row = await repo.applyAction(
      deps.sql,
      job.id,
      ACTION_FROM[spec.action],
      { ...spec.change(result), ...spec.text },
      intentKey,
      deps.clock.now(),
    );
    return { job: row, result };
  });
}

/**
 * After a failed send: the pending record goes unless one of the action's transactions is still
 * in flight (a receipt timeout): then the catch-up follows it.
 */
async function forgetUnlessInFlight(
  deps: Deps,
  profile: ProfileName,
  job: JobRow,
  action: JobActionName,
  intentKey: string,
) {
  const txs = await Promise.all(
    actionIntents(action, intentKey).map((k) => deps.chain.intent(profile, k)),
  );
  if (txs.some((t) => t && (t.status === "signed" || t.status === "broadcast"))) return;
  await repo.clearPending(deps.sql, job.id, intentKey);
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
const canonical = (input: unknown) => bigintJson(input);

const digest = (parts: string[]) => sha256(parts.join("\n"));

export async function fund(
  deps: Deps,
  m: MerchantRow,
  profile: ProfileName,
  input: { jobId: string; clientWalletId: string },
  requestKey?: string,
) {
  const { result } = await act(deps, m, profile, {
    jobId: input.jobId,
    walletId: input.clientWalletId,
    role: "client",
    action: "fund",
    keyed: { merchantId: m.id, requestKey, input },
    // Under the client wallet's USDC claim (its withdrawals, deposits and other funds take it):
    // the balance checked is the one the approval and the deposit spend, and two jobs funded at
    // once from one wallet cannot overwrite each other's approval. A short balance is a 400
    // before anything is signed; a retry of a sent fund finds its transactions by intent.
    send: (job, intentKey) =>
      withClaim(deps.sql, usdcClaim(deps, profile, job.client), async () => {
        const [approved, funded] = await Promise.all([
          deps.chain.intent(profile, `${intentKey}:approve`),
          deps.chain.intent(profile, `${intentKey}:fund`),
        ]);
        if (!approved && !funded) {
          const balance = await deps.chain.usdcBalance(profile, job.client as `0x${string}`);
          if (balance < job.budget) {
            throw new DomainError("job_insufficient_balance", {
              balance: formatUsdc(balance, { decimals: "fixed" }),
            });
          }
        }
        return await deps.chain.jobs.fund(profile, {
          walletId: input.clientWalletId,
          client: job.client as `0x${string}`,
          jobId: BigInt(job.jobId),
          budget: job.budget,
          intentKey,
        });
      }),
    change: (r) => ({
      status: "FUNDED",
      approveTxHash: r.approveTx?.txHash ?? null,
      fundTxHash: r.fundTx.txHash,
    }),
  });
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
  const deliverableHash = textHash(input.deliverableData);
  const { result } = await act(deps, m, profile, {
    jobId: input.jobId,
    walletId: input.providerWalletId,
    role: "provider",
    action: "submit",
    keyed: { merchantId: m.id, requestKey, input },
    text: { deliverableData: input.deliverableData, deliverableHash },
    send: (job, intentKey) =>
      deps.chain.jobs.act(profile, {
        walletId: input.providerWalletId,
        action: "submit",
        jobId: BigInt(job.jobId),
        hash: deliverableHash,
        intentKey,
      }),
    change: (tx) => ({ status: "SUBMITTED", submitTxHash: tx.txHash }),
  });
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
  const reason = input.reason ??
    (action === "complete" ? DEFAULT_COMPLETE_REASON : DEFAULT_REJECT_REASON);
  const reasonHash = textHash(reason);
  const status = action === "complete" ? "COMPLETED" as const : "REJECTED" as const;
  const { result } = await act(deps, m, profile, {
    jobId: input.jobId,
    walletId: input.evaluatorWalletId,
    role: "evaluator",
    action,
    keyed: { merchantId: m.id, requestKey, input },
    text: { reason, reasonHash },
    send: (job, intentKey) =>
      deps.chain.jobs.act(profile, {
        walletId: input.evaluatorWalletId,
        action,
        jobId: BigInt(job.jobId),
        hash: reasonHash,
        intentKey,
      }),
    change: (tx) => ({
      status,
      ...(action === "complete" ? { completeTxHash: tx.txHash } : { rejectTxHash: tx.txHash }),
    }),
  });
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
  const { result } = await act(deps, m, profile, {
    jobId: input.jobId,
    walletId: input.clientWalletId,
    role: "client",
    action: "refund",
    keyed: { merchantId: m.id, requestKey, input },
    send: (job, intentKey) =>
      deps.chain.jobs.act(profile, {
        walletId: input.clientWalletId,
        action: "claimRefund",
        jobId: BigInt(job.jobId),
        intentKey,
      }),
    change: (tx) => ({ status: "EXPIRED", refundTxHash: tx.txHash }),
  });
  return {
    jobId: input.jobId,
    status: "EXPIRED" as const,
    txHash: result.txHash,
    explorerUrl: deps.chain.explorerTxUrl(profile, result.txHash),
  };
}

/** The contract's view of a job (operators, tests comparing it with ours). */
export async function onChain(deps: Deps, job: JobRow) {
  return await deps.chain.jobs.read(deps.chain.profileOf(job.chainId), BigInt(job.jobId));
}
