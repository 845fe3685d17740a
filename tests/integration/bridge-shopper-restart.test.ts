/**
 * A shopper's one-signature cross-chain checkout survives a crash at the worst moment: the worker
 * process that relayed the authorization is SIGKILLed after the burn was mined and before it was
 * recorded. The next worker finds the relay by its intent key (no second transaction; the
 * authorization could not be spent twice anyway), records the burn and finishes: minted once,
 * the payment settled once.
 */
import assert from "node:assert/strict";
import { generatePrivateKey } from "viem/accounts";
import { LOCAL_ATTESTER_KEY, startTestService } from "../helpers/service.ts";
import { api, createMerchant } from "../helpers/accounts.ts";
import { waitFor } from "../helpers/poll.ts";
import { ANVIL_KEYS } from "../helpers/anvil.ts";
import { shopper } from "../helpers/shopper.ts";
import { modules } from "../../src/modules/index.ts";

const SOURCE = "Base_Sepolia";

Deno.test("shopper's relayed burn: SIGKILL between the burn and its record; settled once", async () => {
  // Everything runs here except the bridge's steps: those run in the worker processes below.
  const svc = await startTestService({
    env: { RATE_LIMITS: "off" },
    modules: modules.map((m) => m.name === "bridge" ? { ...m, jobs: [], onStart: undefined } : m),
  });
  const call = api(svc);
  const chain = svc.deps.chain;
  const workers: Deno.ChildProcess[] = [];
  try {
    const base = await chain.ensure(SOURCE);
    const m = await createMerchant(svc, { businessName: "Restart Café" });
    const key = ((await call("POST", "/api/keys", {
      cookie: m.cookie,
      body: { type: "secret", environment: "test" },
    })).json.key as { key: string }).key;
    const init = await call("POST", "/api/payments/initialize", {
      headers: { "x-api-key": key },
      body: { amount: "6", webhookUrl: "http://127.0.0.1:9/hook" },
    });
    assert.equal(init.status, 201, init.text);
    const payment = init.json.reference as string;
    const [{ payTo }] = await svc.db.sql`select pay_to from payments where reference = ${payment}`;
    const alice = shopper(
      { baseUrl: svc.baseUrl, sourceChain: SOURCE, rpcUrl: base.rpcUrl, chainId: 84532 },
      generatePrivateKey(),
    );
    await chain.mintUsdc({ profile: SOURCE, to: alice.address, amount: 10_000_000n });
    const worker = (extra: Record<string, string> = {}) => {
      const child = new Deno.Command(Deno.execPath(), {
        args: ["run", "--allow-all", "tests/fixtures/bridge-worker.ts"],
        env: {
          APP_ENV: "test",
          DATABASE_URL: svc.db.url,
          DATA_DIR: Deno.makeTempDirSync({ prefix: "bridge-shopper-worker-" }),
          JWT_SECRET: "test-jwt-secret-0123456789abcdef0123456789",
          WALLET_MASTER_KEY: "11".repeat(32),
          BASE_URL: svc.baseUrl,
          LOG_LEVEL: "error",
          CHAINS: "testnet",
          CHAIN_POLL_INTERVAL_MS: "50",
          TESTNET_RPC_URL: chain.runtime("testnet").rpcUrl,
          TESTNET_OPERATOR_KEY: ANVIL_KEYS[0],
          TESTNET_CONFIRMATIONS: "0",
          BASE_SEPOLIA_RPC_URL: base.rpcUrl,
          BASE_SEPOLIA_OPERATOR_KEY: ANVIL_KEYS[0],
          BASE_SEPOLIA_CONFIRMATIONS: "0",
          CCTP_ATTESTER_KEY: LOCAL_ATTESTER_KEY,
          ...extra,
        },
        stdout: "piped",
        stderr: "piped",
      }).spawn();
      workers.push(child);
      let out = "";
      for (const s of [child.stdout, child.stderr]) {
        s.pipeThrough(new TextDecoderStream()).pipeTo(
          new WritableStream({ write: (x) => void (out += x) }),
        ).catch(() => {});
      }
      return { child, output: () => out };
    };
    const a = worker({ BRIDGE_HOLD_RELAY: "1" });
    // The worker creates the bridge's queues; then the page's relay request enqueues the burn.
    await waitFor(() => a.output().includes("ready"), {
      timeoutMs: 30_000,
      what: `the worker (output: ${a.output()})`,
    });
    const { body } = await alice.authorize(payment);
    const r = await alice.relay(payment, body);
    assert.equal(r.status, 202, JSON.stringify(r.json));
    const reference = r.json.reference as string;
    const status = async () =>
      (await call("GET", `/api/cctp/transfer/status?reference=${reference}`)).json;
    await waitFor(() => a.output().includes("holding relay"), {
      timeoutMs: 30_000,
      what: `the relayed burn (worker output: ${a.output()})`,
    });
    a.child.kill("SIGKILL");
    await a.child.status;
    assert.equal(await chain.usdcBalance(SOURCE, alice.address), 4_000_000n, "burned");
    assert.equal((await status()).status, "pending", "not recorded: the process died first");

    const b = worker();
    const done = await waitFor(async () => {
      const s = await status();
      if (s.status === "failed") throw new Error(`failed: ${s.error}`);
      return s.status === "minted" ? s : null;
    }, { timeoutMs: 30_000, what: `the mint (worker output: ${b.output()})` });
    b.child.kill("SIGTERM");
    await b.child.status;

    assert.equal(done.mintedAmount, "6.000000");
    assert.equal(await chain.usdcBalance(SOURCE, alice.address), 4_000_000n, "burned once");
    assert.equal(await chain.usdcBalance("testnet", payTo), 6_000_000n, "minted once");
    const intents = await svc.db.sql`
      select intent_key, count(*)::int as n from chain_transactions
      where intent_key like ${`bridge:${reference}%`} group by intent_key order by intent_key`;
    assert.deepEqual(intents.map((i) => [i.intentKey, i.n]), [
      [`bridge:${reference}:burn`, 1],
      [`bridge:${reference}:mint`, 1],
    ]);
    const [paid] = await svc.db.sql`select status from payments where reference = ${payment}`;
    assert.equal(paid.status, "SUCCESS");
    const settled = await svc.db.sql`
      select 1 from webhook_deliveries where reference = ${payment} and event = 'payment.settled'`;
    assert.equal(settled.length, 1);
  } finally {
    for (const w of workers) {
      try {
        w.kill("SIGKILL");
      } catch { /* already gone */ }
      await w.status;
    }
    await svc.close();
  }
});
