/**
 * The one table from domain error codes to HTTP answers (status, catalog text, default hint),
 * and `answerFor`, which turns any thrown value into the answer the API's error handler sends
 * and the dashboard shows. Edge errors (ApiError: auth, rate limits, body parsing) carry their
 * answer themselves; anything else is a 500 with the catalog's generic text.
 */
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { DomainError, type ErrorCode } from "../errors.ts";
import { ApiError, type ErrorBody } from "./errors.ts";
import { M, MF } from "./messages.ts";
import { isBackstopError } from "../db/client.ts";
import { databaseNotReady } from "../db/wait.ts";

export interface ErrorEntry {
  status: ContentfulStatusCode;
  /** The catalog text (`M`). */
  text: string;
  /** Shown when the error carries no hint of its own. */
  hint?: string;
  /** Answered as the spec's bare `{ error }` body. */
  bare?: boolean;
}

export const ERROR_MAP: Readonly<Record<ErrorCode, ErrorEntry>> = {
  email_taken: { status: 409, text: M.emailTaken },
  account_not_found: { status: 404, text: M.noAccount },
  account_already_verified: { status: 409, text: M.alreadyVerified },
  verification_code_invalid: { status: 400, text: M.invalidCode },
  verification_code_expired: { status: 400, text: M.codeExpired },
  verification_code_locked: { status: 400, text: M.codeLocked },
  login_invalid: { status: 401, text: M.badLogin },
  login_unverified: { status: 403, text: M.unverifiedLogin },
  login_throttled: {
    status: 429,
    text: M.rateLimited,
    hint: M.loginThrottledHint,
  },

  wallet_setup_failed: { status: 500, text: M.walletSetupFailed },
  wallet_provider_not_managed: { status: 400, text: M.walletPatchExternal },
  wallet_already_managed: { status: 409, text: M.walletAlreadyManaged },
  wallet_address_missing: { status: 400, text: M.connectAddressMissing },
  wallet_address_invalid: { status: 400, text: M.connectAddressInvalid },
  wallet_link_fields_missing: { status: 400, text: M.connectFields },
  wallet_kind_invalid: { status: 400, text: M.connectKind },
  wallet_challenge_missing: { status: 400, text: M.connectChallenge },
  wallet_signature_invalid: { status: 401, text: M.connectSignature },

  wallet_not_found: { status: 404, text: M.walletNotFound },
  stream_not_found: { status: 404, text: M.streamNotFound },
  stream_not_active: { status: 400, text: M.streamNotActive },
  stream_already_completed: { status: 400, text: M.streamCompleted },
  stream_sender_not_controlled: { status: 403, text: M.streamSenderNotControlled },
  stream_receiver_not_controlled: { status: 403, text: M.streamReceiverNotControlled },
  stream_receiver_contract: { status: 400, text: M.streamReceiverContract },
  stream_not_receiver: { status: 403, text: M.streamNotReceiver },
  stream_caller_not_controlled: { status: 403, text: M.streamCallerNotControlled },
  stream_insufficient_balance: { status: 400, text: M.streamInsufficientBalance },
  stream_request_key_reused: {
    status: 400,
    text: M.idempotencyMismatch,
    hint: M.idempotencyMismatchHint,
  },
  stream_nothing_to_withdraw: { status: 400, text: M.streamNothingToWithdraw },
  payroll_not_found: { status: 404, text: M.payrollNotFound },
  payroll_recipient_contract: { status: 400, text: M.payrollRecipientContract },
  payroll_request_key_reused: {
    status: 400,
    text: M.idempotencyMismatch,
    hint: M.idempotencyMismatchHint,
  },
  sign_request_not_found: { status: 404, text: M.signRequestNotFound },
  sign_request_not_pending: { status: 409, text: M.signRequestNotPending },
  sign_tx_not_found: { status: 400, text: M.signTxNotFound, hint: M.signTxNotFoundHint },
  sign_tx_mismatch: { status: 400, text: M.signTxMismatch },
  sign_tx_reused: { status: 409, text: M.signTxReused },
  withdraw_external_wallet: { status: 400, text: M.withdrawExternal },
  withdraw_insufficient_balance: { status: 400, text: M.withdrawInsufficient },
  withdraw_destination_contract: { status: 400, text: M.withdrawDestinationContract },

  key_not_found: { status: 404, text: M.keyNotFound },
  key_already_revoked: { status: 400, text: M.keyAlreadyRevoked },
  merchant_key_not_revocable: { status: 400, text: M.merchantKeyRevoke },

  consumer_address_invalid: { status: 400, text: M.consumerAddress },
  consumer_session_missing: { status: 401, text: M.consumerNoSession },
  consumer_session_invalid: { status: 401, text: M.consumerBadSession },

  webhook_url_invalid: { status: 400, text: M.webhookUrlInvalid },
  delivery_not_found: { status: 404, text: M.deliveryNotFound },

  payout_wallet_missing: { status: 400, text: M.paymentNoWallet },
  payment_not_found: { status: 404, text: M.paymentNotFound },
  payment_not_payable: { status: 409, text: M.paymentNotPayable },
  payment_paid_by_other: { status: 409, text: M.paymentPaidByOther },
  payment_bridge_under_way: { status: 409, text: M.paymentBridgeUnderWay },
  payment_cursor_invalid: { status: 400, text: M.paymentCursor },
  payer_address_invalid: { status: 400, text: M.payerAddress },
  permit_signature_invalid: { status: 400, text: M.permitSignature },
  tx_hash_invalid: { status: 400, text: M.txHashInvalid },
  // Gasless checkout: a relay is refused before anything is signed or broadcast.
  authorization_amount_mismatch: { status: 400, text: M.authorizationAmount },
  authorization_payee_mismatch: { status: 400, text: M.authorizationPayee },
  authorization_reference_mismatch: { status: 400, text: M.authorizationReference },
  authorization_expired: { status: 400, text: M.authorizationExpired },
  authorization_window_invalid: { status: 400, text: M.authorizationWindow },
  authorization_signature_invalid: { status: 400, text: M.authorizationSignature },
  payer_balance_insufficient: { status: 400, text: M.payerBalance },
  dev_faucet_unavailable: { status: 404, text: M.devFaucetUnavailable },

  escrow_not_found: { status: 404, text: M.escrowNotFound },
  escrow_wallet_not_controlled: { status: 403, text: M.escrowNotControlled },
  escrow_depositor_not_controlled: { status: 403, text: M.escrowDepositorNotControlled },
  escrow_not_party: { status: 403, text: M.escrowNotParty },
  escrow_not_depositor: { status: 403, text: M.escrowNotDepositor },
  escrow_not_beneficiary: { status: 403, text: M.escrowNotBeneficiary },
  escrow_parties_invalid: { status: 400, text: M.escrowParties },
  escrow_beneficiary_contract: { status: 400, text: M.escrowBeneficiaryContract },
  escrow_expiry_invalid: { status: 400, text: M.escrowExpiry },
  escrow_insufficient_balance: { status: 400, text: M.escrowInsufficient },
  // The text names the state and the action (MF.escrowWrongState): the spec's dispute text.
  escrow_wrong_state: { status: 400, text: M.escrowWrongState },
  escrow_already_confirmed: { status: 400, text: M.escrowAlreadyConfirmed },
  escrow_not_expired: { status: 400, text: M.escrowNotExpired },

  bridge_sign_in_required: { status: 401, text: M.bridgeSignIn },
  bridge_fields_missing: { status: 400, text: M.bridgeFields },
  bridge_source_unsupported: { status: 400, text: M.bridgeSourceUnsupported },
  bridge_destination_unsupported: { status: 400, text: M.bridgeDestination },
  bridge_external_wallet: { status: 400, text: M.bridgeExternalWallet },
  bridge_recipient_contract: { status: 400, text: M.bridgeRecipientContract },
  bridge_insufficient_balance: { status: 400, text: M.bridgeBalance },
  bridge_not_found: { status: 404, text: M.bridgeNotFound },
  bridge_payment_not_bridgeable: { status: 400, text: M.bridgePayment },
  bridge_amount_below_fee: { status: 400, text: M.bridgeBelowFee },
  // Cross-chain checkout from the shopper's wallet: refused before anything is written or sent.
  bridge_signature_unavailable: { status: 400, text: M.bridgeSignatureUnavailable },
  bridge_authorization_used: { status: 400, text: M.bridgeAuthorizationUsed },
  bridge_fee_changed: { status: 400, text: M.bridgeFeeChanged },
  bridge_burn_not_found: { status: 404, text: M.bridgeBurnNotFound },
  bridge_burn_reverted: { status: 400, text: M.bridgeBurnReverted },
  bridge_burn_invalid: { status: 400, text: M.bridgeBurnInvalid },
  bridge_burn_wrong_payment: { status: 400, text: M.bridgeBurnWrongPayment },
  bridge_burn_wrong_recipient: { status: 400, text: M.bridgeBurnWrongRecipient },
  bridge_burn_amount: { status: 400, text: M.bridgeBurnAmount },
  bridge_burn_used: { status: 409, text: M.bridgeBurnUsed },
  x402_slug_taken: { status: 409, text: M.x402SlugTaken },
  x402_listing_not_found: { status: 404, text: M.x402ListingNotFound },
  x402_method_not_allowed: { status: 400, text: M.x402MethodNotAllowed },
  // The spec: 403 for an invalid or stale payment proof.
  x402_proof_invalid: { status: 403, text: M.x402ProofInvalid },
  x402_proof_expired: { status: 403, text: M.x402ProofExpired },
  x402_proof_amount: { status: 403, text: M.x402ProofAmount },
  x402_proof_payee: { status: 403, text: M.x402ProofPayee },
  x402_proof_used: { status: 403, text: M.x402ProofUsed },
  x402_no_gateway_balance: { status: 400, text: M.x402NoGatewayBalance },
  x402_insufficient_gateway_balance: { status: 400, text: M.x402InsufficientGatewayBalance },
  // The text names the upstream's status (MF.x402Upstream).
  x402_upstream_failed: { status: 500, text: M.x402UpstreamUnreachable },
  x402_upstream_unreachable: { status: 500, text: M.x402UpstreamUnreachable },
  x402_agent_invalid: { status: 400, text: M.x402AgentIdField },
  x402_agent_refused: { status: 403, text: M.x402AgentRefused },
  x402_settlement_failed: { status: 502, text: M.x402SettlementFailed },
  // This process was out of touch with the database long enough to be taken for dead during the
  // call (src/db/liveness.ts): the attempt is given up before anything is settled.
  x402_attempt_lapsed: {
    status: 503,
    text: M.databaseUnavailable,
    hint: M.x402AttemptLapsedHint,
  },
  // The same, before a withdrawal was sent: its hold on the payer's paid calls may have been
  // cleared by another process meanwhile (x402.batched.mirror.ts `whileWithdrawing`).
  x402_withdrawal_lapsed: {
    status: 503,
    text: M.databaseUnavailable,
    hint: M.x402WithdrawalLapsedHint,
  },
  x402_withdraw_exceeds: { status: 400, text: M.x402WithdrawExceeds },
  x402_destination_unsupported: { status: 400, text: M.x402DestinationChain },
  x402_deposit_not_controlled: { status: 403, text: M.x402DepositNotControlled },
  x402_deposit_insufficient: { status: 400, text: M.x402DepositInsufficient },
  x402_payer_wallet_not_found: { status: 404, text: M.x402PayerWalletNotFound },
  x402_payer_agent_not_found: { status: 404, text: M.x402PayerAgentNotFound },
  x402_payer_external: { status: 400, text: M.x402PayerExternal },
  // A signed deposit the relayer would send only to see it revert: refused before anything is sent.
  x402_relay_vault: { status: 400, text: M.x402RelayVault },
  x402_relay_minimum: { status: 400, text: M.x402RelayMinimum },
  x402_relay_window: { status: 400, text: M.x402RelayWindow },
  x402_relay_signature: { status: 400, text: M.x402RelaySignature },
  x402_relay_used: { status: 409, text: M.x402RelayUsed },
  x402_relay_account_unsupported: { status: 409, text: M.x402RelayAccountUnsupported },
  x402_withdraw_no_delay: { status: 400, text: M.x402WithdrawNoDelay },
  x402_withdraw_start_exceeds: { status: 400, text: M.x402WithdrawStartExceeds },
  // A signed withdrawal, likewise refused before anything is sent.
  x402_relay_withdraw_minimum: { status: 400, text: M.x402RelayWithdrawMinimum },
  x402_relay_deadline: { status: 400, text: M.x402RelayDeadline },
  x402_relay_withdraw_signature: { status: 400, text: M.x402RelayWithdrawSignature },
  x402_relay_unsupported: { status: 409, text: M.x402RelayUnsupported },
  // Jobs: the spec's 403 and 404 bodies are `{ error }` only; a contract refusal is 502.
  job_not_found: { status: 404, text: M.jobNotFound, bare: true },
  job_client_mismatch: { status: 403, text: M.jobClientMismatch, bare: true },
  job_client_not_controlled: { status: 403, text: M.jobClientNotControlled, bare: true },
  job_provider_mismatch: { status: 403, text: M.jobProviderMismatch, bare: true },
  job_provider_not_controlled: { status: 403, text: M.jobProviderNotControlled, bare: true },
  job_evaluator_mismatch: { status: 403, text: M.jobEvaluatorMismatch, bare: true },
  job_evaluator_not_controlled: { status: 403, text: M.jobEvaluatorNotControlled, bare: true },
  // Decided from the job's state before anything is sent (a wrong-status call is never broadcast).
  job_wrong_status: { status: 400, text: M.jobWrongStatus },
  job_not_expired: { status: 502, text: M.jobNotExpired },
  // The client wallet cannot cover the budget: refused before the approval (with `balance`).
  job_insufficient_balance: { status: 400, text: M.jobInsufficientBalance },

  agent_not_found: { status: 404, text: M.agentNotFound },

  // DESIGN §5: a receipt that does not arrive in time is 408, a revert 502.
  chain_timeout: { status: 408, text: M.chainTimeout, hint: M.chainTimeoutHint },
  chain_reverted: { status: 502, text: M.chainReverted },
  chain_refused: { status: 502, text: M.chainRejected },
  chain_unavailable: { status: 500, text: M.chainUnavailable },
  chain_not_configured: { status: 500, text: M.chainNotConfigured },
  resource_busy: { status: 409, text: M.resourceBusy },
};

