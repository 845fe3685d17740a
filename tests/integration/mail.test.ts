import assert from "node:assert/strict";
import type { AddressInfo } from "node:net";
import { SMTPServer, type SMTPServerOptions } from "smtp-server";
import { createLogger } from "../../src/log.ts";
import type { Deps } from "../../src/deps.ts";
import { createMailer } from "../../src/modules/mail/mail.service.ts";
import { mailModule } from "../../src/modules/mail/mail.module.ts";
import { sendMailJob } from "../../src/modules/mail/mail.jobs.ts";
import { MAIL_KEPT_SECONDS, MAIL_UNSENT_KEPT_SECONDS } from "../../src/modules/mail/mail.queues.ts";
import { isLoopbackAddress, mailPages } from "../../src/modules/mail/mail.pages.tsx";
import { startTestService, testConfig } from "../helpers/service.ts";
import { waitFor } from "../helpers/poll.ts";

interface Received {
  mailFrom: string;
  rcptTo: string[];
  secure: boolean;
  raw: string;
}

/** A real SMTP peer on a free loopback port that keeps every message it accepts. */
async function startSmtp(opts: Partial<SMTPServerOptions> = {}) {
  const received: Received[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS"],
    logger: false,
    ...opts,
    onData(stream, session, callback) {
      const chunks: Uint8Array[] = [];
      stream.on("data", (c: Uint8Array) => chunks.push(c));
      stream.on("end", () => {
        received.push({
          mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : "",
          rcptTo: session.envelope.rcptTo.map((r) => r.address),
          secure: session.secure,
          raw: new TextDecoder().decode(concat(chunks)),
        });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.server.address() as AddressInfo;
  return {
    port,
    received,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

function concat(chunks: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

/** Header value (unfolded) from a raw message; nodemailer's output is plain RFC 5322. */
function header(raw: string, name: string): string | undefined {
  const head = raw.split(/\r?\n\r?\n/)[0].replace(/\r?\n[ \t]+/g, " ");
  return new RegExp(`^${name}:\\s*(.*)$`, "im").exec(head)?.[1]?.trim();
}

function body(raw: string): string {
  return raw.split(/\r?\n\r?\n/).slice(1).join("\n\n").replace(/\r\n/g, "\n");
}

const FROM = "Settlement Test <no-reply@test.local>";

Deno.test("mail: over SMTP, committed mail arrives and rolled-back mail never does", async (t) => {
  const smtp = await startSmtp();
  const svc = await startTestService({
    modules: [mailModule],
    env: { SMTP_URL: `smtp://127.0.0.1:${smtp.port}`, MAIL_FROM: FROM, CHAINS: "testnet" },
  });
  const mailer = createMailer(svc.deps.queue);
  try {
    await t.step(
      "enqueued in a rolled-back transaction: never sent; committed: arrives",
      async () => {
        await assert.rejects(
          svc.deps.sql.begin(async (tx) => {
            await mailer.send({
              to: "rolled-back@example.com",
              subject: "Should never arrive",
              text: "This signup was rolled back.",
            }, { tx });
            throw new Error("roll back");
          }),
          /roll back/,
        );
        await svc.deps.sql.begin(async (tx) => {
          await mailer.send({
            to: "alice@example.com",
            subject: "Verify your email",
            text: "Your verification code is K7Q2ZP.\nIt expires in 10 minutes.",
          }, { tx });
        });

        // The control message proves the worker ran; the rolled-back one had its chance too.
        const mail = await waitFor(
          () => smtp.received.find((m) => m.rcptTo.includes("alice@example.com")),
          { what: "the committed mail at the SMTP server" },
        );
        assert.equal(mail.mailFrom, "no-reply@test.local");
        assert.deepEqual(mail.rcptTo, ["alice@example.com"]);
        assert.equal(header(mail.raw, "Subject"), "Verify your email");
        assert.equal(header(mail.raw, "To"), "alice@example.com");
        assert.equal(header(mail.raw, "From"), FROM);
        assert.match(header(mail.raw, "Message-ID") ?? "", /^<[0-9a-f-]{36}@settlement\.mail>$/);
        assert.match(
          body(mail.raw),
          /Your verification code is K7Q2ZP\.\nIt expires in 10 minutes\./,
        );
        assert.equal(mail.secure, false);

        assert.equal(smtp.received.length, 1);
        assert.ok(!smtp.received.some((m) => m.rcptTo.includes("rolled-back@example.com")));
        const stored = await svc.deps.sql`
        select 1 from pgboss.job where name = 'mail.send' and data->>'to' = 'rolled-back@example.com'`;
        assert.equal(stored.length, 0, "the rolled-back job was never stored");
        // The sent message (its code whole) is kept an hour, not pg-boss's week.
        const [kept] = await svc.deps.sql`
        select deletion_seconds as "deletionSeconds", extract(epoch from keep_until - created_on)::int as retention
          from pgboss.job where name = 'mail.send' and data->>'to' = 'alice@example.com'`;
        assert.equal(kept.deletionSeconds, MAIL_KEPT_SECONDS);
        assert.equal(kept.retention, MAIL_UNSENT_KEPT_SECONDS);
        assert.ok(MAIL_KEPT_SECONDS <= 3600 && MAIL_UNSENT_KEPT_SECONDS <= 86400);
      },
    );

    await t.step("a message with an html part arrives as multipart/alternative", async () => {
      await mailer.send({
        to: "bob@example.com",
        subject: "Receipt",
        text: "Paid 12.50 USDC.",
        html: "<p>Paid <b>12.50</b> USDC.</p>",
      });
      const mail = await waitFor(() =>
        smtp.received.find((m) => m.rcptTo.includes("bob@example.com"))
      );
      assert.match(header(mail.raw, "Content-Type") ?? "", /^multipart\/alternative/);
      assert.match(mail.raw, /Paid 12\.50 USDC\./);
      assert.match(mail.raw, /<p>Paid <b>12\.50<\/b> USDC\.<\/p>/);
    });

    await t.step("a bad message is refused at send time, before anything is enqueued", async () => {
      await assert.rejects(() => mailer.send({ to: "not an address", subject: "x", text: "x" }));
      await assert.rejects(() =>
        mailer.send({ to: "a@example.com", subject: "x\r\nBcc: evil@example.com", text: "x" })
      );
    });

    await t.step(
      "?ignoreTLS=true keeps a plain session with a server that offers STARTTLS",
      async () => {
        // This peer offers STARTTLS with smtp-server's built-in self-signed certificate, which
        // nodemailer would try (and fail to verify) without the flag.
        const tlsPeer = await startSmtp({ disabledCommands: [], hideSTARTTLS: false });
        try {
          const deps = {
            ...svc.deps,
            config: {
              ...svc.deps.config,
              SMTP_URL: `smtp://127.0.0.1:${tlsPeer.port}/?ignoreTLS=true`,
            },
          } as Deps;
          await sendMailJob.handler(
            { to: "carol@example.com", subject: "Plain", text: "No STARTTLS here." },
            {
              deps,
              jobId: crypto.randomUUID(),
              retryCount: 0,
              signal: new AbortController().signal,
            },
          );
          assert.equal(tlsPeer.received.length, 1);
          assert.equal(tlsPeer.received[0].secure, false);
        } finally {
          await tlsPeer.close();
        }
      },
    );
  } finally {
    await svc.close();
    await smtp.close();
  }
});

Deno.test("mail: without SMTP_URL in development, mail lands in the dev mailbox", async (t) => {
  const logs: string[] = [];
  const svc = await startTestService({
    modules: [mailModule],
    env: { CHAINS: "testnet" },
    log: createLogger({ level: "info", sink: (line) => logs.push(line) }),
  });
  assert.equal(svc.deps.config.SMTP_URL, undefined);
  const mailer = createMailer(svc.deps.queue);
  const url = (p: string) => `${svc.baseUrl}${p}`;
  try {
    await mailer.send({
      to: "Dev@Example.com",
      subject: "Your code",
      text: "Your verification code is ZX81QQ.",
      html: "<p>Your verification code is <b>ZX81QQ</b>.</p>",
    });

    let id = "";
    await t.step("/dev/mailbox.json shows it to a loopback client", async () => {
      const body = await waitFor(async () => {
        const res = await fetch(url("/dev/mailbox.json?to=dev@example.com"));
        assert.equal(res.status, 200);
        assert.match(res.headers.get("content-type") ?? "", /application\/json/);
        const b = await res.json();
        return b.messages.length > 0 ? b : undefined;
      }, { what: "the mail in the dev mailbox" });
      assert.equal(body.success, true);
      assert.equal(body.messages.length, 1);
      const m = body.messages[0];
      assert.equal(m.to, "Dev@Example.com");
      assert.equal(m.subject, "Your code");
      assert.equal(m.text, "Your verification code is ZX81QQ.");
      assert.equal(m.html, "<p>Your verification code is <b>ZX81QQ</b>.</p>");
      assert.ok(!Number.isNaN(Date.parse(m.createdAt)));
      id = m.id;

      const other = await (await fetch(url("/dev/mailbox.json?to=nobody@example.com"))).json();
      assert.deepEqual(other, { success: true, messages: [] });
    });

    await t.step("the text is logged whole, code included", () => {
      const line = logs.map((l) => JSON.parse(l)).find((l) => l.msg.startsWith("mail (dev"));
      assert.ok(line, "a dev-mail log line");
      assert.equal(line.level, "info");
      assert.equal(line.text, "Your verification code is ZX81QQ.");
      assert.equal(line.to, "Dev@Example.com");
    });

    await t.step("the HTML pages list and show it", async () => {
      const list = await fetch(url("/dev/mailbox"));
      assert.equal(list.status, 200);
      assert.match(list.headers.get("content-type") ?? "", /text\/html/);
      const html = await list.text();
      assert.match(html, /Dev@Example\.com/);
      assert.ok(html.includes(`href="/dev/mailbox/${id}"`));

      const one = await fetch(url(`/dev/mailbox/${id}`));
      assert.equal(one.status, 200);
      const page = await one.text();
      assert.match(page, /Your verification code is ZX81QQ\./);
      assert.match(page, /<iframe[^>]*sandbox=""/);

      for (const bad of [crypto.randomUUID(), "not-a-uuid"]) {
        const res = await fetch(url(`/dev/mailbox/${bad}`));
        assert.equal(res.status, 404, bad);
        await res.body?.cancel();
      }
    });

    await t.step("a forwarded request is not local: 404", async () => {
      for (const p of ["/dev/mailbox", "/dev/mailbox.json", `/dev/mailbox/${id}`]) {
        const res = await fetch(url(p), { headers: { "x-forwarded-for": "203.0.113.9" } });
        assert.equal(res.status, 404, p);
        await res.body?.cancel();
      }
    });

    await t.step("no connection info, or production: 404", async () => {
      const noSocket = await svc.app.request("/dev/mailbox.json");
      assert.equal(noSocket.status, 404);
      const prod = mailPages({
        ...svc.deps,
        config: { ...svc.deps.config, isProduction: true, APP_ENV: "production" },
      });
      const res = await prod.request("/dev/mailbox.json", undefined, {
        remoteAddr: { hostname: "127.0.0.1", port: 1, transport: "tcp" },
      });
      assert.equal(res.status, 404);
    });
  } finally {
    await svc.close();
  }
});

Deno.test("mail: in production without SMTP_URL the job fails loudly (and is retried)", async () => {
  const config = { ...testConfig(), isProduction: true, SMTP_URL: undefined };
  const deps = { config, log: createLogger({ sink: () => {} }) } as unknown as Deps;
  await assert.rejects(
    () =>
      sendMailJob.handler(
        { to: "a@example.com", subject: "s", text: "t" },
        { deps, jobId: crypto.randomUUID(), retryCount: 0, signal: new AbortController().signal },
      ),
    /SMTP_URL is not set/,
  );
  assert.equal(sendMailJob.queue?.retryLimit, 5);
  assert.equal(sendMailJob.queue?.retryBackoff, true);
});

Deno.test("mail: loopback addresses", () => {
  for (const a of ["127.0.0.1", "127.1.2.3", "::1", "[::1]", "::ffff:127.0.0.1"]) {
    assert.equal(isLoopbackAddress(a), true, a);
  }
  for (const a of ["10.0.0.1", "0.0.0.0", "::", "::ffff:10.0.0.1", "1270.0.0.1", "", undefined]) {
    assert.equal(isLoopbackAddress(a), false, String(a));
  }
});
