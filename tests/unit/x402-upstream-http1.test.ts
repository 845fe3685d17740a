/**
 * The upstream's HTTP/1.1 client against servers that answer byte by byte as the test says:
 * chunked and close-delimited bodies, interim responses, malformed answers, connections kept and
 * reused, a pooled connection the upstream closed (retried for GET only), the pool's limit, header
 * injection refused before anything is sent, https with a certificate checked against its name,
 * and a name's addresses raced (RFC 8305) past one that never answers.
 */
import assert from "node:assert/strict";
import {
  callUpstream,
  type ConnectAttempt,
  connectFirst,
  interleaveFamilies,
  type UpstreamResult,
} from "../../src/modules/x402/x402.upstream.ts";
import { waitFor } from "../helpers/poll.ts";
import {
  closeIdleUpstreams,
  idleUpstreams,
  MAX_PER_POOL,
} from "../../src/modules/x402/x402.upstream.http1.ts";

interface Seen {
  method: string;
  path: string;
  head: string;
  body: string;
  /** Which accepted connection carried it (0-based), and its place on that connection. */
  connection: number;
  onConnection: number;
}

/**
 * A TCP server that reads each HTTP/1.1 request (head and content-length body) and lets `answer`
 * write the bytes of its response; "close" ends the connection after them, "drop" ends it
 * without writing anything.
 */
function rawServer(answer: (r: Seen) => Promise<string | "drop"> | string | "drop") {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const seen: Seen[] = [];
  const state = { accepted: 0, open: 0, maxOpen: 0 };
  const conns = new Set<Deno.Conn>();
  const enc = new TextEncoder();
  const serve = async (conn: Deno.Conn, connection: number) => {
    let buf = new Uint8Array(0);
    const more = async () => {
      const chunk = new Uint8Array(64 * 1024);
      const n = await conn.read(chunk);
      if (n === null) return false;
      const next = new Uint8Array(buf.length + n);
      next.set(buf);
      next.set(chunk.subarray(0, n), buf.length);
      buf = next;
      return true;
    };
    try {
      for (let onConnection = 0;; onConnection++) {
        let end = -1;
        while ((end = new TextDecoder().decode(buf).indexOf("\r\n\r\n")) < 0) {
          if (!(await more())) return;
        }
        const head = new TextDecoder().decode(buf.subarray(0, end));
        const length = Number(/\r\ncontent-length: *([0-9]+)/i.exec(head)?.[1] ?? 0);
        while (buf.length < end + 4 + length) if (!(await more())) return;
        const body = new TextDecoder().decode(buf.subarray(end + 4, end + 4 + length));
        buf = buf.slice(end + 4 + length);
        const [method, path] = head.split(" ");
        const r = { method, path, head, body, connection, onConnection };
        seen.push(r);
        const out = await answer(r);
        if (out === "drop") return;
        await conn.write(enc.encode(out));
        if (/\r\nconnection: close\r\n/i.test(out.split("\r\n\r\n")[0] + "\r\n")) return;
        const answered = out.split("\r\n\r\n").find((h) => /^HTTP\/1\.1 [2-5]/.test(h)) ?? "";
        if (
          !/^HTTP\/1\.1 204 /.test(answered) &&
          !/\r\n(content-length|transfer-encoding):/i.test(answered)
        ) {
          return; // a body to the end of the connection
        }
      }
    } catch {
      // the client went away
    } finally {
      conns.delete(conn);
      state.open--;
      try {
        conn.close();
      } catch { /* closed */ }
    }
  };
  const accepting = (async () => {
    for await (const conn of listener) {
      conns.add(conn);
      state.open++;
      state.maxOpen = Math.max(state.maxOpen, state.open);
      serve(conn, state.accepted++);
    }
  })().catch(() => {});
  const base = `http://127.0.0.1:${(listener.addr as Deno.NetAddr).port}`;
  let closed = false;
  return {
    seen,
    state,
    base,
    call: (
      path: string,
      req: { method: string; body?: string; headers?: Record<string, string> } = {
        method: "GET",
      },
    ) => callUpstream(new URL(base + path), req, { timeoutMs: 5_000, policy: "any" }),
    /** Closes the server's side of every connection it holds. */
    dropConnections() {
      for (const c of conns) {
        try {
          c.close();
        } catch { /* closed */ }
      }
    },
    async close() {
      if (!closed) {
        closed = true;
        listener.close();
      }
      this.dropConnections();
      await accepting;
      closeIdleUpstreams();
    },
  };
}

