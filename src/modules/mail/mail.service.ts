/**
 * The one way the service sends email. `send` only enqueues the `mail.send` job, inside the
 * caller's transaction when given one: a slow mail server never slows a request, and a
 * rolled-back signup sends nothing.
 */
import type { Deps } from "../../deps.ts";
import type { Queue } from "../../queue/queue.ts";
import { sendMailQueue } from "./mail.queues.ts";
import { mailMessageSchema } from "./mail.schemas.ts";
import type { DevMail, Mailer } from "./mail.types.ts";
import * as repo from "./mail.repo.ts";

export type { Mailer, MailMessage } from "./mail.types.ts";

export function createMailer(queue: Queue): Mailer {
  return {
    async send(msg, opts = {}) {
      const message = mailMessageSchema.parse(msg);
      await queue.send(sendMailQueue, message, opts.tx ? { tx: opts.tx } : {});
    },
  };
}

/** The development mailbox, newest first; `to` filters by recipient, case-insensitively. */
export async function listDevMail(
  deps: Pick<Deps, "sql">,
  opts: { to?: string; limit: number },
): Promise<DevMail[]> {
  return await repo.listDevMail(deps.sql, opts);
}

export async function getDevMail(
  deps: Pick<Deps, "sql">,
  id: string,
): Promise<DevMail | undefined> {
  return await repo.getDevMail(deps.sql, id);
}

/**
 * Whether the SMTP server at `url` accepts a connection (greeting, EHLO, and login when the URL
 * carries credentials): `deno task doctor`. Null when it does; otherwise what went wrong.
 */
export async function smtpProblem(url: string, timeoutMs = 5000): Promise<string | null> {
  const { createTransport } = await import("nodemailer");
  const t = createTransport({
    url,
    connectionTimeout: timeoutMs,
    greetingTimeout: timeoutMs,
    socketTimeout: timeoutMs,
  });
  try {
    await t.verify();
    return null;
  } catch (e) {
    return e instanceof Error ? e.message.split("\n")[0].slice(0, 200) : String(e);
  } finally {
    t.close();
  }
}
