/**
 * anvil rewrites its state file in place every second: a node killed while writing leaves it cut
 * short, and every later start failed to parse it (an outside audit, 2026-12-01: only deleting it
 * and accepting a reset, losing the chain, got the service up). A start now finds it cut short,
 * sets it aside and loads the copy the last start kept (src/chain/local-node.ts `soundState`).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { rpc } from "../helpers/chain.ts";
import { startLocalNode } from "../../src/chain/local-node.ts";
import { createLogger } from "../../src/log.ts";

Deno.test("local node: a state file cut short is set aside and the last start's copy loaded", async () => {
  const stateDir = await Deno.makeTempDir({ prefix: "settlement-node-state-" });
  const lines: string[] = [];
  const log = createLogger({ level: "info", sink: (line) => void lines.push(line) });
  const start = () => startLocalNode({ name: "testnet", chainId: 31999, stateDir, log });
  const head = async (url: string) => BigInt(await rpc(url, "eth_blockNumber") as string);
  try {
    let node = await start();
    await rpc(node.rpcUrl, "anvil_mine", ["0x3"]);
    const kept = await head(node.rpcUrl);
    await node.stop(); // a clean stop writes the state
    node = await start(); // finds it whole and keeps a copy
    assert.equal(await head(node.rpcUrl), kept);
    await rpc(node.rpcUrl, "anvil_mine", ["0x2"]);
    await node.stop();
    const path = join(stateDir, "state.json");
    const whole = await Deno.readTextFile(path);
    await Deno.writeTextFile(path, whole.slice(0, Math.floor(whole.length / 2)));

    node = await start();
    assert.equal(await head(node.rpcUrl), kept, "the copy the last start kept");
    await node.stop();
    const names = [...Deno.readDirSync(stateDir)].map((e) => e.name);
    const aside = names.filter((n) => /^state\.corrupt-.*\.json$/.test(n));
    assert.equal(aside.length, 1, names.join(", "));
    assert.equal(
      (await Deno.readTextFile(join(stateDir, aside[0]))).length,
      Math.floor(whole.length / 2),
      "the cut file is kept for a look, not deleted",
    );
    assert.ok(lines.some((l) => /state file was cut short/.test(l)), lines.join("\n"));
  } finally {
    await Deno.remove(stateDir, { recursive: true }).catch(() => {});
  }
});
