/**
 * A request body as its meaning, for comparing two requests (src/http/idempotency.ts): JSON with
 * its object keys sorted and no whitespace, so the same parameters sent with other spacing or key
 * order are the same request, as Stripe compares a retry's parameters. Numbers keep the digits
 * they were sent with (`1e2`, `100` and `100.0` stay three requests): read as doubles,
 * `10000000000000000001` and `10000000000000000000` would be one, and a different amount would
 * replay the first answer. A body that is not JSON is compared as sent.
 */

/** A JSON number as written. */
class Digits {
  constructor(readonly text: string) {}
}

export function canonicalBody(text: string): string {
  try {
    const value = JSON.parse(
      text,
      (_key, v, context?: { source?: string }) =>
        typeof v === "number" && context?.source !== undefined ? new Digits(context.source) : v,
    );
    return canonical(value);
  } catch {
    // Not JSON, or nested past the stack: compared as sent.
    return text;
  }
}

function canonical(v: unknown): string {
  if (v instanceof Digits) return v.text;
  if (Array.isArray(v)) return `[${v.map(canonical).join(",")}]`;
  if (v !== null && typeof v === "object") {
    const o = v as Record<string, unknown>;
    return `{${
      Object.keys(o).sort().map((k) => `${JSON.stringify(k)}:${canonical(o[k])}`).join(",")
    }}`;
  }
  return JSON.stringify(v);
}