const ok = (body: string, extra = "") =>
  `HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: ${body.length}\r\n${extra}\r\n${body}`;
const text = (r: UpstreamResult) =>
  r.ok ? new TextDecoder().decode(r.body) : `(failed: ${r.error})`;

async function until(what: string, test: () => boolean) {
  for (let i = 0; i < 1000; i++) {
    if (test()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`not reached within 1,000 polls (10 s or more): ${what}`);
}

Deno.test("upstream client: bodies by length, by chunks and to the connection's end", async () => {
  const s = rawServer((r) => {
    if (r.path === "/chunked") {
      return "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n" +
        '4;ext=1\r\n{"a"\r\n' + "A\r\n:[1,2,3,4]\r\n" + "1\r\n}\r\n" +
        "0\r\nx-trailer: yes\r\n\r\n";
    }
    if (r.path === "/to-end") {
      return "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n\r\nuntil the end";
    }
    if (r.path === "/interim") {
      return "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nlink: </a>\r\n\r\n" +
        ok("final");
    }
    if (r.path === "/empty") return "HTTP/1.1 204 No Content\r\n\r\n";
    return ok(`hello ${r.method} ${r.path}`);
  });
  try {
    const chunked = await s.call("/chunked");
    assert.equal(text(chunked), '{"a":[1,2,3,4]}');
    assert.equal(chunked.ok && chunked.contentType, "application/json");
    // The connection is kept: the next call goes on it.
    assert.equal(text(await s.call("/plain")), "hello GET /plain");
    assert.equal(s.state.accepted, 1);
    assert.deepEqual(s.seen.map((r) => [r.connection, r.onConnection]), [[0, 0], [0, 1]]);

    const interim = await s.call("/interim");
    assert.equal(text(interim), "final");
    const empty = await s.call("/empty");
    assert.equal(empty.ok && empty.status, 204);
    assert.equal(empty.ok && empty.body.length, 0);
    assert.equal(s.state.accepted, 1, "interim and empty answers keep the connection too");

    // No length: the body runs to the end of the connection, which is then not reused.
    assert.equal(text(await s.call("/to-end")), "until the end");
    assert.equal(text(await s.call("/plain")), "hello GET /plain");
    assert.equal(s.state.accepted, 2);

    // A POST's body and headers as written.
    const posted = await s.call("/post", {
      method: "POST",
      body: '{"q":"é"}',
      headers: { "x-trace": "1" },
    });
    assert.equal(text(posted), "hello POST /post");
    const last = s.seen.at(-1)!;
    assert.equal(last.body, '{"q":"é"}');
    assert.match(last.head, /\r\ncontent-length: 10(\r\n|$)/);
    assert.match(last.head, /\r\ncontent-type: application\/json\r\n/);
    assert.match(last.head, /\r\nx-trace: 1\r\n/);
    assert.match(last.head, new RegExp(`\r\nhost: ${new URL(s.base).host}\r\n`));
  } finally {
    await s.close();
  }
});

Deno.test("upstream client: a malformed answer is the call's failure, never reused", async () => {
  const s = rawServer((r) => {
    if (r.path === "/garbage") return "SMTP ready\r\n\r\n";
    if (r.path === "/two-lengths") {
      return "HTTP/1.1 200 OK\r\ncontent-length: 2\r\ncontent-length: 3\r\n\r\nabc";
    }
    if (r.path === "/bad-chunk") {
      return "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n";
    }
    if (r.path === "/short") {
      return "HTTP/1.1 200 OK\r\ncontent-length: 10\r\nconnection: close\r\n\r\nabc";
    }
    if (r.path === "/switch") return "HTTP/1.1 101 Switching Protocols\r\nupgrade: x\r\n\r\n";
    if (r.path === "/extra") return ok("one") + "HTTP/1.1 200 OK\r\n";
    if (r.path === "/both") {
      return "HTTP/1.1 200 OK\r\ncontent-length: 3\r\ntransfer-encoding: chunked\r\n\r\n" +
        "5\r\nhello\r\n0\r\n\r\n";
    }
    return ok("fine");
  });
  try {
    const cases: [string, string][] = [
      ["/garbage", "malformed upstream response: status line"],
      ["/two-lengths", "malformed upstream response: content-length"],
      ["/bad-chunk", "malformed upstream response: chunk size"],
      ["/short", "upstream closed the connection"],
      ["/switch", "upstream switched protocols"],
    ];
    for (const [path, error] of cases) {
      const r = await s.call(path);
      assert.deepEqual(r, { ok: false, error }, path);
    }
    // Bytes after a whole response: that response stands, its connection is not trusted again.
    const before = s.state.accepted;
    assert.equal(text(await s.call("/extra")), "one");
    assert.equal(text(await s.call("/next")), "fine");
    assert.equal(s.state.accepted, before + 2);
    // A length and chunks at once: the chunks are the body, and the connection is not reused
    // (the one /next left in the pool carries /both; the next call needs a new one).
    assert.equal(text(await s.call("/both")), "hello");
    assert.equal(s.state.accepted, before + 2);
    assert.equal(text(await s.call("/next")), "fine");
    assert.equal(s.state.accepted, before + 3);
  } finally {
    await s.close();
  }
});

Deno.test("upstream client: a pooled connection the upstream closed", async (t) => {
  // The second request on any connection is dropped unanswered (as when the upstream closes an
  // idle connection just as the request goes out).
  const s = rawServer((r) => r.onConnection === 1 ? "drop" : ok(`${r.method} ${r.path}`));
  try {
    await t.step("a GET is retried once on a new connection", async () => {
      assert.equal(text(await s.call("/a")), "GET /a");
      assert.equal(text(await s.call("/b")), "GET /b");
      assert.deepEqual(s.seen.map((r) => [r.path, r.connection]), [["/a", 0], ["/b", 0], [
        "/b",
        1,
      ]]);
    });
    await t.step("a POST is not: it may have reached the upstream", async () => {
      const r = await s.call("/pay", { method: "POST", body: "{}" });
      assert.deepEqual(r, { ok: false, error: "upstream closed the connection" });
      assert.equal(s.seen.filter((x) => x.path === "/pay").length, 1);
    });
  } finally {
    await s.close();
  }

  // An upstream that closes its idle connections: the pool notices before anyone writes to one.
  const closing = rawServer((r) => ok(`${r.method} ${r.path}`));
  try {
    await t.step("an idle connection closed by the upstream is dropped, not used", async () => {
      assert.equal(text(await closing.call("/first")), "GET /first");
      await until("the connection is idle in the pool", () => idleUpstreams() === 1);
      // The server closes its side now.
      closing.dropConnections();
      await until("the pool dropped the closed connection", () => idleUpstreams() === 0);
    });
  } finally {
    await closing.close();
  }

  const quiet = rawServer((r) => ok(r.path));
  try {
    await t.step("an idle connection is closed by the client after IDLE_MS", async () => {
      assert.equal(text(await quiet.call("/once")), "/once");
      assert.equal(idleUpstreams(), 1);
      await until("the idle connection is closed", () => idleUpstreams() === 0);
      await until("the server saw it closed", () => quiet.state.open === 0);
    });
  } finally {
    await quiet.close();
  }
});

Deno.test("upstream client: at most MAX_PER_POOL connections to one upstream", async () => {
  const s = rawServer(async (r) => {
    await new Promise((resolve) => setTimeout(resolve, 5));
    return ok(r.path);
  });
  try {
    const calls = MAX_PER_POOL + 44;
    const results = await Promise.all(
      Array.from({ length: calls }, (_, i) => s.call(`/n${i}`)),
    );
    assert.deepEqual(results.map(text), results.map((_, i) => `/n${i}`));
    assert(s.state.maxOpen <= MAX_PER_POOL, `${s.state.maxOpen} connections at once`);
    assert(s.state.accepted <= MAX_PER_POOL, `${s.state.accepted} connections in all`);
    assert.equal(s.seen.length, calls);
  } finally {
    await s.close();
  }
});

Deno.test("upstream client: a header with CR, LF or NUL is refused before anything is sent", async () => {
  const s = rawServer(() => ok("never"));
  try {
    const refused: Record<string, string>[] = [
      { "content-type": "text/plain\r\nx-injected: 1" },
      { "content-type": "a\nb" },
      { "x-nul": "a\0b" },
      { "bad name": "x" },
      { host: "elsewhere.example" },
    ];
    for (const headers of refused) {
      const r = await s.call("/x", { method: "POST", body: "{}", headers });
      assert.equal(r.ok, false, JSON.stringify(headers));
      assert.match(!r.ok ? r.error : "", /^invalid request header/);
    }
    assert.equal(s.seen.length, 0);
    assert.equal(s.state.accepted, 0);
  } finally {
    await s.close();
  }
});

Deno.test("upstream client: https, the certificate checked against the URL's name", async () => {
  const dir = new URL("../fixtures/tls/", import.meta.url);
  const cert = await Deno.readTextFile(new URL("localhost.crt", dir));
  const key = await Deno.readTextFile(new URL("localhost.key", dir));
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, cert, key, onListen() {} },
    (req) => Response.json({ secure: new URL(req.url).protocol }),
  );
  const port = server.addr.port;
  const call = (host: string, caCerts?: string[]) =>
    callUpstream(new URL(`https://${host}:${port}/x`), { method: "GET" }, {
      timeoutMs: 5_000,
      policy: "any",
      caCerts,
    });
  try {
    const trusted = await call("localhost", [cert]);
    assert.equal(text(trusted), '{"secure":"https:"}');
    // Twice on one connection: the TLS session is kept like a plain one.
    assert.equal(text(await call("localhost", [cert])), '{"secure":"https:"}');
    // Not a root this client trusts, or not the name on the certificate: no answer.
    for (const [host, roots] of [["localhost", undefined], ["127.0.0.1", [cert]]] as const) {
      const r = await call(host, roots ? [...roots] : undefined);
      assert.equal(r.ok, false, host);
      assert.equal(!r.ok && r.status, undefined, host);
    }
  } finally {
    closeIdleUpstreams();
    await server.shutdown();
  }
});

