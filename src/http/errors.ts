/**
 * The edge's own errors: failures that are HTTP concerns (authentication, rate limits, body
 * parsing, per-route texts), thrown by `src/http/` and handlers. Each carries its status and
 * body. Services and `src/chain/` throw `DomainError` instead (`src/errors.ts`), answered through
 * the table in `error-map.ts`.
 */
import type { ContentfulStatusCode } from "hono/utils/http-status";

export type ErrorBody = { success: false; error: string; hint?: string; [k: string]: unknown };

export class ApiError extends Error {
  readonly status: ContentfulStatusCode;
  readonly hint?: string;
  readonly extra: Record<string, unknown>;
  /** The spec's few `{ error }`-only bodies (merchant dashboard, job 403/404). */
  readonly bare: boolean;
  readonly headers: Record<string, string>;

  constructor(
    status: ContentfulStatusCode,
    message: string,
    opts: {
      hint?: string;
      extra?: Record<string, unknown>;
      bare?: boolean;
      headers?: Record<string, string>;
      cause?: unknown;
    } = {},
  ) {
    super(message, { cause: opts.cause });
    this.name = "ApiError";
    this.status = status;
    this.hint = opts.hint;
    this.extra = opts.extra ?? {};
    this.bare = opts.bare ?? false;
    this.headers = opts.headers ?? {};
  }

  body(): Record<string, unknown> {
    if (this.bare) return { error: this.message };
    const b: ErrorBody = { success: false, error: this.message };
    if (this.hint !== undefined) b.hint = this.hint;
    return { ...b, ...this.extra };
  }
}

export const unauthorized = (message: string, opts?: ConstructorParameters<typeof ApiError>[2]) =>
  new ApiError(401, message, opts);
export const forbidden = (message: string, opts?: ConstructorParameters<typeof ApiError>[2]) =>
  new ApiError(403, message, opts);
export const notFound = (message: string, opts?: ConstructorParameters<typeof ApiError>[2]) =>
  new ApiError(404, message, opts);
export const conflict = (message: string, opts?: ConstructorParameters<typeof ApiError>[2]) =>
  new ApiError(409, message, opts);
