/**
 * The Content-Security-Policy of the dashboard: scripts, styles, images and connections from our
 * origin only, no inline code, no framing.
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

/**
 * Every other HTML page's (checkout, bridge, the payer's gateway page, the explorer, error pages:
 * src/app.ts): the same, except that inline `style` attributes are allowed (the explorer's and the
 * development mailbox's markup carries some, and a rendered mail's HTML part); styles run no code.
 */
export const PAGE_CSP = STRICT_CSP.replace("style-src 'self'", "style-src 'self' 'unsafe-inline'");
