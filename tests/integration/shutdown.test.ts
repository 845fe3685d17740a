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
  const db = await createTestDatabase({ migrate: false });
  const ports = [freePort(), freePort()];
  // One database, one DATA_DIR: the second process shares the first one's local chains.
  const dataDir = Deno.makeTempDirSync();
  const procs = ports.map((p) => spawnService(db.url, p, dataDir));
  try {
    await Promise.all(ports.map(ready));
    const rows = await db.sql`select version from schema_migrations`;
    assert.equal(new Set(rows.map((r) => r.version)).size, rows.length);
    for (const p of procs) p.kill("SIGTERM");
    const outputs = await Promise.all(procs.map((p) => p.output()));
    for (const out of outputs) {
      assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
      const lines = new TextDecoder().decode(out.stdout).trim().split("\n").map((l) =>
        JSON.parse(l)
      );
      assert.equal(lines.at(-1).msg, "stopped");
      assert.ok(lines.some((l) => l.msg === "queue stopped"));
    }
  } finally {
    for (const p of procs) {
      try {
        p.kill("SIGKILL");
      } catch { /* already gone */ }
    }
    await db.drop();
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
