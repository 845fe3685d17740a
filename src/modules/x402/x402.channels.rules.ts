/**
 * The x402 `batch-settlement` scheme's wire forms, as small pure pieces: the payloads a client
 * (or a seller's server, at the facilitator) sends, the channel terms we accept, the channel
 * state every answer carries, and the protocol's error codes.
 */
import { z } from "zod";

export const SCHEME = "batch-settlement";
/** The payer's escape hatch: seconds between initiating a withdrawal and taking it. */
export const WITHDRAW_DELAY = 900;
/** The binding's bounds on a channel's withdrawal delay (15 minutes to 30 days). */
export const MIN_WITHDRAW_DELAY = 900;
export const MAX_WITHDRAW_DELAY = 2_592_000;
/** The 402's `minDeposit` hint: a channel opened at it pays this many calls. */
export const MIN_DEPOSIT_CALLS = 100n;
/** How long a deposit authorization may stay valid (its validBefore - now). */
export const MAX_TIMEOUT_SECONDS = 300;
/** How old the mirrored contract state may be for a voucher to be checked against it. */
export const STATE_TTL_MS = 30_000;
/** How long a request may hold its channel before another may take it (a dead process). */
export const HOLD_MS = 120_000;

/** The protocol's error codes (x402 specs/schemes/batch-settlement, EVM binding). */
export const E = {
  scheme: "invalid_batch_settlement_evm_scheme",
  network: "invalid_batch_settlement_evm_network_mismatch",
  payloadType: "invalid_batch_settlement_evm_payload_type",
  channelId: "invalid_batch_settlement_evm_channel_id_mismatch",
  receiver: "invalid_batch_settlement_evm_receiver_mismatch",
  receiverAuthorizer: "invalid_batch_settlement_evm_receiver_authorizer_mismatch",
  token: "invalid_batch_settlement_evm_token_mismatch",
  withdrawDelay: "invalid_batch_settlement_evm_withdraw_delay_mismatch",
  withdrawDelayRange: "invalid_batch_settlement_evm_withdraw_delay_out_of_range",
  voucherSignature: "invalid_batch_settlement_evm_voucher_signature",
  notFound: "invalid_batch_settlement_evm_channel_not_found",
  exceedsBalance: "invalid_batch_settlement_evm_cumulative_exceeds_balance",
  belowClaimed: "invalid_batch_settlement_evm_cumulative_below_claimed",
  mismatch: "invalid_batch_settlement_evm_cumulative_amount_mismatch",
  busy: "invalid_batch_settlement_evm_channel_busy",
  insufficient: "invalid_batch_settlement_evm_insufficient_balance",
  validBefore: "invalid_batch_settlement_evm_payload_authorization_valid_before",
  validAfter: "invalid_batch_settlement_evm_payload_authorization_valid_after",
  receiveSignature: "invalid_batch_settlement_evm_receive_authorization_signature",
  erc3009Required: "invalid_batch_settlement_evm_erc3009_authorization_required",
  depositFailed: "invalid_batch_settlement_evm_deposit_transaction_failed",
  depositSimulation: "invalid_batch_settlement_evm_deposit_simulation_failed",
  claimFailed: "invalid_batch_settlement_evm_claim_transaction_failed",
  settleFailed: "invalid_batch_settlement_evm_settle_transaction_failed",
  refundFailed: "invalid_batch_settlement_evm_refund_transaction_failed",
  refundNoBalance: "invalid_batch_settlement_evm_refund_no_balance",
  refundAmount: "invalid_batch_settlement_evm_refund_amount_invalid",
  missingChannel: "invalid_batch_settlement_evm_missing_channel",
  authorizerMismatch: "invalid_batch_settlement_evm_authorizer_address_mismatch",
  rpc: "invalid_batch_settlement_evm_rpc_read_failed",
  /** Ours: the payer started its timed withdrawal; the channel takes no new charges. */
  withdrawPending: "invalid_batch_settlement_evm_withdraw_pending",
  /** Ours: a channel whose receiver is not one of the calling merchant's addresses. */
  notYours: "invalid_batch_settlement_evm_receiver_not_yours",
} as const;

const hex32 = z.string().regex(/^0x[0-9a-fA-F]{64}$/).transform((s) => s.toLowerCase() as Hex);
const address = z.string().regex(/^0x[0-9a-fA-F]{40}$/)
  .transform((s) => s.toLowerCase() as Hex);
/** Base units within a PostgreSQL bigint (below 10^18: a trillion USDC). */
const units = z.union([z.string(), z.number().int().nonnegative()])
  .transform((v) => String(v))
  .refine((v) => /^(0|[1-9][0-9]{0,17})$/.test(v))
  .transform((v) => BigInt(v));
const signature = z.string().regex(/^0x([0-9a-fA-F]{2})+$/).max(2 + 2 * 4096)
  .transform((s) => s as Hex);

