/**
 * Restart-proof bridging: the transfer is driven by worker processes that are SIGKILLed after
 * the burn (while the attestation is still pending) and again after the attestation (with the
 * mint step about to send). The third worker finishes it: minted, with one burn and one mint.
 */
import assert from "node:assert/strict";
import { LOCAL_ATTESTER_KEY, startTestService } from "../helpers/service.ts";
import { api, cookieFrom } from "../helpers/accounts.ts";
import { waitFor } from "../helpers/poll.ts";
import { rpc } from "../helpers/chain.ts";
import { ANVIL_KEYS } from "../helpers/anvil.ts";
import {
  MessageTransmitterV2,
  TokenMessengerV2,
} from "../../src/chain/contracts/artifacts/index.ts";

const SOURCE = "Base_Sepolia";
const RECIPIENT = "0x000000000000000000000000000000000000bEEF";

Deno.test("bridge: SIGKILL after the burn and after the attestation; minted once", async () => {
  const svc = await startTestService({ workers: false, env: { RATE_LIMITS: "off" } });
  const call = api(svc);
  const chain = svc.deps.chain;
  const workers: Deno.ChildProcess[] = [];
  try {
    const session = await call("POST", "/api/consumer/session", { body: {} });
    const cookie = cookieFrom(session.headers, "consumer_token")!;
    const wallet = (session.json.account as { walletAddress: `0x${string}` }).walletAddress;
    await chain.ensure(SOURCE);
    await chain.faucet(SOURCE, wallet, 20_000_000n);

    const worker = (extra: Record<string, string> = {}) => {
      const child = new Deno.Command(Deno.execPath(), {
        args: ["run", "--allow-all", "tests/fixtures/bridge-worker.ts"],
        env: {
          APP_ENV: "test",
          DATABASE_URL: svc.db.url,
          DATA_DIR: Deno.makeTempDirSync({ prefix: "bridge-worker-" }),
          JWT_SECRET: "test-jwt-secret-0123456789abcdef0123456789",
          WALLET_MASTER_KEY: "11".repeat(32),
          BASE_URL: svc.baseUrl,
          LOG_LEVEL: "error",
          CHAINS: "testnet",
          CHAIN_POLL_INTERVAL_MS: "50",
          TESTNET_RPC_URL: chain.runtime("testnet").rpcUrl,
          TESTNET_OPERATOR_KEY: ANVIL_KEYS[0],
          TESTNET_CONFIRMATIONS: "0",
          BASE_SEPOLIA_RPC_URL: chain.runtime(SOURCE).rpcUrl,
          BASE_SEPOLIA_OPERATOR_KEY: ANVIL_KEYS[0],
          // The attester waits for one block after the burn: the test decides when it comes.
          BASE_SEPOLIA_CONFIRMATIONS: "1",
          CCTP_ATTESTER_KEY: LOCAL_ATTESTER_KEY,
          ...extra,
        },
        stdout: "piped",
        stderr: "piped",
      }).spawn();
      workers.push(child);
      let out = "";
      const drain = (s: ReadableStream<Uint8Array>) =>
        s.pipeThrough(new TextDecoderStream()).pipeTo(
          new WritableStream({ write: (t) => void (out += t) }),
        ).catch(() => {});
      drain(child.stdout);
      drain(child.stderr);
      return { child, output: () => out };
    };
    const kill = async (w: { child: Deno.ChildProcess }) => {
      w.child.kill("SIGKILL");
      await w.child.status;
    };
    const status = async (reference: string) =>
      (await call("GET", `/api/cctp/transfer/status?reference=${reference}`)).json;

    const r = await call("POST", "/api/cctp/transfer", {
      body: { fromChain: SOURCE, toChain: "Settle_Testnet", amount: "7", recipient: RECIPIENT },
      cookie,
    });
    assert.equal(r.status, 202, r.text);
    const reference = r.json.reference as string;
    assert.equal((await status(reference)).status, "pending", "no worker ran yet");

    const a = worker();
    await waitFor(async () => {
      const s = await status(reference);
      return s.status === "burned" && (s.attestation as { attempts: number }).attempts >= 1;
    }, { timeoutMs: 30_000, what: `the burn (worker output: ${a.output()})` });
    await kill(a);
    assert.equal(await chain.usdcBalance(SOURCE, wallet), 13_000_000n);

    await rpc(chain.runtime(SOURCE).rpcUrl, "evm_mine");
    const b = worker({ BRIDGE_HOLD_MINT: "1" });
    await waitFor(
      async () =>
        (await status(reference)).status === "attested" && b.output().includes("holding mint"),
      { timeoutMs: 30_000, what: "the attestation and the held mint" },
    );
    await kill(b);
    assert.equal(await chain.usdcBalance("testnet", RECIPIENT), 0n, "nothing minted yet");

    const c = worker();
    const done = await waitFor(async () => {
      const s = await status(reference);
      return s.status === "minted" ? s : null;
    }, { timeoutMs: 30_000, what: `the mint (worker output: ${c.output()})` });
    c.child.kill("SIGTERM");
    await c.child.status;

    assert.equal(done.amount, "7.000000");
    assert.equal(await chain.usdcBalance(SOURCE, wallet), 13_000_000n, "burned once");
    assert.equal(await chain.usdcBalance("testnet", RECIPIENT), 7_000_000n, "minted once");
    const intents = await svc.db.sql`
      select intent_key, count(*)::int as n from chain_transactions
      where intent_key like ${`bridge:${reference}%`} group by intent_key order by intent_key`;
    assert.deepEqual(
      intents.map((i) => [i.intentKey, i.n]),
      [
        [`bridge:${reference}:approve`, 1],
        [`bridge:${reference}:burn`, 1],
        [`bridge:${reference}:mint`, 1],
      ],
    );
    const testnet = chain.runtime("testnet").client;
    const received = await testnet.getContractEvents({
      address: chain.contract("testnet", "MessageTransmitterV2"),
      abi: MessageTransmitterV2.abi,
      eventName: "MessageReceived",
      fromBlock: 0n,
    });
    assert.equal(received.length, 1);
    const mints = await testnet.getContractEvents({
      address: chain.contract("testnet", "TokenMessengerV2"),
      abi: TokenMessengerV2.abi,
      eventName: "MintAndWithdraw",
      fromBlock: 0n,
    });
    assert.equal(mints.length, 1);
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
