/**
 * Chain failures, as domain errors with their codes (the edge answers a timeout with 408 and a
 * revert with 502, the spec's codes). Callers let them propagate, or catch one by its class.
 */
import { DomainError } from "../errors.ts";

/** No receipt within the bound; the transaction may still confirm. */
export class ChainTimeoutError extends DomainError {
  /** `observed`: what the node said of the transaction when the bound ran out (for logs). */
  constructor(readonly txHash: string, readonly observed?: string) {
    super("chain_timeout", { txHash });
    this.name = "ChainTimeoutError";
    if (observed) this.message = `chain_timeout: ${observed}`;
  }
}

/** The contract reverted: at estimation (no hash) or when mined. The reason is decoded. */
export class ChainRevertError extends DomainError {
  constructor(readonly reason: string, readonly txHash?: string) {
    super("chain_reverted", txHash ? { hint: reason, txHash } : { hint: reason });
    this.name = "ChainRevertError";
  }
}

/** The node refused the transaction outright (insufficient gas funds, bad nonce, ...). */
export class ChainRejectedError extends DomainError {
  constructor(readonly reason: string) {
    super("chain_refused", { hint: reason });
    this.name = "ChainRejectedError";
  }
}

export class ChainUnavailableError extends DomainError {
  constructor(readonly reason: string) {
    super("chain_unavailable", { hint: reason });
    this.name = "ChainUnavailableError";
  }
}

/**
 * WALLET_MASTER_KEY does not open the wallet keys this database holds (another installation's
 * key, or a typo): a start refuses, where it used to answer 500 to every withdrawal and payout.
 */
export class MasterKeyMismatchError extends Error {
  override name = "MasterKeyMismatchError";
  constructor() {
    super(
      "WALLET_MASTER_KEY does not open the wallet keys in this database: it is not the key they " +
        "were sealed with (another installation's, or mistyped). Set the key this database was " +
        "created with (README, Configuration: WALLET_MASTER_KEY); nothing was started.",
    );
  }
}
