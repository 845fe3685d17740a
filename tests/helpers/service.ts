/** A whole service in-process on an isolated database, a free port and a manual clock. */
import { type Config, loadConfig } from "../../src/config.ts";
import { ManualClock } from "../../src/clock.ts";
import { type Logger, silentLogger } from "../../src/log.ts";
import { type Service, startService } from "../../src/service.ts";
import type { AppModule } from "../../src/modules/index.ts";
import { createTestDatabase, type TestDatabase } from "./db.ts";
import { ANVIL_KEYS } from "./anvil.ts";
import { toHex } from "viem";
import { mnemonicToAccount } from "viem/accounts";
import { ANVIL_MNEMONIC } from "../../src/chain/local-node.ts";

/** The private key of the attester local nodes trust (anvil's account 9). */
export const LOCAL_ATTESTER_KEY = toHex(
  mnemonicToAccount(ANVIL_MNEMONIC, { addressIndex: 9 }).getHdKey().privateKey!,
);

export interface TestService extends Service {
  db: TestDatabase;
  clock: ManualClock;
  baseUrl: string;
  /** Stops the service and drops its database. */
  close(): Promise<void>;
}

/**
 * Brings the service's manual clock up to the chains' time and the wall clock's. It stands still
 * while the chains' blocks keep time, so a deadline counted from it and checked on chain (a job's
 * or an escrow's expiry) falls behind the chain after a slow machine's minutes. Call before
 * making such a deadline; tests that move time on move both (evm_increaseTime and `advance`).
 */
export async function catchUpClock(svc: TestService): Promise<void> {
  let ms = Math.max(svc.clock.now().getTime(), Date.now());
  for (const p of ["production", "testnet"] as const) {
    if (!svc.deps.chain.has(p)) continue;
    const head = await svc.deps.chain.runtime(p).client.getBlock();
    ms = Math.max(ms, Number(head.timestamp) * 1000);
  }
  svc.clock.set(new Date(ms));
}

/**
 * A port for a server a test is about to start. Drawn at random below Linux's ephemeral range
 * (32768–60999): a port the kernel hands out for `port: 0` is also where it puts the client end
 * of outgoing connections, so one probed there and closed could be taken by any fetch before the
 * server binds it. Here only another test's draw can collide, and callers retry on AddrInUse.
 */
export function freePort(): number {
  for (let i = 0; i < 100; i++) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    try {
      Deno.listen({ hostname: "127.0.0.1", port }).close();
      return port;
    } catch (e) {
      if (!(e instanceof Deno.errors.AddrInUse)) throw e;
    }
  }
  throw new Error("no free port between 20000 and 32000");
}

/** The DATA_DIRs testConfig made in this process, removed when it exits normally. */
const madeDataDirs = new Set<string>();
globalThis.addEventListener("unload", () => {
  for (const dir of madeDataDirs) {
    try {
      Deno.removeSync(dir, { recursive: true });
    } catch { /* gone already */ }
  }
});

/**
 * A test service's configuration. Its DATA_DIR, unless the caller names one, is a new temporary
 * directory, removed when this process exits normally (startTestService removes it at close; a
 * process killed with SIGKILL leaves it to whoever gave it its DATA_DIR: startCrashWorker).
 */
export function testConfig(overrides: Record<string, string> = {}): Config {
  const port = freePort();
  let dataDir = overrides.DATA_DIR;
  if (!dataDir) {
    dataDir = Deno.makeTempDirSync({ prefix: "settlement-test-" });
    madeDataDirs.add(dataDir);
  }
  return loadConfig({
    APP_ENV: "test",
    PORT: String(port),
    HOST: "127.0.0.1",
    BASE_URL: `http://127.0.0.1:${port}`,
    DATA_DIR: dataDir,
    JWT_SECRET: "test-jwt-secret-0123456789abcdef0123456789",
    WALLET_MASTER_KEY: "11".repeat(32),
    LOG_LEVEL: "error",
    CHAIN_POLL_INTERVAL_MS: "50",
    CHAIN_RECEIPT_TIMEOUT_MS: "20000",
    ...overrides,
  });
}

export async function startTestService(
  opts: {
    modules?: AppModule[];
    env?: Record<string, string>;
    log?: Logger;
    db?: TestDatabase;
    workers?: boolean;
    /** Schedule the jobs' crons (default true): off for a test that runs the rounds itself. */
    crons?: boolean;
    /** Listen for HTTP (default true). */
    serve?: boolean;
    /** A second process of the same deployment: same database, same chains. */
    sameDeploymentAs?: TestService;
    /**
     * Local nodes publish themselves under DATA_DIR like `deno task start`'s, so an operator
     * command (`deno task faucet`) given the same DATA_DIR shares them.
     */
    persistChains?: boolean;
  } = {},
): Promise<TestService> {
  const peer = opts.sameDeploymentAs;
  let db = opts.db ?? peer?.db ?? await createTestDatabase();
  const shared: Record<string, string> = {};
  // Bridge source chains the peer started are shared too (as remote RPCs of the same nodes).
  const peerChains = peer
    ? [...peer.deps.chain.profiles(), ...peer.deps.chain.startedSources()]
    : [];
  for (const p of peerChains) {
    const rt = peer!.deps.chain.runtime(p);
    shared[`${rt.profile.envPrefix}_RPC_URL`] = rt.rpcUrl;
    shared[`${rt.profile.envPrefix}_OPERATOR_KEY`] = ANVIL_KEYS[0];
    shared[`${rt.profile.envPrefix}_CONFIRMATIONS`] = "0";
  }
  // The local nodes' attester (anvil account 9): a shared node is remote to the second process.
  if (peer) shared.CCTP_ATTESTER_KEY = LOCAL_ATTESTER_KEY;
  // Processes of one deployment read one clock, as real ones read the system clock.
  const clock = peer?.clock ?? new ManualClock();
  let config: Config;
  let service: Service;
  for (let attempt = 1;; attempt++) {
    config = testConfig({ DATABASE_URL: db.url, ...shared, ...opts.env });
    try {
      service = await startService(config, {
        log: opts.log ?? silentLogger,
        clock,
        modules: opts.modules,
        workers: opts.workers,
        crons: opts.crons,
        serve: opts.serve,
        persistChains: opts.persistChains ?? false,
      });
      break;
    } catch (e) {
      removeOwnDataDir(config);
      // freePort() names a port another process may bind before we do (parallel test files):
      // start again on another one rather than fail by luck.
      if (!(e instanceof Deno.errors.AddrInUse) || opts.env?.PORT || attempt >= 5) throw e;
      // The failed start already deployed to its own fresh nodes and recorded that (and its first
      // transactions) in the database; the next start gets new nodes, so it needs a new database
      // too, or it would rightly refuse a chain that looks reset.
      if (!opts.db && !peer) {
        await db.drop();
        db = await createTestDatabase();
      }
    }
  }
  return {
    ...service,
    db,
    clock,
    baseUrl: config.BASE_URL,
    close: async () => {
      await service.stop("test done");
      if (!opts.db && !peer) await db.drop();
      removeOwnDataDir(config);
    },
  };

  /** The DATA_DIR testConfig made for this service (not one the test named), with what is in it. */
  function removeOwnDataDir(c: Config) {
    if (opts.env?.DATA_DIR) return;
    try {
      Deno.removeSync(c.DATA_DIR, { recursive: true });
    } catch { /* gone already */ }
  }
}
