/** One structured access-log line per request: no query strings, bodies or headers. */
import type { MiddlewareHandler } from "hono";
import type { Logger } from "../log.ts";

export function accessLog(log: Logger): MiddlewareHandler {
  return async (c, next) => {
    const start = performance.now();
    await next();
    const ms = Math.round((performance.now() - start) * 10) / 10;
    const status = c.res.status;
    const fields = {
      requestId: c.get("requestId"),
      method: c.req.method,
      path: c.req.path,
      status,
      ms,
    };
    if (status >= 500) log.error("request", fields);
    else log.info("request", fields);
  };
}
