/**
 * The default setup keeps its local chain across restarts: real service processes on one
 * DATA_DIR, stopped with SIGTERM and killed with SIGKILL in turn, with a faucet mint and a settled
 * payment between restarts. Every balance and payment must survive and nothing be redeployed.
 * Then a real reset (the chain's state deleted) is refused while money is recorded on it, until
 * the operator accepts it.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { createPublicClient, defineChain, erc20Abi, http } from "viem";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";
import { freePort, type TestService } from "../helpers/service.ts";
import { waitFor } from "../helpers/poll.ts";
import { listensOn } from "../helpers/processes.ts";
import { api, createMerchant } from "../helpers/accounts.ts";
import { payerAt } from "../helpers/payer.ts";
import { ANVIL_KEYS } from "../helpers/anvil.ts";
import { planFor } from "../../src/chain/deploy.ts";
import { SETTLEMENT_DEFS } from "../../src/chain/profiles.ts";

const RESTARTS = 20;
/** Our contracts on the two local chains (the CCTP pair on testnet only). */
const DEPLOYED = planFor({ profile: SETTLEMENT_DEFS.testnet, attester: true }).length +
  planFor({ profile: SETTLEMENT_DEFS.production, attester: true }).length;
const PRODUCTION_CHAIN = defineChain({
  id: 5042,
  name: "Settle",
  nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
  rpcUrls: { default: { http: [] } },
});

function env(db: TestDatabase, dataDir: string, port: number): Record<string, string> {
  return {
    DATABASE_URL: db.url,
    PORT: String(port),
    HOST: "127.0.0.1",
    APP_ENV: "test",
    JWT_SECRET: "s".repeat(40),
    WALLET_MASTER_KEY: "33".repeat(32),
    DATA_DIR: dataDir,
    CHAIN_POLL_INTERVAL_MS: "50",
    LOG_LEVEL: "info",
    // The test polls verify for 20 settlements within a minute; limits are tested elsewhere.
    RATE_LIMITS: "off",
  };
}

/** A service process whose output is collected as it comes (a full pipe would stall it). */
function spawnService(vars: Record<string, string>) {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", "src/main.ts"],
    env: vars,
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let out = "";
  const drain = (s: ReadableStream<Uint8Array>) =>
    s.pipeThrough(new TextDecoderStream()).pipeTo(
      new WritableStream({ write: (t) => void (out += t) }),
    );
  const drained = Promise.all([drain(child.stdout), drain(child.stderr)]);
  return {
    child,
    output: async () => {
      await child.status;
      await drained;
      return out;
    },
    peek: () => out,
  };
}

async function ready(port: number, proc: ReturnType<typeof spawnService>) {
  await waitFor(async () => {
    const st = await Promise.race([proc.child.status, Promise.resolve(null)]);
    if (st) throw new Error(`service exited (${st.code}): ${proc.peek()}`);
    const r = await fetch(`http://127.0.0.1:${port}/readyz`);
    await r.body?.cancel();
    return r.status === 200 && listensOn(proc.child.pid, port);
  }, { timeoutMs: 60_000, intervalMs: 50, what: `readyz on ${port}` });
}

async function faucet(vars: Record<string, string>, to: string, amount: string) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", "src/cli/faucet.ts", to, amount, "--network", "production"],
    env: vars,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  assert.equal(out.code, 0, text);
  return text;
}

async function nodeUrl(dataDir: string): Promise<string> {
  const file = JSON.parse(await Deno.readTextFile(join(dataDir, "chains/production/node.json")));
  return `http://127.0.0.1:${file.port}`;
}

async function balanceOf(rpcUrl: string, token: `0x${string}`, who: string): Promise<bigint> {
  const client = createPublicClient({ chain: PRODUCTION_CHAIN, transport: http(rpcUrl) });
  return await client.readContract({
    address: token,
    abi: erc20Abi,
    functionName: "balanceOf",
    args: [who as `0x${string}`],
  });
}

type ContractRow = { chainId: number; name: string; address: string };

async function contractRows(db: TestDatabase): Promise<ContractRow[]> {
  const rows = await db.sql<ContractRow[]>`
    select chain_id, name, address from chain_contracts order by chain_id, name`;
  return rows.map((r) => ({ ...r }));
}

