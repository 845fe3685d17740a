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
} as const;

export type MessageKey = keyof typeof M;
