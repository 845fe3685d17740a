/** Full Deps for an operator command: the queue (no workers) beside the CLI context. */
import type { CliContext } from "./context.ts";
import type { Deps } from "../deps.ts";
import { startQueue } from "../queue/queue.ts";
import { systemClock } from "../clock.ts";
import { createRateLimiter } from "../http/rate-limit.ts";
import { createMailer } from "../modules/mail/mail.service.ts";
import { allJobs } from "../modules/index.ts";

export async function createQueueForCli(
  ctx: CliContext,
): Promise<{ deps: Deps; stop(): Promise<void> }> {
  const url = ctx.databaseUrl;
  const queue = await startQueue({ url, log: ctx.log });
  const deps: Deps = {
    config: ctx.config,
    sql: ctx.sql,
    queue,
    chain: ctx.chain,
    clock: systemClock,
    log: ctx.log,
    limiter: createRateLimiter({ sql: ctx.sql, clock: systemClock, config: ctx.config }),
    mailer: createMailer(queue),
  };
  await queue.register(allJobs(), deps, { work: false });
  return { deps, stop: () => queue.stop() };
}
