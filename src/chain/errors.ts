/**
 * Chain failures carry their HTTP answer (the spec's codes): a receipt that does not arrive in
 * time is 408, a revert is 502. Callers let them propagate; the app's error handler renders them.
 */
import { ApiError } from "../http/errors.ts";
import { M } from "../http/messages.ts";

export class ChainTimeoutError extends ApiError {
  constructor(readonly txHash: string) {
    super(408, M.chainTimeout, { hint: M.chainTimeoutHint, extra: { txHash } });
    this.name = "ChainTimeoutError";
  }
}

export class ChainRevertError extends ApiError {
  constructor(readonly reason: string, readonly txHash?: string) {
    super(502, M.chainReverted, {
      hint: reason,
      extra: txHash ? { txHash } : {},
    });
    this.name = "ChainRevertError";
  }
}

/** The node refused the transaction outright (insufficient gas funds, bad nonce, ...). */
export class ChainRejectedError extends ApiError {
  constructor(readonly reason: string) {
    super(502, M.chainRejected, { hint: reason });
    this.name = "ChainRejectedError";
  }
}

export class ChainUnavailableError extends ApiError {
  constructor(readonly reason: string) {
    super(500, M.chainUnavailable, { hint: reason });
    this.name = "ChainUnavailableError";
  }
}
