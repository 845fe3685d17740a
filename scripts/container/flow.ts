/**
 * What the container check does through the API, as an operator trying the deployment would:
 * sign a merchant up (the verification code is in the worker's logged mail: development has no
 * SMTP), make a payment link on one web replica and find it on the other, and queue mail while
 * the worker is killed, then see each sent exactly once when it is back.
 */
import { inspect, log, must, psqlQuery, run, until } from "./docker.ts";

export interface Http {
  base: string;
  call(
    method: string,
    path: string,
    opts?: { body?: unknown; cookie?: string },
  ): Promise<
    { status: number; type: string; text: string; json: Record<string, unknown>; res: Response }
  >;
}

/** Requests the deployment answered 503 with Retry-After (its database unreachable), retried. */
export const unavailable: { at: string; method: string; path: string; hint: string }[] = [];

/** How long a request keeps retrying a 503 with Retry-After before it is the answer. */
const UNAVAILABLE_BOUND_MS = 240_000;

/**
 * A client of the deployment. A 503 with Retry-After (the service could not reach its database;
 * nothing was done) is retried after the time it names, as a client of the API would, for up to
 * four minutes; each is recorded in `unavailable`, which the check reports with PostgreSQL's own
 * account (beside the whole suite, the stand-in PostgreSQL has been seen in crash recovery).
 */
export function http(
  base: string,
  opts: { sleep?: (ms: number) => Promise<void>; now?: () => number } = {},
): Http {
  const sleep = opts.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const now = opts.now ?? Date.now;
  const once = async (method: string, path: string, req: { body?: unknown; cookie?: string }) => {
    const headers: Record<string, string> = {};
    if (req.body !== undefined) headers["content-type"] = "application/json";
    if (req.cookie) headers.cookie = req.cookie;
    const res = await fetch(`${base}${path}`, {
      method,
      headers,
      body: req.body === undefined ? undefined : JSON.stringify(req.body),
      redirect: "manual",
      signal: AbortSignal.timeout(30_000),
    });
    const text = await res.text();
    let json: Record<string, unknown> = {};
    try {
      json = JSON.parse(text);
    } catch { /* not JSON */ }
    return { status: res.status, type: res.headers.get("content-type") ?? "", text, json, res };
  };
  return {
    base,
    async call(method, path, req = {}) {
      const deadline = now() + UNAVAILABLE_BOUND_MS;
      for (;;) {
        const r = await once(method, path, req);
        const after = Number(r.res.headers.get("retry-after"));
        if (r.status !== 503 || !(after > 0) || now() + after * 1000 > deadline) return r;
        unavailable.push({
          at: new Date().toISOString(),
          method,
          path,
          hint: String(r.json.hint ?? r.json.error ?? r.text).slice(0, 200),
        });
        await sleep(after * 1000);
      }
    },
  };
}

function expect(ok: boolean, what: string, detail = ""): void {
  if (!ok) throw new Error(`${what}${detail ? `: ${detail.slice(0, 600)}` : ""}`);
}

/** compose.dev.env as a map (the check sends its secrets to a production start, to be refused). */
export function devEnv(root: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of Deno.readTextFileSync(`${root}compose.dev.env`).split("\n")) {
    const m = /^([A-Z0-9_]+)=(.*)$/.exec(line.trim());
    if (m) out[m[1]] = m[2];
  }
  return out;
}

const MAIL_LOG = "mail (dev mailbox; no SMTP_URL)";
const PASSWORD = "container check passphrase";
const run_id = Date.now().toString(36);
let counter = 0;

/** Every mail the worker logged (all its lives: `docker logs` spans restarts), by recipient. */
async function loggedMail(worker: string): Promise<Map<string, string[]>> {
  const r = await run(["docker", "logs", worker]);
  const out = new Map<string, string[]>();
  for (const line of (r.out + "\n" + r.err).split("\n")) {
    if (!line.includes(MAIL_LOG)) continue;
    try {
      const entry = JSON.parse(line) as { msg: string; to: string; text: string };
      if (entry.msg !== MAIL_LOG) continue;
      out.set(entry.to, [...out.get(entry.to) ?? [], entry.text]);
    } catch { /* not a log line of ours */ }
  }
  return out;
}

/** Why the last read of the dev mailbox failed (PostgreSQL restarting), for a timeout's message. */
let mailboxError = "";

/**
 * Rows of the dev mailbox per recipient, read with psql in the postgres container; undefined while
 * PostgreSQL refuses connections (crash recovery beside the suite), so that `until` asks again.
 */
async function mailbox(postgres: string): Promise<Map<string, number> | undefined> {
  const r = await run(
    psqlQuery(
      postgres,
      "select to_address || ' ' || count(*) from dev_mailbox group by to_address",
    ),
    { timeoutMs: 30_000 },
  );
  if (r.code !== 0) {
    mailboxError = `psql exited ${r.code}${r.timedOut ? " (timed out)" : ""}: ${
      (r.err || r.out).trim().slice(0, 300)
    }`;
    return undefined;
  }
  return new Map(
    r.out.trim().split("\n").filter(Boolean).map((l) => {
      const [to, n] = l.split(" ");
      return [to, Number(n)];
    }),
  );
}