Deno.test({
  name: "chain restarts: 20 restarts (SIGTERM and SIGKILL in turn) keep every balance and payment",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const db = await createTestDatabase({ migrate: false });
    const dataDir = Deno.makeTempDirSync({ prefix: "settlement-restart-" });
    const payerKey = ANVIL_KEYS[3];
    let contracts: ContractRow[] = [];
    let merchant: Awaited<ReturnType<typeof createMerchant>> | undefined;
    const references: string[] = [];
    const logs: string[] = [];
    let proc: ReturnType<typeof spawnService> | undefined;
    try {
      for (let i = 0; i <= RESTARTS; i++) {
        const port = freePort();
        const vars = env(db, dataDir, port);
        proc = spawnService(vars);
        await ready(port, proc);
        const baseUrl = `http://127.0.0.1:${port}`;
        const svc = { baseUrl, db } as unknown as TestService;
        const call = api(svc);
        const rpcUrl = await nodeUrl(dataDir);

        if (i === 0) {
          contracts = await contractRows(db);
          assert.equal(contracts.length, DEPLOYED, "every contract on each of two chains");
          merchant = await createMerchant(svc);
        } else {
          assert.deepEqual(await contractRows(db), contracts, `contracts moved at start ${i}`);
        }
        const token = contracts.find((c) => c.chainId === 5042 && c.name === "TestUSDC")!
          .address as `0x${string}`;
        // Everything paid before this start is still paid, on the chain and in the records.
        for (const reference of references) {
          const v = await call("GET", `/api/payments/verify/${reference}`, {
            headers: { "x-api-key": merchant!.apiKey },
          });
          assert.equal(v.status, 200, v.text);
          assert.equal((v.json.data as { status: string }).status, "SUCCESS", reference);
        }
        const p = payerAt({ baseUrl, viemChain: PRODUCTION_CHAIN, rpcUrl }, payerKey);
        assert.equal(await balanceOf(rpcUrl, token, p.address), BigInt(i) * 4_000_000n);
        assert.equal(
          await balanceOf(rpcUrl, token, merchant!.walletAddress!),
          BigInt(i) * 1_000_000n,
        );
        if (i === RESTARTS) break;

        // The reproduction: a faucet mint, then a payment settled, then a restart.
        await faucet(vars, p.address, "5");
        const init = await call("POST", "/api/payments/initialize", {
          headers: { "x-api-key": merchant!.apiKey },
          body: { amount: "1", description: `restart ${i}` },
        });
        assert.equal(init.status, 201, init.text);
        const reference = init.json.reference as string;
        const sent = await p.pay(reference);
        assert.equal((await p.receipt(sent.hash)).status, "success");
        await waitFor(async () => {
          const v = await call("GET", `/api/payments/verify/${reference}`, {
            headers: { "x-api-key": merchant!.apiKey },
          });
          return (v.json.data as { status: string } | undefined)?.status === "SUCCESS";
        }, { timeoutMs: 30_000, what: `payment ${reference} settled` });
        references.push(reference);

        proc.child.kill(i % 2 === 0 ? "SIGTERM" : "SIGKILL");
        logs.push(await proc.output());
        proc = undefined;
      }
      const deploys = await db.sql`
        select 1 from chain_transactions where intent_key like 'deploy:%'`;
      assert.equal(deploys.length, DEPLOYED, "contracts were deployed once");
      const all = logs.join("\n");
      assert.doesNotMatch(all, /chain was reset/);
      assert.equal(all.match(/"contract deployed"/g)?.length ?? 0, DEPLOYED);
      const resets = await db.sql`select 1 from chain_resets`;
      assert.equal(resets.length, 0);
      // One genesis block in the saved state, however many restarts.
      const state = JSON.parse(
        await Deno.readTextFile(join(dataDir, "chains/production/state.json")),
      );
      const genesis = state.blocks.filter((b: { header: { number: string } }) =>
        BigInt(b.header.number) === 0n
      );
      assert.equal(genesis.length, 1);
    } finally {
      if (proc) {
        proc.child.kill("SIGTERM");
        await proc.output();
      }
      await stopLeftoverNodes(dataDir);
      await db.drop();
      await Deno.remove(dataDir, { recursive: true }).catch(() => {});
    }
  },
});