/** An error as a client sees it. */
export interface ErrorAnswer {
  status: ContentfulStatusCode;
  /** The catalog text. */
  message: string;
  hint?: string;
  /** The domain code, when a service or the chain layer threw it. */
  code?: ErrorCode;
  /** The JSON body the API sends. */
  body: Record<string, unknown>;
  headers: Record<string, string>;
  /** Neither a domain nor an edge error: a bug or an outage, to be logged. */
  unexpected: boolean;
  /** Cut off by a database backstop (lock wait, idle transaction, statement time): logged. */
  backstop?: boolean;
  /** The database could not be reached: logged. */
  unavailable?: boolean;
}

export function answerFor(err: unknown): ErrorAnswer {
  if (err instanceof DomainError) return domainAnswer(err);
  // Cut off by a pool backstop (src/db/client.ts): its transaction was rolled back; try again.
  if (isBackstopError(err)) {
    return { ...retryLater(M.databaseBusy, M.databaseBusyHint, 1), backstop: true };
  }
  // The database cannot be reached (down, restarting, recovering, out of connections): nothing
  // was done, and it is worth trying again shortly.
  if (databaseNotReady(err)) {
    return {
      ...retryLater(M.databaseUnavailable, M.databaseUnavailableHint, 2),
      unavailable: true,
    };
  }
  if (err instanceof ApiError) {
    return {
      status: err.status,
      message: err.message,
      hint: err.hint,
      body: err.body(),
      headers: err.headers,
      unexpected: false,
    };
  }
  return {
    status: 500,
    message: M.internal,
    body: { success: false, error: M.internal },
    headers: {},
    unexpected: true,
  };
}

