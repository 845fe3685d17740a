/** The mail module's job descriptor: what `deps.mailer` enqueues (the handler is mail.jobs.ts). */
import { defineQueue } from "../../queue/registry.ts";
import { type MailMessage, mailMessageSchema } from "./mail.schemas.ts";

/** How long a sent message stays in the queue's table. */
export const MAIL_KEPT_SECONDS = 3600;
/** How long an unsent message may wait in the queue's table. */
export const MAIL_UNSENT_KEPT_SECONDS = 86400;

export const sendMailQueue = defineQueue<MailMessage>({
  name: "mail.send",
  schema: mailMessageSchema,
  queue: {
    retryLimit: 5,
    retryDelay: 5,
    retryBackoff: true,
    retryDelayMax: 300,
    expireInSeconds: 180,
    // A message carries what its mail says (a verification code, whole): the queue keeps a sent
    // one an hour for diagnosis, not pg-boss's 7 days, and an unsent one a day, not 14 (its
    // retries give up within half an hour; a code is dead after 10 minutes).
    deleteAfterSeconds: MAIL_KEPT_SECONDS,
    retentionSeconds: MAIL_UNSENT_KEPT_SECONDS,
  },
});
