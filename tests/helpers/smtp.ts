/** A real SMTP server for tests (smtp-server): collects every message it receives. */
import { SMTPServer } from "smtp-server";
import { waitFor } from "./poll.ts";

export interface ReceivedMail {
  to: string;
  raw: string;
}

export interface TestSmtp {
  url: string;
  inbox: ReceivedMail[];
  /** The verification code of the `nth` message to `to` (0-based), once it arrives. */
  codeFor(to: string, nth?: number): Promise<string>;
  close(): Promise<void>;
}

export async function startSmtp(): Promise<TestSmtp> {
  const inbox: ReceivedMail[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS", "AUTH"],
    logger: false,
    onData(stream, session, callback) {
      let raw = "";
      stream.on("data", (d: Uint8Array) => (raw += new TextDecoder().decode(d)));
      stream.on("end", () => {
        inbox.push({ to: session.envelope.rcptTo.map((r) => r.address).join(","), raw });
        callback();
      });
    },
  });
  const port = await new Promise<number>((resolve) => {
    server.listen(
      0,
      "127.0.0.1",
      () => resolve((server.server.address() as { port: number }).port),
    );
  });
  return {
    url: `smtp://127.0.0.1:${port}`,
    inbox,
    async codeFor(to: string, nth = 0) {
      const mail = await waitFor(() => inbox.filter((m) => m.to === to)[nth], {
        what: `mail #${nth} to ${to}`,
      });
      // Quoted-printable soft line breaks are joined before looking for the code.
      const code = /code is ([A-Z0-9]{6})\./.exec(mail.raw.replace(/=\r?\n/g, ""))?.[1];
      if (!code) throw new Error(`no code in the mail to ${to}`);
      return code;
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
