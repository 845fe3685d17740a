/** Job rules with no I/O: statuses, roles, the record shape, the texts a role's checks use. */
import type { ErrorCode } from "../../errors.ts";

/** The spec's OPEN, FUNDED, SUBMITTED, COMPLETED, REJECTED, plus ERC-8183's EXPIRED (refund). */
export const JOB_STATUSES = [
  "OPEN",
  "FUNDED",
  "SUBMITTED",
  "COMPLETED",
  "REJECTED",
  "EXPIRED",
] as const;
export type JobStatus = typeof JOB_STATUSES[number];

export type JobRole = "client" | "provider" | "evaluator";

/** Refusals per role, in the order they are checked: the id resolves, then the caller controls. */
export const ROLE_ERRORS: Record<JobRole, { mismatch: ErrorCode; notControlled: ErrorCode }> = {
  client: { mismatch: "job_client_mismatch", notControlled: "job_client_not_controlled" },
  provider: { mismatch: "job_provider_mismatch", notControlled: "job_provider_not_controlled" },
  evaluator: {
    mismatch: "job_evaluator_mismatch",
    notControlled: "job_evaluator_not_controlled",
  },
};

export const DEFAULT_COMPLETE_REASON = "deliverable-approved";
export const DEFAULT_REJECT_REASON = "deliverable-rejected";
export const MIN_JOB_SECONDS = 60;
export const MAX_JOB_SECONDS = 365 * 24 * 3600;

/** A job id as the contract numbers them: 1, 2, … (digits, no sign, no leading zero). */
export const JOB_ID = /^[1-9][0-9]{0,30}$/;

export interface JobRow {
  id: string;
  chainId: number;
  contractAddress: string;
  jobId: string;
  merchantId: string;
  client: string;
  clientWalletId: string;
  provider: string;
  evaluator: string;
  budget: bigint;
  description: string;
  expiresAt: Date;
  status: JobStatus;
  deliverableData: string | null;
  deliverableHash: string | null;
  reason: string | null;
  reasonHash: string | null;
  createTxHash: string;
  budgetTxHash: string;
  approveTxHash: string | null;
  fundTxHash: string | null;
  submitTxHash: string | null;
  completeTxHash: string | null;
  rejectTxHash: string | null;
  refundTxHash: string | null;
  /** The action being sent, recorded before its first transaction (see JobPending). */
  pendingAction: JobActionName | null;
  pendingIntent: string | null;
  pendingChange: Record<string, string> | null;
  pendingAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

export type JobActionName = "fund" | "submit" | "complete" | "reject" | "refund";

/**
 * The statuses each action may be sent in (the contract's rules): any other is refused before
 * anything is signed. Whether a refund's expiry has come is the chain's clock: left to it.
 */
export const ACTION_FROM: Record<JobActionName, JobStatus[]> = {
  fund: ["OPEN"],
  submit: ["FUNDED"],
  complete: ["SUBMITTED"],
  reject: ["FUNDED", "SUBMITTED"],
  refund: ["FUNDED", "SUBMITTED"],
};

/** The sender intents an action's transactions carry: fund's approval and deposit, or one. */
export function actionIntents(action: JobActionName, intent: string): string[] {
  return action === "fund" ? [`${intent}:approve`, `${intent}:fund`] : [intent];
}

/** The transaction column each of an action's intents fills. */
export function intentColumn(action: JobActionName, intentKey: string): TxColumn {
  if (action === "fund") return intentKey.endsWith(":approve") ? "approveTxHash" : "fundTxHash";
  const columns: Record<Exclude<JobActionName, "fund">, TxColumn> = {
    submit: "submitTxHash",
    complete: "completeTxHash",
    reject: "rejectTxHash",
    refund: "refundTxHash",
  };
  return columns[action];
}

/** Statuses in the order a job moves through them; the last three are ends. */
const RANK: Record<JobStatus, number> = {
  OPEN: 0,
  FUNDED: 1,
  SUBMITTED: 2,
  COMPLETED: 3,
  REJECTED: 3,
  EXPIRED: 3,
};

/** Whether the chain's status is ahead of the row's (a row never moves back or sideways). */
export const chainIsAhead = (row: JobStatus, chain: JobStatus) => RANK[chain] > RANK[row];

/**
 * The actions that took a job from `from` to `to`, with the transaction column each fills: what
 * to look up among our own recorded intents when the chain moved without the row.
 * (EXPIRED: a refund of a FUNDED job; REJECTED: the evaluator's, from FUNDED or SUBMITTED.)
 */
export function actionsBetween(
  from: JobStatus,
  to: JobStatus,
): { action: string; suffix: string; column: TxColumn }[] {
  const steps: { action: string; suffix: string; column: TxColumn; at: number }[] = [
    { action: "fund", suffix: ":approve", column: "approveTxHash", at: 1 },
    { action: "fund", suffix: ":fund", column: "fundTxHash", at: 1 },
    { action: "submit", suffix: "", column: "submitTxHash", at: 2 },
  ];
  const end: Partial<Record<JobStatus, { action: string; column: TxColumn }>> = {
    COMPLETED: { action: "complete", column: "completeTxHash" },
    REJECTED: { action: "reject", column: "rejectTxHash" },
    EXPIRED: { action: "refund", column: "refundTxHash" },
  };
  const out = steps.filter((s) => s.at > RANK[from] && s.at <= RANK[to]).map(
    ({ action, suffix, column }) => ({ action, suffix, column }),
  );
  const last = end[to];
  if (last) out.push({ ...last, suffix: "" });
  return out;
}

export type TxColumn =
  | "approveTxHash"
  | "fundTxHash"
  | "submitTxHash"
  | "completeTxHash"
  | "rejectTxHash"
  | "refundTxHash";
