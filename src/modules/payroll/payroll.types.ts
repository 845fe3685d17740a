/** Payroll rows as the module sees them (amounts in base units, addresses lower case). */
export const BATCH_STATUSES = [
  "PROCESSING",
  "COMPLETED",
  "PARTIAL_FAILURE",
  "FAILED",
  "AWAITING_SIGNATURES",
] as const;
export type BatchStatus = typeof BATCH_STATUSES[number];

export type RecipientStatus = "PENDING" | "SUCCESS" | "FAILED" | "PENDING_SIGNATURE";

export interface BatchRow {
  id: string;
  merchantId: string;
  batchRef: string;
  profile: string;
  chainId: number;
  payerSca: `0x${string}`;
  payerWalletKind: string;
  payerWalletId: string | null;
  totalAmount: bigint;
  recipientCount: number;
  successCount: number;
  failedCount: number;
  pendingSignatureCount: number;
  status: BatchStatus;
  webhookUrl: string | null;
  description: string | null;
  requestHash: string | null;
  createdAt: Date;
  completedAt: Date | null;
}

export interface RecipientRow {
  batchId: string;
  idx: number;
  recipientSca: `0x${string}`;
  amount: bigint;
  label: string | null;
  /** The label, else the batch description. */
  memo: string | null;
  chunk: number | null;
  status: RecipientStatus;
  txHash: string | null;
  error: string | null;
  requestId: string | null;
  signTxHash: string | null;
}

/** A recipient as the run request gave it, parsed. */
export interface RecipientInput {
  recipientSCA: `0x${string}`;
  amount: bigint;
  label: string | null;
}

export interface RunInput {
  recipients: RecipientInput[];
  webhookUrl: string | null;
  description: string | null;
}