type Hex = `0x${string}`;

export const channelConfigSchema = z.object({
  payer: address,
  payerAuthorizer: address,
  receiver: address,
  receiverAuthorizer: address,
  token: address,
  withdrawDelay: z.number().int().min(0).max(2 ** 40 - 1),
  salt: hex32,
});
export type ChannelTerms = z.output<typeof channelConfigSchema>;

/** Just the terms of a channel record (the contract's ChannelConfig struct). */
export function termsOf(t: ChannelTerms): ChannelTerms {
  return {
    payer: t.payer,
    payerAuthorizer: t.payerAuthorizer,
    receiver: t.receiver,
    receiverAuthorizer: t.receiverAuthorizer,
    token: t.token,
    withdrawDelay: t.withdrawDelay,
    salt: t.salt,
  };
}

const voucher = z.object({ channelId: hex32, maxClaimableAmount: units, signature });
const erc3009 = z.object({
  validAfter: units,
  validBefore: units,
  salt: z.string().regex(/^0x[0-9a-fA-F]{1,64}$/).transform((s) => s as Hex),
  signature,
});
export const claimEntry = z.object({
  voucher: z.object({ channel: channelConfigSchema, maxClaimableAmount: units }),
  signature,
  totalClaimed: units,
});

export const channelPayload = z.discriminatedUnion("type", [
  z.object({
    type: z.literal("deposit"),
    channelConfig: channelConfigSchema,
    voucher,
    deposit: z.object({
      amount: units,
      authorization: z.object({ erc3009Authorization: erc3009.optional() }).passthrough(),
    }),
  }),
  z.object({ type: z.literal("voucher"), channelConfig: channelConfigSchema, voucher }),
  z.object({
    type: z.literal("refund"),
    channelConfig: channelConfigSchema,
    voucher,
    amount: units.optional(),
    refundNonce: units.optional(),
    claims: z.array(claimEntry).max(1).optional(),
    refundAuthorizerSignature: signature.optional(),
    claimAuthorizerSignature: signature.optional(),
  }),
  z.object({
    type: z.literal("claim"),
    claims: z.array(claimEntry).min(1).max(500),
    claimAuthorizerSignature: signature.optional(),
  }),
  z.object({ type: z.literal("settle"), receiver: address, token: address }),
]);
export type ChannelPayload = z.output<typeof channelPayload>;

/** A v2 payment payload naming the scheme (x402 v1 has no batch-settlement). */
export const channelEnvelope = z.object({
  x402Version: z.literal(2),
  accepted: z.object({ scheme: z.literal(SCHEME), network: z.string() }).passthrough(),
  payload: z.unknown(),
}).passthrough();

/** Whether a decoded header is a batch-settlement payment (then it is ours to answer). */
export function isChannelEnvelope(decoded: unknown): boolean {
  const d = decoded as { accepted?: { scheme?: unknown } } | null;
  return d?.accepted?.scheme === SCHEME;
}

/**
 * What a channel must be to pay against requirements: the terms offered (receiver, receiver
 * authorizer, token, withdrawal delay when named, within the binding's bounds), hashing to the
 * id the voucher names.
 */
export function termsError(
  t: ChannelTerms,
  claimedId: string,
  expect: {
    channelId: string;
    receiver: string;
    receiverAuthorizer: string;
    token: string;
    withdrawDelay?: number;
  },
): string | null {
  if (expect.channelId !== claimedId.toLowerCase()) return E.channelId;
  if (t.receiver !== expect.receiver.toLowerCase()) return E.receiver;
  if (
    /^0x0{40}$/.test(t.receiverAuthorizer) ||
    t.receiverAuthorizer !== expect.receiverAuthorizer.toLowerCase()
  ) {
    return E.receiverAuthorizer;
  }
  if (t.token !== expect.token.toLowerCase()) return E.token;
  if (expect.withdrawDelay !== undefined && t.withdrawDelay !== expect.withdrawDelay) {
    return E.withdrawDelay;
  }
  if (t.withdrawDelay < MIN_WITHDRAW_DELAY || t.withdrawDelay > MAX_WITHDRAW_DELAY) {
    return E.withdrawDelayRange;
  }
  return null;
}

export interface ChannelSnapshot {
  channelId: string;
  balance: bigint;
  claimed: bigint;
  withdrawRequestedAt: bigint | number;
  refundNonce: bigint;
  charged?: bigint;
}

/** `extra.channelState` of every answer (strings, as the clients parse them). */
export function channelState(s: ChannelSnapshot) {
  return {
    channelId: s.channelId,
    balance: s.balance.toString(),
    totalClaimed: s.claimed.toString(),
    withdrawRequestedAt: Number(s.withdrawRequestedAt),
    refundNonce: s.refundNonce.toString(),
    ...(s.charged === undefined ? {} : { chargedCumulativeAmount: s.charged.toString() }),
  };
}
