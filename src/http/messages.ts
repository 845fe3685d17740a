/**
 * The message catalog: every error text the API returns. Texts the spec fixes are copied
 * exactly; the rest are ours. Modules add their texts here, never inline.
 */
export const M = {
  // General
  notFound: "Not found.",
  routeNotFound: "No such endpoint.",
  malformedJson: "Malformed JSON body.",
  malformedJsonHint: "Send a JSON object with Content-Type: application/json.",
  bodyNotObject: "The request body must be a JSON object.",
  internal: "Internal server error.",
  methodNotAllowed: "Method not allowed.",

  // Chain
  chainTimeout: "Timed out waiting for the blockchain transaction to confirm.",
  chainTimeoutHint: "The transaction may still confirm; retry with backoff or check its hash.",
  chainReverted: "The on-chain transaction was reverted by the contract.",
  chainRejected: "The blockchain node refused the transaction.",
  chainUnavailable: "The blockchain node is not reachable.",
  chainNotConfigured: "That chain is not configured on this service.",
} as const;

export type MessageKey = keyof typeof M;
