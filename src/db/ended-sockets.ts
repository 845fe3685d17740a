/**
 * postgres.js on Deno: a write to a connection whose server has just ended it (a FIN: the server
 * crashed, restarted, or ended the session) rejects a promise inside Deno's node:net that no
 * caller holds (`This socket has been ended by the other party`, EPIPE, from `_writeAfterFIN`
 * under postgres.js's `nextWrite`). The queries on that connection fail through its error and
 * close events as usual; only that promise is left over, and Deno ends the process on an
 * unhandled rejection. A role whose PostgreSQL crashed exited so (the container check, with the
 * server's backends killed while a worker started); tests/integration/db-ended-sockets.test.ts.
 *
 * This guard drops exactly such rejections (a database that cannot be reached, raised in
 * postgres.js's connection) and counts them; every other unhandled rejection still ends the
 * process.
 */
import type { Logger } from "../log.ts";
import { databaseNotReady } from "./wait.ts";
import { ClosedBeforeAnswering } from "./sockets.ts";

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
    // An EPIPE of a write, or a start refused while the server recovers: say which.
    logger?.warn("a rejection the database client left unhandled was dropped", {
      error: (e.reason as Error).message,
      dropped,
    });
  });
}

/** How many such rejections this process dropped. */
export function endedSocketWritesDropped(): number {
  return dropped;
}

export function isEndedSocketWrite(reason: unknown): boolean {
  // A refused socket's error (src/db/sockets.ts) travels the same way, made in our file rather
  // than in postgres.js's connection.
  if (reason instanceof ClosedBeforeAnswering) return true;
  if (!(reason instanceof Error) || !/\/postgres\/src\/connection\.js/.test(reason.stack ?? "")) {
    return false;
  }
  if (
    (reason as { code?: unknown }).code === "EPIPE" &&
    reason.message === "This socket has been ended by the other party"
  ) return true;
  // The same for a connection's own start refused by a server still recovering (57P03 and the
  // like), seen left over in the same way: a promise of postgres.js's own, never a query's (a
  // query's rejection is handled by whoever awaits it, and never reaches this listener).
  return databaseNotReady(reason);
}
