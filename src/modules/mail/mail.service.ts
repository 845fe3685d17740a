/**
 * The one way the service sends email. `send` only enqueues the `mail.send` job, inside the
 * caller's transaction when given one: a slow mail server never slows a request, and a
 * rolled-back signup sends nothing.
 */
import type { Db } from "../../db/client.ts";
import type { Queue } from "../../queue/queue.ts";
import { sendMailJob } from "./mail.jobs.ts";
import { type MailMessage, mailMessageSchema } from "./mail.schemas.ts";

export type { MailMessage } from "./mail.schemas.ts";

export interface Mailer {
  send(msg: MailMessage, opts?: { tx?: Db }): Promise<void>;
}

export function createMailer(queue: Queue): Mailer {
  return {
    async send(msg, opts = {}) {
      const message = mailMessageSchema.parse(msg);
      await queue.send(sendMailJob, message, opts.tx ? { tx: opts.tx } : {});
    },
  };
}
