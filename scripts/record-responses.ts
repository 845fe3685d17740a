/**
 * Records the wire answers of every documented `/api/` route for a fixed list of requests, so
 * two checkouts can be compared byte for byte (the route table's refactor against its branch
 * point):
 *
 *   DATABASE_URL=… deno run -A scripts/record-responses.ts /path/to/checkout > a.jsonl
 *   DATABASE_URL=… deno run -A scripts/record-responses.ts /path/to/other > b.jsonl
 *   diff a.jsonl b.jsonl
 *
 * The request list comes from THIS checkout (the fuzz table of tests/helpers/fuzz-table.ts and
 * the documented routes); the service answering it from the checkout named. Requests: every
 * documented route with each credential (none, session cookie, merchant key as x-api-key and as
 * bearer), then every fuzzed body route with its sample, each field dropped, each field replaced
 * by a few hostile values, and malformed bodies; every fuzzed parameter route with a few hostile
 * parameters. Values that differ per run (ids, keys, timestamps, addresses, the port) are
 * replaced by placeholders; everything else must be equal.
 */
import { tableEndpoints } from "../tests/helpers/fuzz-table.ts";
import { apiRoutes } from "../src/modules/index.ts";

const root = Deno.args[0];
if (!root) throw new Error("usage: record-responses.ts <checkout root>");
const { startTestService } = await import(`${root}/tests/helpers/service.ts`);
const { createMerchant } = await import(`${root}/tests/helpers/accounts.ts`);

/**
 * Rows with equal timestamps (the test clock stands still) come back in any order: array
 * elements are sorted by their text. Each element's own fields keep their order.
 */
function sortedArrays(text: string): string {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return text;
  }
  const walk = (v: unknown): unknown => {
    if (Array.isArray(v)) {
      return v.map(walk).sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
    }
    if (v && typeof v === "object") {
      return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)]));
    }
    return v;
  };
  const sorted = JSON.stringify(walk(value));
  // Only a body that was compact JSON is rewritten (the wire form is compact JSON).
  return JSON.stringify(value) === text ? sorted : text;
}

const svc = await startTestService({ env: { RATE_LIMITS: "off" } });
const out: string[] = [];
try {
  const m = await createMerchant(svc);
  const cookie = { cookie: m.cookie };
  const key = { "x-api-key": m.apiKey };
  const bearer = { authorization: `Bearer ${m.apiKey}` };
  const DEAD = "0x000000000000000000000000000000000000dEaD";

  const normalise = (text: string) => {
    let t = text.replaceAll(svc.baseUrl, "<base>");
    for (const [v, name] of [[m.apiKey, "<key>"], [m.email, "<email>"], [m.id, "<merchant>"]]) {
      t = t.replaceAll(v, name);
    }
    return t
      .replace(/svc_[a-z]+_(test_)?[A-Za-z0-9_-]+/g, "<svc-key>")
      .replace(/whsec_[A-Za-z0-9_+/=-]+/g, "<whsec>")
      .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi, "<uuid>")
      .replace(/\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z/g, "<time>")
      .replace(/0x[0-9a-fA-F]{64}/g, "<hash>")
      .replace(/0x[0-9a-fA-F]{40}/g, "<address>")
      .replace(/(pay_ref|escrow|stream|bridge|batch|payroll)_[A-Za-z0-9_]+/g, "$1_<ref>")
      .replace(/m\d{13,}@example\.com/g, "<email>");
  };

  const send = async (
    method: string,
    path: string,
    headers: Record<string, string>,
    body?: string,
  ) => {
    const res = await fetch(`${svc.baseUrl}${path}`, {
      method,
      headers: {
        ...(body !== undefined ? { "content-type": "application/json" } : {}),
        ...headers,
      },
      body,
      redirect: "manual",
    });
    const text = sortedArrays(normalise(await res.text()));
    const cred = headers.cookie
      ? "cookie"
      : headers["x-api-key"]
      ? "key"
      : headers.authorization
      ? "bearer"
      : "none";
    out.push(JSON.stringify({
      req: `${method} ${path} ${cred} ${body === undefined ? "" : normalise(body).slice(0, 200)}`,
      status: res.status,
      type: res.headers.get("content-type"),
      body: text,
    }));
  };

  // Every documented route with each credential (a session's logout last).
  const documented = apiRoutes().filter((r) =>
    r.method !== "delete" || r.path !== "/api/merchant/me"
  );
  for (const r of documented) {
    const path = r.path.replace(/:[A-Za-z0-9_]+/g, "x");
    for (const h of [{}, cookie, key, bearer]) await send(r.method.toUpperCase(), path, h);
  }

  const NASTY = [null, "", 0, -1, "\u0000", "\ud800", [], {}, "x".repeat(300), true];
  const RAW = ["", "{", "[]", "null", "42", '{"a":"\\ud800"}'];
  const table = tableEndpoints(
    { cookie, key, bearer, values: { $wallet: m.walletAddress, $email: m.email, $dead: DEAD } },
    300,
  );
  for (const e of table.bodies) {
    const sample = e.sample ?? {};
    const bodies: string[] = [JSON.stringify(sample), ...RAW];
    for (const k of Object.keys(sample)) {
      const { [k]: _, ...rest } = sample;
      bodies.push(JSON.stringify(rest));
      for (const v of NASTY) bodies.push(JSON.stringify({ ...sample, [k]: v }));
    }
    for (const b of bodies) await send(e.method, e.path(""), e.headers, b);
  }
  const PARAMS = [
    "",
    "x",
    "%00",
    "%ZZ",
    "-1",
    "1",
    "abc_def",
    "00000000-0000-0000-0000-000000000000",
  ];
  for (const e of table.params) {
    for (const p of PARAMS) await send(e.method, e.path(p), e.headers);
  }
  await send("DELETE", "/api/merchant/me", cookie);
} finally {
  await svc.close();
}
console.log(out.join("\n"));
