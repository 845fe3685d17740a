/**
 * Mail types other files need without the service behind them: `Deps` carries a `Mailer`, and
 * the mailbox pages show `DevMail` rows.
 */
import type { Db } from "../../db/client.ts";
import type { MailMessage } from "./mail.schemas.ts";

export type { MailMessage } from "./mail.schemas.ts";

export interface Mailer {
  send(msg: MailMessage, opts?: { tx?: Db }): Promise<void>;
}

export interface DevMail {
  id: string;
  toAddress: string;
  subject: string;
  textBody: string;
  htmlBody: string | null;
  createdAt: Date;
}
