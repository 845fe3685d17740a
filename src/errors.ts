/**
 * Domain errors: what services and `src/chain/` throw when a request cannot be done. Each carries
 * a stable code and typed details, nothing about HTTP: the edge (`src/http/error-map.ts`) maps
 * each code to its status and catalog text, for the API and the dashboard alike.
 */

/** Every code a service or the chain layer may throw. Add a code here and its row in the map. */
export const ERROR_CODES = [
  // Merchant accounts
  "email_taken",
  "account_not_found",
  "account_already_verified",
  "verification_code_invalid",
  "verification_code_expired",
  "verification_code_locked",
  "login_invalid",
  "login_unverified",
  "login_throttled",
  // Payout wallet
  "wallet_setup_failed",
  "wallet_provider_not_managed",
  "wallet_already_managed",
  "wallet_address_missing",
  "wallet_address_invalid",
  "wallet_link_fields_missing",
  "wallet_kind_invalid",
  "wallet_challenge_missing",
  "wallet_signature_invalid",
  // Merchant wallets and withdrawals
  "wallet_not_found",
  "withdraw_external_wallet",
  "withdraw_insufficient_balance",
  "withdraw_destination_contract",
  // Streams
  "stream_not_found",
  "stream_not_active",
  "stream_already_completed",
  "stream_sender_not_controlled",
  "stream_receiver_not_controlled",
  "stream_receiver_contract",
  "stream_not_receiver",
  "stream_caller_not_controlled",
  "stream_insufficient_balance",
  "stream_request_key_reused",
  "stream_nothing_to_withdraw",
  // Payroll
  "payroll_not_found",
  "payroll_recipient_contract",
  "payroll_request_key_reused",
  "sign_request_not_found",
  "sign_request_not_pending",
  "sign_tx_not_found",
  "sign_tx_mismatch",
  "sign_tx_reused",
  // API keys
  "key_not_found",
  "key_already_revoked",
  "merchant_key_not_revocable",
  // Consumer sessions
  "consumer_address_invalid",
  "consumer_session_missing",
  "consumer_session_invalid",
  // Webhooks
  "webhook_url_invalid",
  "delivery_not_found",
  // Payments and checkout
  "payout_wallet_missing",
  "payment_not_found",
  "payment_not_payable",
  "payment_paid_by_other",
  "payment_bridge_under_way",
  "payment_cursor_invalid",
  "payer_address_invalid",
  "permit_signature_invalid",
  "tx_hash_invalid",
  "authorization_amount_mismatch",
  "authorization_payee_mismatch",
  "authorization_reference_mismatch",
  "authorization_expired",
  "authorization_window_invalid",
  "authorization_signature_invalid",
  "payer_balance_insufficient",
  "dev_faucet_unavailable",
  // Escrow
  "escrow_not_found",
  "escrow_wallet_not_controlled",
  "escrow_depositor_not_controlled",
  "escrow_not_party",
  "escrow_not_depositor",
  "escrow_not_beneficiary",
  "escrow_parties_invalid",
  "escrow_beneficiary_contract",
  "escrow_expiry_invalid",
  "escrow_insufficient_balance",
  "escrow_wrong_state",
  "escrow_already_confirmed",
  "escrow_not_expired",
  // Bridge (CCTP)
  "bridge_sign_in_required",
  "bridge_fields_missing",
  "bridge_source_unsupported",
  "bridge_destination_unsupported",
  "bridge_external_wallet",
  "bridge_recipient_contract",
  "bridge_insufficient_balance",
  "bridge_not_found",
  "bridge_payment_not_bridgeable",
  "bridge_amount_below_fee",
  // Cross-chain checkout from the shopper's own wallet
  "bridge_signature_unavailable",
  "bridge_authorization_used",
  "bridge_fee_changed",
  "bridge_burn_not_found",
  "bridge_burn_reverted",
  "bridge_burn_invalid",
  "bridge_burn_wrong_payment",
  "bridge_burn_wrong_recipient",
  "bridge_burn_amount",
  "bridge_burn_used",
  // x402
  "x402_slug_taken",
  "x402_listing_not_found",
  "x402_method_not_allowed",
  "x402_proof_invalid",
  "x402_proof_expired",
  "x402_proof_amount",
  "x402_proof_payee",
  "x402_proof_used",
  "x402_no_gateway_balance",
  "x402_insufficient_gateway_balance",
  "x402_upstream_failed",
  "x402_upstream_unreachable",
  "x402_agent_invalid",
  "x402_agent_refused",
  "x402_settlement_failed",
  "x402_attempt_lapsed",
  "x402_withdrawal_lapsed",
  "x402_withdraw_exceeds",
  "x402_destination_unsupported",
  "x402_deposit_not_controlled",
  "x402_deposit_insufficient",
  "x402_payer_wallet_not_found",
  "x402_payer_agent_not_found",
  "x402_payer_external",
  "x402_relay_vault",
  "x402_relay_minimum",
  "x402_relay_window",
  "x402_relay_signature",
  "x402_relay_used",
  "x402_relay_account_unsupported",
  "x402_withdraw_no_delay",
  "x402_withdraw_start_exceeds",
  "x402_relay_withdraw_minimum",
  "x402_relay_deadline",
  "x402_relay_withdraw_signature",
  "x402_relay_unsupported",
  // Agentic commerce jobs (ERC-8183)
  "job_not_found",
  "job_client_mismatch",
  "job_client_not_controlled",
  "job_provider_mismatch",
  "job_provider_not_controlled",
  "job_evaluator_mismatch",
  "job_evaluator_not_controlled",
  "job_wrong_status",
  "job_not_expired",
  "job_insufficient_balance",
  // Agents (ERC-8004)
  "agent_not_found",
  // Chain
  "chain_timeout",
  "chain_reverted",
  "chain_refused",
  "chain_unavailable",
  "chain_not_configured",
  // Concurrency: a resource another request is acting on for longer than a waiter waits
  "resource_busy",
] as const;

export type ErrorCode = typeof ERROR_CODES[number];

/** What a failure knows beyond its code; the edge decides which of it a client sees, and how. */
export interface ErrorDetails {
  /** Says more than the code's text (the exact reason, a decoded revert); replaces its default hint. */
  hint?: string;
  /** The transaction concerned, so the caller can look it up (chain_timeout, chain_reverted). */
  txHash?: string;
  /** The payment's status now (payment_not_payable). */
  paymentStatus?: string;
  /** A wallet's balance as a decimal string (withdraw_insufficient_balance). */
  balance?: string;
  /** x402: the buyer's wallet and gateway balances (decimal strings), answered as fields. */
  walletBalance?: string;
  gatewayBalance?: string;
  /** x402: the seller's withdrawable gateway balance (decimal string). */
  withdrawable?: string;
  /** x402: the upstream's status code, rendered into the text (`Upstream API returned 503`). */
  upstreamStatus?: number;
  /** The escrow's state and the refused action (escrow_wrong_state), rendered into the text. */
  escrowState?: { status: string; action: string };
  /** The chain named in a bridge request that is not supported, rendered into the text. */
  chain?: string;
  /** Seconds until the request may be made again, answered as `Retry-After` (login_throttled). */
  retryAfterSeconds?: number;
}

export class DomainError extends Error {
  readonly code: ErrorCode;
  readonly details: ErrorDetails;

  constructor(code: ErrorCode, details: ErrorDetails = {}, opts: { cause?: unknown } = {}) {
    // The message is for logs; clients get the catalog text for the code.
    super(details.hint ? `${code}: ${details.hint}` : code, { cause: opts.cause });
    this.name = "DomainError";
    this.code = code;
    this.details = details;
  }
}
