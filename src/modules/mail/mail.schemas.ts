/** The mail payload, checked when a message is enqueued and again when its job runs. */
import { z } from "zod";

export interface MailMessage {
  to: string;
  subject: string;
  text: string;
  html?: string;
}

// A line break in a header value would let a caller-supplied subject inject headers; nodemailer
// folds long lines itself, so subjects are one line.
const oneLine = /^[^\r\n]*$/;

export const mailMessageSchema: z.ZodType<MailMessage> = z.object({
  to: z.email().max(320),
  subject: z.string().min(1).max(500).regex(oneLine, "must be a single line"),
  text: z.string().min(1).max(100_000),
  html: z.string().max(500_000).optional(),
}).strict();
