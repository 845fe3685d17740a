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
