/** Mail: the `mail.send` job behind `deps.mailer`, and the development mailbox pages. */
import type { AppModule } from "../module.ts";
import { mailJobs } from "./mail.jobs.ts";
import { mailPages } from "./mail.pages.tsx";

export const mailModule: AppModule = { name: "mail", jobs: mailJobs, pages: mailPages };
