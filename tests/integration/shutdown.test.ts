import assert from "node:assert/strict";
import { freePort, startTestService } from "../helpers/service.ts";
import { frameworkTestModule } from "../helpers/test-module.ts";
import { createTestDatabase } from "../helpers/db.ts";
import { waitFor } from "../helpers/poll.ts";

Deno.test("shutdown: a request in flight finishes, then the service stops", async () => {
  const { mod, gate } = frameworkTestModule();
  const svc = await startTestService({ modules: [mod] });
  const inFlight = fetch(`${svc.baseUrl}/api/test/slow`);
  await gate.entered;
  let stopped = false;
  const stopping = svc.close().then(() => (stopped = true));
  // The server stopped accepting, but the request in flight holds the shutdown open.
  await waitFor(async () => {
    try {
      const r = await fetch(`${svc.baseUrl}/healthz`);
      await r.body?.cancel();
      return false;
    } catch {
      return true;
    }
  }, { what: "the listener to close" });
  assert.equal(stopped, false);
  gate.release();
  const res = await inFlight;
  assert.equal(res.status, 200);
  assert.deepEqual(await res.json(), { success: true, slow: true });
  await stopping;
  assert.equal(stopped, true);
});

function spawnService(databaseUrl: string, port: number, dataDir: string) {
  return new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", "src/main.ts"],
    env: {
      DATABASE_URL: databaseUrl,
      PORT: String(port),
      HOST: "127.0.0.1",
      APP_ENV: "test",
      JWT_SECRET: "s".repeat(40),
      WALLET_MASTER_KEY: "22".repeat(32),
      DATA_DIR: dataDir,
      // Small pools: beside other test files on the machine's server (tests/helpers/processes.ts).
      DATABASE_POOL_MAX: "4",
    },
    stdout: "piped",
    stderr: "piped",
  }).spawn();
}

async function ready(port: number) {
  return await waitFor(async () => {
    const r = await fetch(`http://127.0.0.1:${port}/readyz`);
    await r.body?.cancel();
    return r.status === 200;
  }, { timeoutMs: 30_000, what: `readyz on ${port}` });
}

Deno.test("shutdown: two processes start together on one database, then stop on SIGTERM", async () => {
  // A port drawn free can be taken by another test file's server before a process binds it
  // (CI, stop 55: "Address already in use"): the pair is started again on other ports then.
  for (let attempt = 1;; attempt++) {
    const db = await createTestDatabase({ migrate: false });
    const ports = [freePort(), freePort()];
    // One database, one DATA_DIR: the second process shares the first one's local chains.
    const dataDir = Deno.makeTempDirSync();
    const procs = ports.map((p) => spawnService(db.url, p, dataDir));
    let outputs: Deno.CommandOutput[] = [];
    try {
      let startFailure: unknown;
      try {
        await Promise.all(ports.map(ready));
        const rows = await db.sql`select version from schema_migrations`;
        assert.equal(new Set(rows.map((r) => r.version)).size, rows.length);
      } catch (e) {
        startFailure = e;
      }
      for (const p of procs) {
        try {
          p.kill("SIGTERM");
        } catch { /* already gone */ }
      }
      outputs = await Promise.all(procs.map((p) => p.output()));
      const taken = outputs.some((o) =>
        /Address already in use/.test(new TextDecoder().decode(o.stderr))
      );
      if (taken && attempt < 3) continue;
      if (startFailure) throw startFailure;
      for (const out of outputs) {
        assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
        const lines = new TextDecoder().decode(out.stdout).trim().split("\n").map((l) =>
          JSON.parse(l)
        );
        assert.equal(lines.at(-1).msg, "stopped");
        assert.ok(lines.some((l) => l.msg === "queue stopped"));
      }
      return;
    } finally {
      for (const p of procs) {
        try {
          p.kill("SIGKILL");
        } catch { /* already gone */ }
      }
      await db.drop();
    }
  }
});

Deno.test("shutdown: SIGTERM while starting stops the service once it is up, cleanly", async () => {
  const db = await createTestDatabase({ migrate: false });
  const proc = spawnService(db.url, freePort(), Deno.makeTempDirSync());
  try {
    // The first log line comes from inside the start (signal handlers are set before it).
    const reader = proc.stdout.getReader();
    let out = "";
    while (!out.includes("\n")) {
      const { value, done } = await reader.read();
      if (done) break;
      out += new TextDecoder().decode(value);
    }
    proc.kill("SIGTERM");
    while (true) {
      const { value, done } = await reader.read();
      if (done) break;
      out += new TextDecoder().decode(value);
    }
    const status = await proc.status;
    const stderr = new TextDecoder().decode(await new Response(proc.stderr).arrayBuffer());
    assert.equal(status.code, 0, `${stderr}\n${out}`);
    const lines = out.trim().split("\n").map((l) => JSON.parse(l));
    assert.equal(lines.at(-1).msg, "stopped");
    assert.ok(lines.some((l) => l.msg === "shutting down" && l.reason === "SIGTERM"));
  } finally {
    try {
      proc.kill("SIGKILL");
    } catch { /* already gone */ }
    await db.drop();
  }
});

/** Pids of `pid`'s child processes named `name` (from /proc). */
function childrenNamed(pid: number, name: string): number[] {
  const out: number[] = [];
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const stat = Deno.readTextFileSync(`/proc/${entry.name}/stat`);
      // pid (comm) state ppid ...
      const m = /^\d+ \((.*)\) (\S) (\d+)/.exec(stat);
      if (m && m[1] === name && Number(m[3]) === pid) out.push(Number(entry.name));
    } catch { /* gone meanwhile */ }
  }
  return out;
}