Deno.test({
  name: "chain restarts: a real reset with money recorded is refused until the operator accepts it",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const db = await createTestDatabase({ migrate: false });
    const dataDir = Deno.makeTempDirSync({ prefix: "settlement-reset-" });
    try {
      let port = freePort();
      let proc = spawnService(env(db, dataDir, port));
      await ready(port, proc);
      const svc = { baseUrl: `http://127.0.0.1:${port}`, db } as unknown as TestService;
      const merchant = await createMerchant(svc);
      // Money on the chain: test USDC for its managed wallet. (A new managed wallet no longer
      // gets gas at creation, issue 12, so signing up alone records no transaction.)
      const mint = await new Deno.Command(Deno.execPath(), {
        args: [
          "run",
          "--allow-all",
          "src/cli/faucet.ts",
          merchant.walletAddress!,
          "1",
          "--network",
          "production",
        ],
        env: env(db, dataDir, freePort()),
        stdout: "piped",
        stderr: "piped",
      }).output();
      assert.equal(mint.code, 0, new TextDecoder().decode(mint.stderr));
      const before = await contractRows(db);
      proc.child.kill("SIGTERM");
      await proc.output();

      // The chain's state is lost (as when DATA_DIR/chains is deleted).
      await Deno.remove(join(dataDir, "chains/production"), { recursive: true });
      port = freePort();
      proc = spawnService(env(db, dataDir, port));
      const status = await proc.child.status;
      const out = await proc.output();
      assert.equal(status.code, 1, out);
      assert.match(out, /chain production \(id 5042\) was reset/);
      assert.match(out, /deno task chain:accept-reset production/);
      assert.deepEqual(await contractRows(db), before, "nothing was forgotten on a refusal");

      const accept = await new Deno.Command(Deno.execPath(), {
        args: ["run", "--allow-all", "src/cli/chain-accept-reset.ts", "production"],
        env: env(db, dataDir, freePort()),
        stdout: "piped",
        stderr: "piped",
      }).output();
      assert.equal(accept.code, 0, new TextDecoder().decode(accept.stderr));
      assert.match(new TextDecoder().decode(accept.stdout), /accepted for the next start/);

      port = freePort();
      proc = spawnService(env(db, dataDir, port));
      await ready(port, proc);
      // Deployed anew (at the same addresses: the operator's nonces start again at 0).
      const after = await contractRows(db);
      assert.deepEqual(after, before);
      const client = createPublicClient({
        chain: PRODUCTION_CHAIN,
        transport: http(await nodeUrl(dataDir)),
      });
      for (const c of after.filter((r) => r.chainId === 5042)) {
        const code = await client.getCode({ address: c.address as `0x${string}` });
        assert.ok(code && code !== "0x", `${c.name} has code on the new chain`);
      }
      const [reset] = await db.sql<{ archivedTransactions: number }[]>`
        select archived_transactions from chain_resets where chain_id = 5042`;
      assert.ok(reset.archivedTransactions >= 1);
      const [archived] = await db.sql<{ n: number }[]>`
        select count(*)::int as n from chain_transactions_archive where chain_id = 5042`;
      assert.ok(archived.n >= 1);
      // The service works on the new chain: a payment can be created against it.
      const init = await api({ ...svc, baseUrl: `http://127.0.0.1:${port}` } as TestService)(
        "POST",
        "/api/payments/initialize",
        { headers: { "x-api-key": merchant.apiKey }, body: { amount: "1" } },
      );
      assert.equal(init.status, 201, init.text);
      proc.child.kill("SIGTERM");
      const out2 = await proc.output();
      assert.match(out2, /chain was reset: our contracts are gone/);

      // The acceptance was used once: a further start changes nothing.
      port = freePort();
      proc = spawnService(env(db, dataDir, port));
      await ready(port, proc);
      assert.deepEqual(await contractRows(db), after);
      proc.child.kill("SIGTERM");
      await proc.output();
    } finally {
      await stopLeftoverNodes(dataDir);
      await db.drop();
      await Deno.remove(dataDir, { recursive: true }).catch(() => {});
    }
  },
});

/** A node whose service was killed keeps running; stop it so the test leaves nothing behind. */
async function stopLeftoverNodes(dataDir: string) {
  for (const profile of ["production", "testnet"]) {
    try {
      const file = JSON.parse(
        await Deno.readTextFile(join(dataDir, "chains", profile, "node.json")),
      );
      // Only if that pid is still this directory's anvil: the machine's pids wrap in minutes.
      const cmd = await Deno.readTextFile(`/proc/${file.pid}/cmdline`);
      if (cmd.includes("anvil") && cmd.includes(dataDir)) Deno.kill(file.pid, "SIGKILL");
    } catch { /* none left */ }
  }
}
