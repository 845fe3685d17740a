/**
 * Abuse: the service's resident memory (RSS, from /proc) after start and warm-up, then while
 * unauthenticated clients hold what they can, and after they leave: concurrent 50 MB bodies
 * (declared and chunked), huge declared lengths with one byte sent, slow request heads, slow
 * bodies, and deeply nested JSON. The service runs in its own process (abuse-server.ts) so the
 * clients' buffers are not counted. Loopback only; every part is bounded in count and time.
 */
import { type RawConn, rawConnect } from "../tests/helpers/raw-http.ts";

const MB = 1024 * 1024;
const BODY_TIMEOUT_MS = 2000;
const HOLD_MS = Number(Deno.env.get("BENCH_ABUSE_HOLD_MS") ?? "8000");
const SLOW = Number(Deno.env.get("BENCH_ABUSE_SLOW") ?? "300");

function rssOf(pid: number): number {
  const status = Deno.readTextFileSync(`/proc/${pid}/status`);
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) * 1024;
}

function fdsOf(pid: number): number {
  return [...Deno.readDirSync(`/proc/${pid}/fd`)].length;
}

const mb = (bytes: number) => `${(bytes / MB).toFixed(0)} MB`;
const delay = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function run() {
  if (Deno.build.os !== "linux") {
    console.log("abuse: skipped (reads RSS from /proc)");
    return;
  }
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-all",
      new URL("./abuse-server.ts", import.meta.url).pathname,
      JSON.stringify({
        RATE_LIMITS: "off",
        CHAINS: "testnet",
        LOG_LEVEL: "error",
        BODY_READ_TIMEOUT_MS: String(BODY_TIMEOUT_MS),
      }),
    ],
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let first = "";
  while (!first.includes("\n")) {
    const r = await lines.read();
    if (r.done) throw new Error("the service did not start");
    first += r.value;
  }
  const { port } = JSON.parse(first.split("\n")[0]) as { port: number };
  const base = `http://127.0.0.1:${port}`;
  const pid = child.pid;
  const held: RawConn[] = [];
  try {
    await delay(1000);
    const started = rssOf(pid);
    // Warm-up: the ordinary paths once compiled and pooled, so the baseline is a working service.
    for (let i = 0; i < 40; i++) {
      const bodies = [
        ["/api/merchant/signup", {
          email: `w${i}@example.com`,
          businessName: "W",
          password: "correct horse",
        }],
        ["/api/consumer/session", {}],
        ["/api/merchant/login", { email: `w${i}@example.com`, password: "wrong" }],
      ] as const;
      for (const [path, body] of bodies) {
        const r = await fetch(base + path, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify(body),
        });
        await r.body?.cancel();
      }
    }
    await delay(1000);
    const baseline = rssOf(pid);
    const baseFds = fdsOf(pid);
    let peak = baseline;
    const sampler = setInterval(() => (peak = Math.max(peak, rssOf(pid))), 50);
    const statuses: Record<string, Record<number, number>> = {};
    const count = (what: string, status: number) => {
      statuses[what] ??= {};
      statuses[what][status] = (statuses[what][status] ?? 0) + 1;
    };
    const t0 = performance.now();
    const phases: [string, number][] = [];
    const phase = (name: string) => phases.push([name, rssOf(pid)]);

    // 1. Eight concurrent 50 MB bodies with their length declared, sent in full.
    const chunk = new Uint8Array(MB).fill(0x20);
    await Promise.all(Array.from({ length: 8 }, async (_, i) => {
      const c = await rawConnect(port);
      try {
        const path = i % 2 ? "/api/consumer/session" : "/api/merchant/signup";
        await c.send(
          `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n` +
            `Content-Length: ${50 * MB}\r\n\r\n`,
        );
        const sending = (async () => {
          for (let k = 0; k < 50; k++) await c.send(chunk);
        })().catch(() => {});
        const r = await c.read({ timeoutMs: 30_000, until: (t) => t.includes("\r\n\r\n") });
        count("50 MB declared", Number(/^HTTP\/1\.1 (\d+)/.exec(r.text)?.[1] ?? 0));
        await Promise.race([sending, delay(30_000)]);
      } finally {
        c.close();
      }
    }));

    phase("8 × 50 MB declared");

    // 2. Eight concurrent 50 MB chunked bodies (no length declared).
    await Promise.all(Array.from({ length: 8 }, async () => {
      let sent = 0;
      const body = new ReadableStream<Uint8Array>({
        pull(ctl) {
          if (sent++ >= 50) ctl.close();
          else ctl.enqueue(chunk);
        },
      });
      try {
        const res = await fetch(base + "/api/consumer/session", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body,
          signal: AbortSignal.timeout(30_000),
        });
        count("50 MB chunked", res.status);
        await res.body?.cancel();
      } catch {
        count("50 MB chunked", 0);
      }
    }));

    phase("8 × 50 MB chunked");

    // 3. Deeply nested and NUL-laden JSON, 200 requests.
    const deep = "[".repeat(100_000) + "]".repeat(100_000);
    for (let i = 0; i < 200; i++) {
      const res = await fetch(base + "/api/merchant/signup", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: i % 2
          ? deep
          : JSON.stringify({ email: "a@b.co", businessName: "\u0000", password: "x" }),
      });
      count(i % 2 ? "100k-deep JSON" : "NUL in JSON", res.status);
      await res.body?.cancel();
    }
    phase("200 × deep or NUL JSON");

    // 4. Forty connections declaring 50 MB and sending one byte, left open.
    for (let i = 0; i < 40; i++) {
      const c = await rawConnect(port);
      held.push(c);
      await c.send(
        "POST /api/consumer/session HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
          `Content-Length: ${50 * MB}\r\n\r\n{`,
      );
    }
    for (const c of held) c.read({ timeoutMs: 60_000 }).catch(() => {});
    await delay(500);
    phase("40 × 50 MB declared, 1 byte sent");

    // 5. Slow request heads and 6. slow bodies, a byte per second each, held for HOLD_MS.
    const heads: RawConn[] = [];
    const bodies: RawConn[] = [];
    for (let i = 0; i < SLOW; i++) {
      const h = await rawConnect(port);
      await h.send("POST /api/consumer/session HTTP/1.1\r\nHost: x\r\n");
      heads.push(h);
    }
    await delay(500);
    phase(`${SLOW} slow heads opened`);
    for (let i = 0; i < SLOW; i++) {
      const b = await rawConnect(port);
      await b.send(
        "POST /api/consumer/session HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
          `Content-Length: ${MB}\r\n\r\n{`,
      );
      bodies.push(b);
    }
    held.push(...heads, ...bodies);
    // Read what the service answers (nothing, for an unfinished head).
    for (const c of [...heads, ...bodies]) c.read({ timeoutMs: 60_000 }).catch(() => {});
    const drip = setInterval(() => {
      for (const h of heads) h.send("X-Slow: 1\r\n").catch(() => {});
      for (const b of bodies) if (!b.received()) b.send(" ").catch(() => {});
    }, 1000);
    await delay(500);
    phase(`${SLOW} slow bodies opened`);
    await delay(HOLD_MS);
    clearInterval(drip);
    phase(`all held ${HOLD_MS} ms`);
    for (const b of bodies) {
      count("slow body", Number(/^HTTP\/1\.1 (\d+)/.exec(b.received())?.[1] ?? 0));
    }
    for (const h of heads) {
      count("slow head", Number(/^HTTP\/1\.1 (\d+)/.exec(h.received())?.[1] ?? 0));
    }
    const during = rssOf(pid);
    const heldFds = fdsOf(pid) - baseFds;
    const abuseMs = performance.now() - t0;

    // The clients leave; the service settles.
    for (const c of held.splice(0)) c.close();
    await delay(2000);
    clearInterval(sampler);
    const after = rssOf(pid);
    const leftFds = fdsOf(pid) - baseFds;

    console.log(
      `abuse against one service process (loopback; body deadline ${BODY_TIMEOUT_MS} ms; ` +
        `${SLOW} slow heads + ${SLOW} slow bodies held ${HOLD_MS} ms), ${
          (abuseMs / 1000).toFixed(1)
        } s`,
    );
    for (const [what, by] of Object.entries(statuses)) {
      const parts = Object.entries(by).map(([s, n]) => `${n}× ${s === "0" ? "no answer" : s}`);
      console.log(`  ${what.padEnd(16)} ${parts.join(", ")}`);
    }
    const ratio = (x: number) => `${(x / baseline).toFixed(2)}×`;
    console.log(`  RSS after start, before any request   ${mb(started)}`);
    console.log(`  RSS baseline (after start + warm-up)  ${mb(baseline)}`);
    for (const [name, rss] of phases) {
      console.log(`  RSS after ${name.padEnd(40)} ${mb(rss)}  ${ratio(rss)}`);
    }
    console.log(`  RSS peak during abuse                 ${mb(peak)}  ${ratio(peak)} of baseline`);
    console.log(
      `  RSS with the slow clients still held  ${mb(during)}  ${ratio(during)} of baseline`,
    );
    console.log(
      `  RSS after the clients left            ${mb(after)}  ${ratio(after)} of baseline, ` +
        `${(after / started).toFixed(2)}× of the post-start RSS`,
    );
    console.log(`  open sockets held by the service: ${heldFds} during, ${leftFds} after`);
  } finally {
    for (const c of held) c.close();
    await child.stdin.close();
    await lines.cancel().catch(() => {});
    const timer = setTimeout(() => child.kill("SIGKILL"), 15_000);
    await child.status;
    clearTimeout(timer);
  }
}
