import assert from "node:assert/strict";
import postgres from "postgres";
import { startEmbeddedPostgres } from "../../src/db/embedded.ts";
import { silentLogger } from "../../src/log.ts";

Deno.test("embedded postgres: starts, keeps data across restarts, adopts a crashed run's server", async () => {
  const dir = await Deno.makeTempDir({ prefix: "settlement-embedded-" });
  try {
    const first = await startEmbeddedPostgres({ dataDir: dir, log: silentLogger });
    assert.equal(first.owned, true);
    let sql = postgres(first.url, { max: 1, onnotice: () => {} });
    await sql`create table kept (v text)`;
    await sql`insert into kept values ('still here')`;
    await sql.end();
    await first.stop();

    // Restart: a new port may be picked, the data survives.
    const second = await startEmbeddedPostgres({ dataDir: dir, log: silentLogger });
    sql = postgres(second.url, { max: 1, onnotice: () => {} });
    assert.deepEqual((await sql`select v from kept`).map((r) => r.v), ["still here"]);
    await sql.end();

    // Simulate a killed owner: the server runs on, the owner file names a dead process.
    await Deno.writeTextFile(`${dir}/postgres.owner`, "999999\n");
    const third = await startEmbeddedPostgres({ dataDir: dir, log: silentLogger });
    assert.equal(third.port, second.port, "the running server is adopted, not restarted");
    assert.equal(third.owned, true);
    await third.stop();
    const after = postgres(second.url, { max: 1, connect_timeout: 2, onnotice: () => {} });
    await assert.rejects(() => after`select 1`);
    await after.end();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("embedded postgres: a script that exits with one running stops it (signalStop)", async () => {
  // The test helper's private server, as a test or script run directly with no database
  // configured starts it: the process exits, and its exit handler stops the server.
  const dir = await Deno.makeTempDir({ prefix: "settlement-embedded-exit-" });
  const script = `${dir}/script.ts`;
  const embedded = new URL("../../src/db/embedded.ts", import.meta.url).href;
  const log = new URL("../../src/log.ts", import.meta.url).href;
  await Deno.writeTextFile(
    script,
    `import { startEmbeddedPostgres } from "${embedded}";
import { silentLogger } from "${log}";
const db = await startEmbeddedPostgres({ dataDir: ${
      JSON.stringify(`${dir}/data`)
    }, log: silentLogger });
globalThis.addEventListener("unload", () => db.signalStop());
const postmaster = Deno.readTextFileSync(${
      JSON.stringify(`${dir}/data/postgres/postmaster.pid`)
    }).split("\\n")[0];
console.log(postmaster);
console.log(db.url);
`,
  );
  try {
    const out = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--allow-all",
        "--config",
        new URL("../../deno.json", import.meta.url).pathname,
        script,
      ],
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.ok(out.success, new TextDecoder().decode(out.stderr));
    const [pid, url] = new TextDecoder().decode(out.stdout).trim().split("\n").slice(-2);
    assert.match(url, /^postgres:\/\//);
    assert.match(pid, /^\d+$/);
    // The server goes down with the script (a fast shutdown takes a moment): bounded poll. It
    // refuses connections as soon as its shutdown begins and removes postmaster.pid before its
    // last words; it is down once the postmaster process has exited (gone, or a zombie no one
    // reaps). Only then may its directory go (removed under a checkpoint in progress, the
    // checkpointer PANICs) and its log be read whole.
    const exited = () => {
      try {
        // A zombie's command line reads empty, and so would a reused pid's not name postgres.
        return !Deno.readTextFileSync(`/proc/${pid}/cmdline`).includes("postgres");
      } catch {
        return true;
      }
    };
    const deadline = Date.now() + 20_000;
    while (!exited() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    assert.ok(exited(), "the server outlived the script that started it");
    const sql = postgres(url, { max: 1, connect_timeout: 2, onnotice: () => {} });
    await assert.rejects(() => sql`select 1`, "nothing answers on its port");
    await sql.end({ timeout: 1 });
    const log = await Deno.readTextFile(`${dir}/data/postgres/server.log`);
    assert.match(log, /database system is shut down/, `a clean shutdown; the server log:\n${log}`);
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});