Deno.test("upstream client: a name's addresses are tried in order until one accepts", async () => {
  // Listening on 127.0.0.1 only, as a development upstream often does, while the name may
  // resolve to ::1 first.
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  const closed = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const refusing = (closed.addr as Deno.NetAddr).port;
  closed.close();
  try {
    const conn = await connectFirst(["::1", "127.0.0.1"], port);
    assert.equal((conn.remoteAddr as Deno.NetAddr).hostname, "127.0.0.1");
    conn.close();
    await assert.rejects(
      () => connectFirst(["127.0.0.1"], refusing),
      Deno.errors.ConnectionRefused,
    );
    await assert.rejects(() => connectFirst([], port), /no address to connect to/);
  } finally {
    listener.close();
  }
});

Deno.test("upstream client: an address that never answers costs one attempt delay, not the call", async (t) => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  // 192.0.2.0/24 (TEST-NET-1) stands for an address whose connection attempts are dropped: the
  // attempt hangs until it is aborted. Every other address is a real connect.
  const aborted: string[] = [];
  const started: string[] = [];
  const blackHole: ConnectAttempt = (o) => {
    started.push(o.hostname);
    if (!o.hostname.startsWith("192.0.2.")) return Deno.connect(o);
    return new Promise((_, reject) =>
      o.signal.addEventListener("abort", () => {
        aborted.push(o.hostname);
        reject(o.signal.reason);
      })
    );
  };
  const bounded = <T>(p: Promise<T>) => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const bound = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error("not connected within 10 s")), 10_000);
    });
    return Promise.race([p, bound]).finally(() => clearTimeout(timer));
  };
  try {
    await t.step("families interleaved, the first address's family first", () => {
      assert.deepEqual(
        interleaveFamilies(["::1", "fd00::2", "127.0.0.1", "10.0.0.1", "10.0.0.2"]),
        ["::1", "127.0.0.1", "fd00::2", "10.0.0.1", "10.0.0.2"],
      );
      assert.deepEqual(interleaveFamilies(["127.0.0.1", "::1"]), ["127.0.0.1", "::1"]);
      assert.deepEqual(interleaveFamilies(["10.0.0.1", "10.0.0.2"]), ["10.0.0.1", "10.0.0.2"]);
      assert.deepEqual(interleaveFamilies([]), []);
    });

    await t.step("the next address is tried beside it; the silent one is aborted", async () => {
      started.length = aborted.length = 0;
      const conn = await bounded(
        connectFirst(["192.0.2.55", "127.0.0.1"], port, { connect: blackHole, attemptDelayMs: 20 }),
      );
      assert.equal((conn.remoteAddr as Deno.NetAddr).hostname, "127.0.0.1");
      conn.close();
      assert.deepEqual(started, ["192.0.2.55", "127.0.0.1"]);
      assert.deepEqual(aborted, ["192.0.2.55"]);
    });

    await t.step("a refused attempt starts the next at once, without the delay", async () => {
      const closed = Deno.listen({ hostname: "127.0.0.1", port: 0 });
      const refusing = (closed.addr as Deno.NetAddr).port;
      closed.close();
      const refusedFirst: ConnectAttempt = (o) =>
        Deno.connect({ ...o, port: o.hostname === "127.0.0.2" ? refusing : o.port });
      // An hour's delay: were the next attempt waiting for it, the bound would fail the step.
      const conn = await bounded(
        connectFirst(["127.0.0.2", "127.0.0.1"], port, {
          connect: refusedFirst,
          attemptDelayMs: 3_600_000,
        }),
      );
      assert.equal((conn.remoteAddr as Deno.NetAddr).hostname, "127.0.0.1");
      conn.close();
    });

    await t.step("a connection won after another is closed at once", async () => {
      const late = Promise.withResolvers<Deno.TcpConn>();
      let lateClosed = false;
      const slow: ConnectAttempt = (o) =>
        o.hostname === "192.0.2.7" ? late.promise : Deno.connect(o);
      const conn = await bounded(
        connectFirst(["192.0.2.7", "127.0.0.1"], port, { connect: slow, attemptDelayMs: 20 }),
      );
      assert.equal((conn.remoteAddr as Deno.NetAddr).hostname, "127.0.0.1");
      late.resolve({ close: () => (lateClosed = true) } as unknown as Deno.TcpConn);
      await waitFor(() => lateClosed, { what: "the late connection closed" });
      conn.close();
    });

    await t.step("the call's deadline aborts every attempt", async () => {
      started.length = aborted.length = 0;
      const deadline = new AbortController();
      const connecting = connectFirst(["192.0.2.1", "192.0.2.2", "192.0.2.3"], port, {
        connect: blackHole,
        attemptDelayMs: 5,
        signal: deadline.signal,
      });
      await waitFor(() => started.length === 3, { what: "all three attempts started" });
      deadline.abort(new Error("timed out after 5 ms"));
      await assert.rejects(connecting, /timed out after 5 ms/);
      assert.deepEqual(aborted.sort(), ["192.0.2.1", "192.0.2.2", "192.0.2.3"]);
    });

    await t.step("every attempt failed: the last error", async () => {
      const failing: ConnectAttempt = (o) => Promise.reject(new Error(`no route to ${o.hostname}`));
      await assert.rejects(
        connectFirst(["10.0.0.1", "10.0.0.2"], port, { connect: failing }),
        /no route to 10.0.0.2/,
      );
    });
  } finally {
    listener.close();
  }
});
