/**
 * Local EVM nodes: one anvil per profile that has no RPC URL, on a free loopback port, with the
 * profile's chain id and its state under DATA_DIR/chains/<profile>/ kept across restarts.
 *
 * anvil writes `--state` only on a clean exit unless `--state-interval` is set, so we set it:
 * a killed node loses at most that many seconds of blocks. The node runs in its own session
 * (detached) so a Ctrl-C aimed at the service does not kill it before the graceful shutdown
 * has finished; we stop it last with SIGTERM, which makes it dump its state.
 *
 * anvil builds a new genesis block at every start, stamped with the current time, and loading
 * `--state` adds the dumped blocks beside it: each restart left one more "block 0" (another
 * hash) in the dump, and which one answered for block 0 after the next load depended on the
 * dump's hash-map order. So the genesis timestamp is pinned per state directory
 * (`genesis.json`): every start builds the same genesis block, the dump holds one block 0, and
 * the node's clock is moved forward to the wall clock before anything is mined.
 */
import { spawn } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Logger } from "../log.ts";
import { processAlive } from "../processes.ts";

export const ANVIL_BIN = fileURLToPath(
  new URL("../../node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil", import.meta.url),
);

/**
 * The local node's hardfork: Cancun, the newest our contracts and the fixtures' are compiled for
 * (src/chain/contracts/compile.ts `evmVersion`; the official ones for Shanghai and older). anvil
 * 1.7's default, Prague, also writes every block's hash into the EIP-2935 history contract, and
 * anvil 1.7 rebuilds the whole state trie for each block it mines, so on Prague each block costs
 * more than the one before (measured: 0.5 ms at the first block, 1.5 ms after 2,300; on Cancun
 * 0.3 and 0.7 ms). docs/decisions.md.
 */
export const LOCAL_HARDFORK = "cancun";

/** anvil's default mnemonic: its account 0 is the local operator (deployer, faucet, gas). */
export const ANVIL_MNEMONIC = "test test test test test test test test test test test junk";

export interface LocalNode {
  rpcUrl: string;
  port: number;
  pid: number;
  /** False when another live process of ours runs this node (an operator task beside the service). */
  owned: boolean;
  stop(): Promise<void>;
  /**
   * SIGKILL now, if it still runs (nothing otherwise: its pid may already be another process's;
   * the machine's pid space can wrap in minutes). A node of another process is not ours to kill.
   */
  kill(): void;
}

interface NodeFile {
  pid: number;
  port: number;
  owner: number;
}

export interface LocalNodeOptions {
  name: string;
  chainId: number;
  /** Directory for state.json and the pid file; omit for a throwaway node (tests). */
  stateDir?: string;
  stateIntervalSeconds?: number;
  log: Logger;
  /** Seconds between automatic blocks; default: mine on every transaction only. */
  blockTime?: number;
}

export async function startLocalNode(opts: LocalNodeOptions): Promise<LocalNode> {
  if (!opts.stateDir) return await spawnNode(opts);
  // Processes sharing a DATA_DIR take turns here, so a second one finds the first one's node.
  await Deno.mkdir(opts.stateDir, { recursive: true });
  const lock = await Deno.open(join(opts.stateDir, ".lock"), { create: true, write: true });
  try {
    await lock.lock(true);
    const log = opts.log.child({ component: "anvil", chain: opts.name });
    const running = await runningNode(opts.stateDir);
    if (running && await isLiveRuntime(running.owner)) {
      log.info("using the local chain node another process runs", { port: running.port });
      return {
        rpcUrl: `http://127.0.0.1:${running.port}`,
        port: running.port,
        pid: running.pid,
        owned: false,
        stop: () => Promise.resolve(),
        kill: () => {},
      };
    }
    if (running) await stopLeftover(running.pid, log);
    return await spawnNode(opts);
  } finally {
    await lock.unlock().catch(() => {});
    lock.close();
  }
}

/**
 * Stops the node a killed service left running in `stateDir`, without starting one: a bridge
 * source chain's, which a process starts only on first use. A later process may never use that
 * chain, and the leftover would run until the machine restarts. A node of a live process is left
 * alone. True when one was stopped.
 */
export async function stopLeftoverNode(stateDir: string, log: Logger): Promise<boolean> {
  let lock: Deno.FsFile;
  try {
    // No lock file: no node was ever started here.
    lock = await Deno.open(join(stateDir, ".lock"), { write: true });
  } catch {
    return false;
  }
  try {
    await lock.lock(true);
    const running = await runningNode(stateDir);
    // This process's own node (another Chain of it started it) is no leftover either.
    if (!running || running.owner === Deno.pid || await isLiveRuntime(running.owner)) {
      return false;
    }
    await stopLeftover(running.pid, log.child({ component: "anvil" }));
    await Deno.remove(join(stateDir, NODE_FILE)).catch(() => {});
    return true;
  } finally {
    await lock.unlock().catch(() => {});
    lock.close();
  }
}

