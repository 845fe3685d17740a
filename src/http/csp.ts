/**
 * The Content-Security-Policy of our own pages (dashboard, API docs): scripts, styles, images and
 * connections from our origin only, no inline code, no framing.
 */
export const STRICT_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "object-src 'none'",
].join("; ");
