/**
 * The development mailbox: mail kept when no SMTP_URL is set, readable at /dev/mailbox (HTML)
 * and /dev/mailbox.json (tests, browser tests). Mail carries verification codes, so these pages
 * exist only outside production and only answer a client on this machine; anything else is 404
 * as though the routes did not exist.
 */
import { Hono } from "hono";
import type { Context } from "hono";
import { getConnInfo } from "hono/deno";
import type { Deps } from "../../deps.ts";
import { Layout } from "../../../views/layout.tsx";
import { getDevMail, listDevMail } from "./mail.service.ts";
import type { DevMail } from "./mail.types.ts";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const MAX_LIST = 200;

export function mailPages(deps: Deps): Hono {
  const app = new Hono();
  if (deps.config.isProduction) return app;

  app.get("/dev/mailbox.json", async (c) => {
    if (!isLocalRequest(c)) return c.notFound();
    const to = c.req.query("to")?.trim() || undefined;
    const limit = clampLimit(c.req.query("limit"));
    const mails = await listDevMail(deps, { to, limit });
    return c.json({ success: true, messages: mails.map(toJson) });
  });

  app.get("/dev/mailbox", async (c) => {
    if (!isLocalRequest(c)) return c.notFound();
    const mails = await listDevMail(deps, { limit: MAX_LIST });
    return c.html(
      <Page title="Dev mailbox">
        <p>Mail the service would have sent (no SMTP_URL is configured). Newest first.</p>
        {mails.length === 0 ? <p>No mail yet.</p> : (
          <table>
            <thead>
              <tr>
                <th align="left">Time</th>
                <th align="left">To</th>
                <th align="left">Subject</th>
              </tr>
            </thead>
            <tbody>
              {mails.map((m) => (
                <tr>
                  <td>{m.createdAt.toISOString()}</td>
                  <td>{m.toAddress}</td>
                  <td>
                    <a href={`/dev/mailbox/${m.id}`}>{m.subject}</a>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </Page>,
    );
  });

  app.get("/dev/mailbox/:id", async (c) => {
    if (!isLocalRequest(c)) return c.notFound();
    const id = c.req.param("id");
    const mail = UUID.test(id) ? await getDevMail(deps, id) : undefined;
    if (!mail) {
      return c.html(<Page title="Not found">No such message.</Page>, 404);
    }
    return c.html(
      <Page title={mail.subject}>
        <p>
          <a href="/dev/mailbox">← Mailbox</a>
        </p>
        <dl>
          <dt>To</dt>
          <dd>{mail.toAddress}</dd>
          <dt>From</dt>
          <dd>{deps.config.MAIL_FROM}</dd>
          <dt>Time</dt>
          <dd>{mail.createdAt.toISOString()}</dd>
        </dl>
        <pre style="white-space: pre-wrap">{mail.textBody}</pre>
        {mail.htmlBody && (
          // sandbox with no allowances: the HTML part renders without scripts or our origin.
          <iframe
            sandbox=""
            srcdoc={mail.htmlBody}
            title="HTML part"
            style="width: 100%; min-height: 30rem; border: 1px solid #ccc"
          />
        )}
      </Page>,
    );
  });
  return app;
}

/**
 * The socket's peer is a loopback address and no proxy forwarded the request. A forwarding
 * header means a proxy (possibly on this machine) stands in for someone else, so it is refused.
 */
export function isLocalRequest(c: Context): boolean {
  if (c.req.header("x-forwarded-for") || c.req.header("forwarded") || c.req.header("x-real-ip")) {
    return false;
  }
  let address: string | undefined;
  try {
    address = getConnInfo(c).remote.address;
  } catch {
    // No connection info (e.g. app.request() in-process): not provably local.
    return false;
  }
  return isLoopbackAddress(address);
}

export function isLoopbackAddress(address: string | undefined): boolean {
  if (!address) return false;
  const a = address.toLowerCase().replace(/^\[|\]$/g, "");
  if (a === "::1") return true;
  const v4 = a.startsWith("::ffff:") ? a.slice("::ffff:".length) : a;
  return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(v4);
}

function clampLimit(raw: string | undefined): number {
  const n = Number(raw);
  return Number.isInteger(n) && n > 0 ? Math.min(n, MAX_LIST) : 50;
}

function toJson(m: DevMail) {
  return {
    id: m.id,
    to: m.toAddress,
    subject: m.subject,
    text: m.textBody,
    html: m.htmlBody,
    createdAt: m.createdAt.toISOString(),
  };
}

function Page(props: { title: string; children?: unknown }) {
  return (
    <Layout title={props.title}>
      <main style="font-family: system-ui, sans-serif; max-width: 60rem; margin: 2rem auto; padding: 0 1rem; overflow-wrap: anywhere">
        <h1>{props.title}</h1>
        {props.children}
      </main>
    </Layout>
  );
}