async function spawnNode(opts: LocalNodeOptions): Promise<LocalNode> {
  const log = opts.log.child({ component: "anvil", chain: opts.name });
  // Port 0: anvil binds a free port itself and prints it. Choosing one here and passing it raced
  // with other processes starting nodes at the same moment (the port taken in between, or, worse,
  // answered by another process's node).
  const args = [
    "--host",
    "127.0.0.1",
    "--port",
    "0",
    "--chain-id",
    String(opts.chainId),
    "--mnemonic",
    ANVIL_MNEMONIC,
    "--hardfork",
    LOCAL_HARDFORK,
  ];
  if (opts.blockTime) args.push("--block-time", String(opts.blockTime));
  if (opts.stateDir) {
    await soundState(opts.stateDir, log);
    args.push(
      "--state",
      join(opts.stateDir, STATE_FILE),
      "--state-interval",
      String(opts.stateIntervalSeconds ?? 1),
      "--timestamp",
      String(await genesisTimestamp(opts.stateDir)),
    );
  }
  const child = spawn(ANVIL_BIN, args, { detached: true, stdio: ["ignore", "pipe", "pipe"] });
  let stderr = "";
  child.stderr?.on("data", (d: Uint8Array) => {
    stderr = (stderr + new TextDecoder().decode(d)).slice(-4000);
  });
  // stdout carries the banner with the bound address, then one line per request: read the port,
  // then keep draining (a full pipe would stall the node).
  let port = 0;
  let banner = "";
  child.stdout?.on("data", (d: Uint8Array) => {
    if (port) return;
    banner = (banner + new TextDecoder().decode(d)).slice(-8000);
    const m = banner.match(/Listening on 127\.0\.0\.1:(\d+)/);
    if (m) port = Number(m[1]);
  });
  let exited = false;
  const exit = new Promise<void>((resolve) =>
    child.on("exit", () => {
      exited = true;
      resolve();
    })
  );
  let rpcUrl = "";
  const deadline = Date.now() + 30_000;
  while (true) {
    if (exited) throw new Error(`anvil for ${opts.name} exited at start: ${stderr.trim()}`);
    if (port && await answers(rpcUrl ||= `http://127.0.0.1:${port}`)) break;
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`anvil for ${opts.name} did not answer within 30 s: ${stderr.trim()}`);
    }
    await new Promise((r) => setTimeout(r, 25));
  }
  const pid = child.pid!;
  if (opts.stateDir) {
    try {
      await catchUpClock(rpcUrl);
    } catch (e) {
      child.kill("SIGKILL");
      throw e;
    }
    const file: NodeFile = { pid, port, owner: Deno.pid };
    await Deno.writeTextFile(join(opts.stateDir, NODE_FILE), JSON.stringify(file) + "\n");
  }
  log.info("local chain node ready", { rpcUrl, chainId: opts.chainId });
  let stopping: Promise<void> | undefined;
  return {
    rpcUrl,
    port,
    pid,
    owned: true,
    stop: () => {
      stopping ??= (async () => {
        if (!exited) {
          child.kill("SIGTERM"); // anvil dumps --state on a clean exit
          const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
          await exit;
          clearTimeout(timer);
        }
        if (opts.stateDir) await Deno.remove(join(opts.stateDir, NODE_FILE)).catch(() => {});
        log.info("local chain node stopped");
      })();
      return stopping;
    },
    kill: () => {
      // Once its exit was seen, the child's pid is free for any process: never signal it then.
      if (exited) return;
      try {
        child.kill("SIGKILL");
      } catch { /* gone meanwhile */ }
    },
  };
}

const NODE_FILE = "node.json";
const GENESIS_FILE = "genesis.json";
const STATE_FILE = "state.json";
/** The last state file a start found whole. */
const GOOD_STATE_FILE = "state.good.json";

/**
 * anvil rewrites `state.json` in place every `--state-interval`: a node killed mid-write (kill
 * -9, a power cut) leaves it cut short, and every later start failed ("failed to parse json
 * file … EOF") until the operator deleted it and accepted a reset, losing the chain. Before a
 * node loads it, the file is read: whole, it is kept as `state.good.json` (written beside, then
 * renamed); cut short, it is set aside as `state.corrupt-<time>.json` and the copy the last start
 * kept takes its place. The blocks mined since that start are then a lost tail, which the start
 * replays from the transactions the database recorded (lost-tail.ts). With no copy (the very
 * first start's file), the chain starts empty and the start's reset check decides.
 */