/** A 503 that nothing was done for, to be tried again after `seconds`. */
function retryLater(message: string, hint: string, seconds: number): ErrorAnswer {
  return {
    status: 503,
    message,
    hint,
    body: { success: false, error: message, hint },
    headers: { "retry-after": String(seconds) },
    unexpected: false,
  };
}

function domainAnswer(err: DomainError): ErrorAnswer {
  const entry = ERROR_MAP[err.code];
  const { details } = err;
  const hint = details.hint ?? entry.hint;
  const text = details.escrowState
    ? MF.escrowWrongState(details.escrowState.status, details.escrowState.action)
    : details.chain !== undefined
    ? MF.bridgeSource(details.chain)
    : details.upstreamStatus !== undefined
    ? MF.x402Upstream(details.upstreamStatus)
    : entry.text;
  let body: Record<string, unknown>;
  if (entry.bare) body = { error: text };
  else {
    const b: ErrorBody = { success: false, error: text };
    if (hint !== undefined) b.hint = hint;
    // Details a client can act on are answered as fields of their own.
    if (details.txHash !== undefined) b.txHash = details.txHash;
    if (details.paymentStatus !== undefined) b.status = details.paymentStatus;
    if (details.balance !== undefined) b.balance = details.balance;
    if (details.walletBalance !== undefined) b.walletBalance = details.walletBalance;
    if (details.gatewayBalance !== undefined) b.gatewayBalance = details.gatewayBalance;
    if (details.withdrawable !== undefined) b.withdrawable = details.withdrawable;
    body = b;
  }
  return {
    status: entry.status,
    message: text,
    hint,
    code: err.code,
    body,
    headers: details.retryAfterSeconds !== undefined
      ? { "retry-after": String(details.retryAfterSeconds) }
      : {},
    unexpected: false,
  };
}
