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
  // Streams
  "stream_not_found",
  "stream_not_active",
  "stream_already_completed",
  "stream_sender_not_controlled",
  "stream_receiver_not_controlled",
  "stream_caller_not_controlled",
  "stream_insufficient_balance",
  "stream_request_key_reused",
  "stream_nothing_to_withdraw",
  // API keys
  "key_not_found",
  "key_already_revoked",
  "key_revoked_concurrently",
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
  "escrow_expiry_invalid",
  "escrow_insufficient_balance",
  "escrow_wrong_state",
  "escrow_already_confirmed",
  "escrow_not_expired",
  // Chain
  "chain_timeout",
  "chain_reverted",
  "chain_refused",
  "chain_unavailable",
  "chain_not_configured",
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
  /** The escrow's state and the refused action (escrow_wrong_state), rendered into the text. */
  escrowState?: { status: string; action: string };
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
