/**
 * `mail.send`: delivers one message. With SMTP_URL it goes out through nodemailer; without it
 * (development and test only) it is kept in `dev_mailbox` and logged, so a developer sees
 * verification codes in the console and on /dev/mailbox.
 *
 * SMTP_URL is handed to nodemailer unchanged, so its query string carries transport options:
 * `smtp://host:25/?ignoreTLS=true` never upgrades, `?requireTLS=true` refuses plaintext,
 * `?tls.rejectUnauthorized=false` accepts a self-signed certificate. By default a plain
 * `smtp://` connection upgrades with STARTTLS only when the server offers it, so a local server
 * without STARTTLS works with no flag; one that offers STARTTLS with a certificate we cannot
 * verify needs `?ignoreTLS=true` (a local test peer) or a trusted certificate.
 */
import { createTransport, type Transporter } from "nodemailer";
import { defineJob } from "../../queue/registry.ts";
import type { Deps } from "../../deps.ts";
import { insertDevMail } from "./mail.repo.ts";
import type { MailMessage } from "./mail.schemas.ts";
import { sendMailQueue } from "./mail.queues.ts";

// One transporter per URL: it holds the parsed options and, for pooled URLs, the connections.
const transporters = new Map<string, Transporter>();

function transporterFor(url: string): Transporter {
  let t = transporters.get(url);
  if (!t) {
    // Bounded waits so a dead server fails the attempt (and pg-boss retries) well before the
    // job expires; options in the URL's query string take precedence over these.
    t = createTransport({
      url,
      connectionTimeout: 10_000,
      greetingTimeout: 10_000,
      socketTimeout: 60_000,
    });
    transporters.set(url, t);
  }
  return t;
}

export class MailNotConfiguredError extends Error {
  constructor() {
    super("SMTP_URL is not set; mail cannot be delivered in production");
    this.name = "MailNotConfiguredError";
  }
}

export const sendMailJob = defineJob<MailMessage, Deps>({
  ...sendMailQueue,
  handler: async (msg, { deps, jobId }) => {
    const { config, log } = deps;
    if (config.SMTP_URL) {
      const info = await transporterFor(config.SMTP_URL).sendMail({
        from: config.MAIL_FROM,
        to: msg.to,
        subject: msg.subject,
        text: msg.text,
        html: msg.html,
        // Stable per job, so a receiver can recognise a redelivery after a lost acknowledgement.
        messageId: `<${jobId}@settlement.mail>`,
      });
      log.info("mail sent", { jobId, to: msg.to, subject: msg.subject, response: info.response });
      return;
    }
    // Config refuses to start in production without SMTP_URL; if it happens anyway, fail loudly
    // and keep the job for retries rather than dropping the mail.
    if (config.isProduction) throw new MailNotConfiguredError();
    await insertDevMail(deps.sql, { id: jobId, ...msg, createdAt: deps.clock.now() });
    // The whole text goes under `text`: the logger redacts fields named like `code` or `token`,
    // and the developer needs the verification code itself.
    log.info("mail (dev mailbox; no SMTP_URL)", {
      jobId,
      to: msg.to,
      subject: msg.subject,
      text: msg.text,
      mailbox: `${config.BASE_URL}/dev/mailbox/${jobId}`,
    });
  },
});

export const mailJobs = [sendMailJob];