export async function soundState(stateDir: string, log: Logger): Promise<void> {
  const path = join(stateDir, STATE_FILE);
  const good = join(stateDir, GOOD_STATE_FILE);
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return;
    throw e;
  }
  try {
    JSON.parse(text);
  } catch (error) {
    const aside = join(
      stateDir,
      `state.corrupt-${new Date().toISOString().replace(/:/g, "-")}.json`,
    );
    await Deno.rename(path, aside);
    const kept = await Deno.stat(good).then(() => true, () => false);
    if (kept) await Deno.copyFile(good, path);
    log.error(
      "the local chain's state file was cut short (its node was killed while writing it): " +
        (kept
          ? "starting from the copy the last start kept; what was mined since is replayed"
          : "no earlier copy; the chain starts empty"),
      { setAside: aside, bytes: text.length, error: String(error) },
    );
    return;
  }
  const tmp = `${good}.tmp`;
  await Deno.writeTextFile(tmp, text);
  await Deno.rename(tmp, good);
}

/**
 * The genesis timestamp of the chain kept in `stateDir`: chosen once, when the directory has no
 * record of it, and passed to every later start so the genesis block is the same every time.
 */
export async function genesisTimestamp(stateDir: string): Promise<number> {
  const path = join(stateDir, GENESIS_FILE);
  try {
    const saved = JSON.parse(await Deno.readTextFile(path));
    if (Number.isSafeInteger(saved.timestamp) && saved.timestamp > 0) return saved.timestamp;
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound) && !(e instanceof SyntaxError)) throw e;
  }
  const timestamp = Math.floor(Date.now() / 1000);
  const tmp = `${path}.${Deno.pid}.tmp`;
  await Deno.writeTextFile(tmp, JSON.stringify({ timestamp }) + "\n");
  await Deno.rename(tmp, path);
  return timestamp;
}

/**
 * With a pinned genesis timestamp anvil's clock starts at that time; move it to the wall clock
 * (never backwards: a test may have moved chain time ahead) before the first block is mined.
 */
async function catchUpClock(rpcUrl: string): Promise<void> {
  const latest = await call(rpcUrl, "eth_getBlockByNumber", ["latest", false]) as {
    timestamp: string;
  };
  const now = Math.floor(Date.now() / 1000);
  await call(rpcUrl, "evm_setTime", [Math.max(now, Number(BigInt(latest.timestamp)))]);
}

async function call(rpcUrl: string, method: string, params: unknown[]): Promise<unknown> {
  const res = await fetch(rpcUrl, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  const body = await res.json();
  if (body.error) throw new Error(`${method}: ${body.error.message}`);
  return body.result;
}

/** The node recorded in the state directory, if its process is still an anvil. */
async function runningNode(stateDir: string): Promise<NodeFile | null> {
  let file: NodeFile;
  try {
    file = JSON.parse(await Deno.readTextFile(join(stateDir, NODE_FILE)));
  } catch {
    return null;
  }
  const cmd = await Deno.readTextFile(`/proc/${file.pid}/cmdline`).catch(() => "");
  return cmd.includes("anvil") && cmd.includes(stateDir) ? file : null;
}

async function isLiveRuntime(pid: number): Promise<boolean> {
  if (pid === Deno.pid || !(await processAlive(pid))) return false;
  const cmd = await Deno.readTextFile(`/proc/${pid}/cmdline`).catch(() => "");
  return /deno|node/.test(cmd);
}

/**
 * A node left running by a killed service is stopped (it saves its state) before we start. It
 * has stopped once it has exited: its killed parent cannot reap it, so it stays a zombie until
 * PID 1 does (about a second on the CI machine), and is not waited for.
 */
async function stopLeftover(pid: number, log: Logger): Promise<void> {
  log.warn("stopping a local chain node left running by a previous run", { pid });
  try {
    Deno.kill(pid, "SIGTERM");
  } catch {
    return;
  }
  for (let i = 0; i < 1000; i++) {
    if (!(await processAlive(pid))) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  // Still an anvil: the pid was not freed and taken by another process meanwhile.
  const cmd = await Deno.readTextFile(`/proc/${pid}/cmdline`).catch(() => "");
  if (cmd.includes("anvil")) Deno.kill(pid, "SIGKILL");
}

async function answers(rpcUrl: string): Promise<boolean> {
  try {
    const res = await fetch(rpcUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] }),
    });
    const body = await res.json();
    return typeof body.result === "string";
  } catch {
    return false;
  }
}
