/**
 * postgres.js on Deno: a write to a connection whose server has just ended it (a FIN: the server
 * crashed, restarted, or ended the session) rejects a promise inside Deno's node:net that no
 * caller holds (`This socket has been ended by the other party`, EPIPE, from `_writeAfterFIN`
 * under postgres.js's `nextWrite`). The queries on that connection fail through its error and
 * close events as usual; only that promise is left over, and Deno ends the process on an
 * unhandled rejection. A role whose PostgreSQL crashed exited so (the container check, with the
 * server's backends killed while a worker started); tests/integration/db-ended-sockets.test.ts.
 *
 * This guard drops exactly that rejection (its message, its code and postgres.js's connection in
 * its stack) and counts it; every other unhandled rejection still ends the process.
 */
import type { Logger } from "../log.ts";

let installed = false;
let logger: Logger | undefined;
let dropped = 0;

/** Installs the guard once per process; `log`, when given, hears each dropped rejection. */
export function guardEndedSockets(log?: Logger): void {
  if (log) logger = log;
  if (installed) return;
  installed = true;
  globalThis.addEventListener("unhandledrejection", (e) => {
    if (!isEndedSocketWrite(e.reason)) return;
    e.preventDefault();
    dropped++;
    logger?.warn("a write to a database connection its server had ended was dropped", {
      dropped,
    });
  });
}

/** How many such rejections this process dropped. */
export function endedSocketWritesDropped(): number {
  return dropped;
}

export function isEndedSocketWrite(reason: unknown): boolean {
  return reason instanceof Error &&
    (reason as { code?: unknown }).code === "EPIPE" &&
    reason.message === "This socket has been ended by the other party" &&
    /\/postgres\/src\/connection\.js/.test(reason.stack ?? "");
}