/** Still running (a zombie waiting to be reaped counts as gone). */
function running(pid: number): boolean {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    return /^\d+ \(.*\) (\S)/.exec(stat)?.[1] !== "Z";
  } catch {
    return false;
  }
}

Deno.test("shutdown: SIGTERM ends a wedged process within SHUTDOWN_TIMEOUT_MS, nodes and all", async () => {
  const db = await createTestDatabase();
  await db.sql`create table wedge_effects (id serial primary key, route text not null)`;
  const port = freePort();
  const base = `http://127.0.0.1:${port}`;
  const timeoutMs = 2_000;
  const proc = new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", "tests/fixtures/wedged-service.ts"],
    env: {
      DATABASE_URL: db.url,
      PORT: String(port),
      HOST: "127.0.0.1",
      APP_ENV: "test",
      JWT_SECRET: "s".repeat(40),
      WALLET_MASTER_KEY: "22".repeat(32),
      DATA_DIR: Deno.makeTempDirSync(),
      LOG_LEVEL: "info",
      SHUTDOWN_TIMEOUT_MS: String(timeoutMs),
      // No backstops: only the bounded stop can end this wedge.
      DATABASE_POOL_MAX: "2",
      DATABASE_LOCK_TIMEOUT_MS: "0",
      DATABASE_IDLE_TX_TIMEOUT_MS: "0",
    },
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const output = proc.output();
  let exited = false;
  output.then(() => (exited = true), () => (exited = true));
  const inFlight: Promise<unknown>[] = [];
  try {
    await waitFor(async () => {
      if (exited) throw new Error("the service exited while starting");
      const r = await fetch(`${base}/readyz`).catch(() => null);
      await r?.body?.cancel();
      return r?.status === 200;
    }, { timeoutMs: 90_000, intervalMs: 100, what: "the service to be ready" });
    const nodes = childrenNamed(proc.pid, "anvil");
    assert.equal(nodes.length, 2, "a local node per settlement chain");

    // Two transactions each holding one of the pool's two connections while waiting for the
    // other's, and a request that never answers.
    for (const path of ["/api/test/wedge/pool", "/api/test/wedge/pool"]) {
      inFlight.push(fetch(`${base}${path}`, { method: "POST" }).catch(() => null));
    }
    inFlight.push(fetch(`${base}/api/test/hang`).catch(() => null));
    await waitFor(async () => {
      const [{ n }] = await db.sql<{ n: number }[]>`
        select count(*)::int as n from pg_stat_activity
        where datname = ${db.name} and state = 'idle in transaction'`;
      return n === 2;
    }, { timeoutMs: 30_000, what: "the pool to be wedged" });

    proc.kill("SIGTERM");
    // The stop gives up on what is stuck after SHUTDOWN_TIMEOUT_MS, then ends the pool and the
    // nodes within a short grace (src/shutdown.ts); the bound here is that plus a generous margin.
    await waitFor(() => exited, {
      timeoutMs: timeoutMs + 5_000 + 15_000,
      intervalMs: 50,
      what: "the process to exit",
    });
    const out = await output;
    assert.equal(out.code, 1, "a forced stop exits non-zero");
    const text = (b: Uint8Array) => new TextDecoder().decode(b).trim().split("\n");
    // Warnings and errors go to stderr, the rest to stdout.
    const lines = text(out.stdout).map((l) => JSON.parse(l));
    const problems = text(out.stderr).filter((l) => l.startsWith("{")).map((l) => JSON.parse(l));
    const forced = problems.find((l) => l.msg === "shutdown forced: work in flight was abandoned");
    assert.ok(forced, "the forced stop is logged");
    assert.ok(forced.abandoned.includes("http server"), JSON.stringify(forced));
    assert.deepEqual(lines.at(-1).msg, "stopped");
    assert.equal(lines.at(-1).forced, true);
    await waitFor(() => nodes.every((pid) => !running(pid)), {
      timeoutMs: 15_000,
      what: "the local nodes to be gone",
    });
    const [{ n }] = await db.sql<{ n: number }[]>`
      select count(*)::int as n from pg_stat_activity
      where datname = ${db.name} and application_name = 'settlement'`;
    assert.equal(n, 0, "the process's database sessions are gone");
  } finally {
    if (!exited) {
      try {
        proc.kill("SIGKILL");
      } catch { /* already gone */ }
    }
    await output.catch(() => {});
    await Promise.all(inFlight);
    await db.drop();
  }
});

Deno.test("start: a port already taken is named, before anything is started", async () => {
  const db = await createTestDatabase({ migrate: false });
  const holder = Deno.listen({ port: 0, hostname: "127.0.0.1" });
  const port = (holder.addr as Deno.NetAddr).port;
  try {
    const out = await spawnService(db.url, port, Deno.makeTempDirSync()).output();
    const stderr = new TextDecoder().decode(out.stderr);
    assert.equal(out.code, 1, stderr);
    assert.match(stderr, new RegExp(`^Port ${port} on 127\\.0\\.0\\.1 is already in use`, "m"));
    assert.match(stderr, /set PORT to a free port/);
    // Refused before the database was touched: nothing migrated.
    const [{ n }] = await db.sql`
      select count(*)::int as n from information_schema.tables where table_schema = 'public'`;
    assert.equal(n, 0, new TextDecoder().decode(out.stdout));
  } finally {
    holder.close();
    await db.drop();
  }
});
