/**
 * A bridge source chain's local node outlives a service killed with kill -9 (its pid file names
 * the dead process). A later process starts that chain only when it is used, so its start stops
 * the leftover (src/chain/local-node.ts `stopLeftoverNode`); a node of a live process is left
 * alone.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { createTestDatabase } from "../helpers/db.ts";
import { TEST_MASTER_KEY } from "../helpers/chain.ts";
import { Chain } from "../../src/chain/index.ts";
import { parseChainConfig } from "../../src/chain/profiles.ts";
import { startLocalNode, stopLeftoverNode } from "../../src/chain/local-node.ts";
import { processAlive } from "../../src/processes.ts";
import { silentLogger } from "../../src/log.ts";

/** A node started in `stateDir` by a child process, which is then killed: its pid. */
async function orphanedNode(stateDir: string, name: string, chainId: number): Promise<number> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", "tests/fixtures/node-owner.ts"],
    env: { STATE_DIR: stateDir, NODE_NAME: name, CHAIN_ID: String(chainId) },
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let out = "";
  while (!/ready \d+/.test(out)) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`the node's owner exited before it was ready: ${out}`);
    out += value;
  }
  reader.cancel().catch(() => {});
  child.kill("SIGKILL");
  assert.equal((await child.status).signal, "SIGKILL");
  return Number(/ready (\d+)/.exec(out)![1]);
}

/** Kills `pid` if it is still this directory's anvil (pids wrap: never anything else). */
async function cleanUp(pid: number, dataDir: string) {
  const cmd = await Deno.readTextFile(`/proc/${pid}/cmdline`).catch(() => "");
  if (cmd.includes("anvil") && cmd.includes(dataDir)) Deno.kill(pid, "SIGKILL");
}

Deno.test("a source chain's node left by a killed process is stopped by the next start", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "settlement-leftover-" });
  const db = await createTestDatabase();
  const stateDir = join(dataDir, "chains", "Base_Sepolia");
  let pid = 0;
  try {
    pid = await orphanedNode(stateDir, "Base_Sepolia", 84532);
    assert.equal(await processAlive(pid), true, "the node outlives its killed owner");
    const problems: string[] = [];
    const config = parseChainConfig(
      { CHAINS: "testnet" },
      { baseUrl: "http://127.0.0.1", isProduction: false },
      problems,
    );
    assert.deepEqual(problems, []);
    const chain = await Chain.start({
      config,
      masterKey: TEST_MASTER_KEY,
      sql: db.sql,
      log: silentLogger,
      dataDir,
    });
    try {
      assert.equal(await processAlive(pid), false, "stopped at the start, though never used");
      assert.deepEqual(chain.startedSources(), [], "and no node started in its place");
      await assert.rejects(Deno.stat(join(stateDir, "node.json")));
    } finally {
      await chain.stop();
    }

    // A node whose owner lives (this process) is not a leftover.
    const live = await startLocalNode({
      name: "Base_Sepolia",
      chainId: 84532,
      stateDir,
      log: silentLogger,
    });
    try {
      assert.equal(await stopLeftoverNode(stateDir, silentLogger), false);
      assert.equal(await processAlive(live.pid), true);
    } finally {
      await live.stop();
    }
    assert.equal(await stopLeftoverNode(join(dataDir, "chains", "never"), silentLogger), false);
  } finally {
    if (pid) await cleanUp(pid, dataDir);
    await db.drop();
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  }
});