async function signup(web: Http): Promise<string> {
  const email = `check-${run_id}-${counter++}@example.com`;
  const r = await web.call("POST", "/api/merchant/signup", {
    body: { email, password: PASSWORD, businessName: "Container Check" },
  });
  expect(r.status === 201, `signup on ${web.base}: ${r.status}`, r.text);
  return email;
}

/** Sign up on A, verify on B, sign in on A, make a link on A, list it and open it on B. */
export async function merchantFlow(a: Http, b: Http, worker: string): Promise<void> {
  const email = await signup(a);
  const text = await until(
    `the verification mail to ${email} in the worker's log`,
    120_000,
    async () => (await loggedMail(worker)).get(email)?.[0],
  );
  const code = /code is ([A-Z0-9]{6})\./.exec(text)?.[1];
  expect(!!code, "no code in the mail", text);
  const verified = await b.call("POST", "/api/merchant/verify", { body: { email, code } });
  expect(verified.status === 200, `verify on ${b.base}: ${verified.status}`, verified.text);
  const login = await a.call("POST", "/api/merchant/login", {
    body: { email, password: PASSWORD },
  });
  expect(login.status === 200, `login on ${a.base}: ${login.status}`, login.text);
  const cookie = login.res.headers.getSetCookie().map((c) => c.split(";")[0])
    .find((c) => c.startsWith("merchant_token="));
  expect(!!cookie, "no merchant_token cookie from login");

  const link = await a.call("POST", "/api/merchant/payment-link", {
    cookie,
    body: { amount: "12.50", description: "Container check" },
  });
  expect(link.status === 201, `payment link on ${a.base}: ${link.status}`, link.text);
  expect(link.type.startsWith("application/json"), "payment link content type", link.type);
  const reference = link.json.reference as string;
  const list = await b.call("GET", "/api/merchant/payment-link", { cookie });
  expect(list.status === 200, `list on ${b.base}: ${list.status}`, list.text);
  const links = (list.json.links ?? []) as Array<{ reference: string; amount: number }>;
  expect(
    links.some((l) => l.reference === reference && l.amount === 12.5),
    `the link made on ${a.base} is not listed on ${b.base}`,
    list.text,
  );
  const page = await b.call("GET", `/checkout/${reference}`);
  expect(page.status === 200 && page.type.startsWith("text/html"), `checkout page: ${page.status}`);
  log(`merchant ${email}: link ${reference} made on ${a.base}, listed and rendered on ${b.base}`);
}

/**
 * The worker is killed; mail queued meanwhile stays queued (web keeps answering), and after
 * `docker start` each message is sent exactly once: one row in the mailbox, one log line.
 */
export async function checkMailOnce(webs: Http[], worker: string, postgres: string) {
  await must(["docker", "kill", worker]);
  await until("the worker to be down", 60_000, async () => {
    const [s] = await inspect([worker]);
    return s.status === "exited" ? true : undefined;
  });
  const queued: string[] = [];
  for (let i = 0; i < 6; i++) queued.push(await signup(webs[i % 2]));
  // Ready while the worker is down; PostgreSQL restarting meanwhile (seen beside the suite) makes
  // /readyz 503 until it is back, so it is asked again within the same bound as the mail.
  let lastReady = 0;
  await until("web /readyz 200 while the worker is down", 240_000, async () => {
    lastReady = (await webs[0].call("GET", "/readyz")).status;
    return lastReady === 200 ? true : undefined;
  }).catch((e) => {
    throw new Error(`${e.message} (last answer ${lastReady})`);
  });
  const early = await until("the dev mailbox readable", 240_000, () => mailbox(postgres))
    .catch((e) => {
      throw new Error(`${e.message}; ${mailboxError}`);
    });
  expect(queued.every((e) => !early.has(e)), "mail was sent with no worker running");
  log(`worker killed; ${queued.length} signups answered 201 and their mail is queued`);

  await must(["docker", "start", worker]);
  // A start that outlasts its database wait (PostgreSQL restarting) exits and is restarted by the
  // restart policy: that is waited for; a worker that stays exited is the failure.
  let exitedSince = 0;
  await until("the worker healthy again", 240_000, async () => {
    const [s] = await inspect([worker]);
    if (s.status !== "exited") exitedSince = 0;
    else if (!exitedSince) exitedSince = Date.now();
    else if (Date.now() - exitedSince > 30_000) {
      throw new Error(`the worker exited again (${s.exitCode}) and was not restarted`);
    }
    return s.health === "healthy" ? true : undefined;
  });
  const rows = await until("every queued mail in the mailbox", 240_000, async () => {
    const m = await mailbox(postgres);
    return m && queued.every((e) => m.has(e)) ? m : undefined;
  }).catch((e) => {
    throw new Error(`${e.message}${mailboxError ? `; last psql failure: ${mailboxError}` : ""}`);
  });
  const logged = await loggedMail(worker);
  const wrong = [...rows.keys()].filter((e) => e.startsWith(`check-${run_id}-`))
    .filter((e) => rows.get(e) !== 1 || logged.get(e)?.length !== 1);
  expect(
    wrong.length === 0,
    "mail not sent exactly once",
    wrong.map((e) => `${e}: ${rows.get(e)} rows, ${logged.get(e)?.length ?? 0} log lines`).join(
      "; ",
    ),
  );
  log(`worker back: each of the ${queued.length} queued mails sent exactly once`);
}
