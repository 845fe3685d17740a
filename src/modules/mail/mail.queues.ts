/** The mail module's job descriptor: what `deps.mailer` enqueues (the handler is mail.jobs.ts). */
import { defineQueue } from "../../queue/registry.ts";
import { type MailMessage, mailMessageSchema } from "./mail.schemas.ts";

export const sendMailQueue = defineQueue<MailMessage>({
  name: "mail.send",
  schema: mailMessageSchema,
  queue: {
    retryLimit: 5,
    retryDelay: 5,
    retryBackoff: true,
    retryDelayMax: 300,
    expireInSeconds: 180,
  },
});
