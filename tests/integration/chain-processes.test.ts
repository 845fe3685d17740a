import assert from "node:assert/strict";
import { createTestDatabase } from "../helpers/db.ts";
import { ANVIL_KEYS, startAnvil } from "../helpers/anvil.ts";
import { startTestChain, TEST_MASTER_KEY } from "../helpers/chain.ts";
import { deployContracts, planFor } from "../../src/chain/deploy.ts";
import { silentLogger } from "../../src/log.ts";

const USDC = 1_000_000n;

async function setup() {
  const anvil = await startAnvil({ chainId: 5042002 });
  const db = await createTestDatabase();
  const env = {
    TESTNET_RPC_URL: anvil.rpcUrl,
    TESTNET_OPERATOR_KEY: ANVIL_KEYS[0],
    TESTNET_CONFIRMATIONS: "0",
  };
  const chain = await startTestChain(db.sql, { env });
  const rt = chain.runtime("testnet");
  await deployContracts(rt, chain.sender, db.sql, silentLogger);
  const payer = await chain.createWallet("test");
  const payee = await chain.createWallet("test");
  await chain.grantGas("testnet", payer.address);
  await chain.mintUsdc({ profile: "testnet", to: payer.address, amount: 1000n * USDC });
  const worker = (extra: Record<string, string>) =>
    new Deno.Command(Deno.execPath(), {
      args: ["run", "--allow-all", "tests/fixtures/sender-worker.ts"],
      env: {
        ...env,
        DATABASE_URL: db.url,
        WALLET_MASTER_KEY: TEST_MASTER_KEY,
        WORKER_WALLET_ID: payer.id,
        WORKER_TO: payee.address,
        ...extra,
      },
      stdout: "piped",
      stderr: "piped",
    }).spawn();
  return {
    anvil,
    db,
    chain,
    payer,
    payee,
    worker,
    close: async () => {
      await chain.stop();
      await db.drop();
      await anvil.stop();
    },
  };
}

Deno.test("sender: two processes send 20 transfers each from one wallet; all 40 mine", async () => {
  const s = await setup();
  try {
    const procs = ["a", "b"].map((p) =>
      s.worker({ WORKER_COUNT: "20", WORKER_PREFIX: `proc-${p}` })
    );
    const outs = await Promise.all(procs.map((p) => p.output()));
    for (const o of outs) assert.equal(o.code, 0, new TextDecoder().decode(o.stderr));
    const rows = await s.db.sql<{ nonce: bigint; status: string }[]>`
      select nonce, status from chain_transactions
      where from_address = ${s.payer.address} order by nonce`;
    assert.equal(rows.length, 40);
    assert.ok(
      rows.every((r) => r.status === "confirmed"),
      JSON.stringify(rows.filter((r) => r.status !== "confirmed")),
    );
    assert.deepEqual(rows.map((r) => Number(r.nonce)), Array.from({ length: 40 }, (_, i) => i));
    assert.equal(await s.chain.usdcBalance("testnet", s.payee.address), 40n * USDC);
  } finally {
    await s.close();
  }
});

Deno.test("sender: killed after broadcast, recovery completes the record; money moves once", async () => {
  const s = await setup();
  try {
    const proc = s.worker({
      WORKER_COUNT: "1",
      WORKER_PREFIX: "crash",
      WORKER_AMOUNT: String(7n * USDC),
      WORKER_CRASH_AFTER_BROADCAST: "1",
    });
    const out = await proc.output();
    assert.equal(out.signal, "SIGKILL");
    const [before] = await s.db
      .sql`select status, tx_hash from chain_transactions where intent_key = 'crash:0'`;
    assert.equal(before.status, "signed", "the process died before its bookkeeping");
    // The node mines a moment after it answers the broadcast: the survivor comes later.
    await s.chain.runtime("testnet").client.waitForTransactionReceipt({
      hash: before.txHash,
      pollingInterval: 50,
      timeout: 20_000,
    });

    const report = await s.chain.recover("testnet", { minAgeMs: 0 });
    assert.equal(report.confirmed, 1);
    const [after] = await s.db
      .sql`select status, tx_hash from chain_transactions where intent_key = 'crash:0'`;
    assert.equal(after.status, "confirmed");
    assert.equal(after.txHash, before.txHash);

    // The operation is retried (as a restarted caller would): it finds its transaction.
    const retry = await s.chain.transferUsdc({
      profile: "testnet",
      from: { walletId: s.payer.id },
      to: s.payee.address,
      amount: 7n * USDC,
      intentKey: "crash:0",
    });
    assert.equal(retry.txHash, before.txHash);
    assert.equal(await s.chain.usdcBalance("testnet", s.payee.address), 7n * USDC);
    const [{ n }] = await s.db
      .sql`select count(*)::int as n from chain_transactions where from_address = ${s.payer.address}`;
    assert.equal(n, 1);
  } finally {
    await s.close();
  }
});

Deno.test("deploy: a rebuilt contract that holds funds is kept; one that holds none is replaced", async () => {
  const anvil = await startAnvil({ chainId: 5042002 });
  const db = await createTestDatabase();
  const chain = await startTestChain(db.sql, {
    env: {
      TESTNET_RPC_URL: anvil.rpcUrl,
      TESTNET_OPERATOR_KEY: ANVIL_KEYS[0],
      TESTNET_CONFIRMATIONS: "0",
    },
  });
  try {
    const rt = chain.runtime("testnet");
    await deployContracts(rt, chain.sender, db.sql, silentLogger);
    const wallet = await chain.createWallet("test");
    await chain.mintUsdc({ profile: "testnet", to: wallet.address, amount: 5n * USDC });
    const before = { ...rt.contracts };
    // As after an upgrade whose sources changed: every recorded build differs from ours.
    await db.sql`update chain_contracts set input_hash = 'an older build'`;
    const redeployed = await deployContracts(rt, chain.sender, db.sql, silentLogger);
    assert.deepEqual(redeployed, planFor(rt).filter((p) => !p.holdsFunds).map((p) => p.name));
    for (const p of planFor(rt)) {
      if (p.holdsFunds) assert.equal(rt.contracts[p.name], before[p.name], p.name);
      else assert.notEqual(rt.contracts[p.name], before[p.name], p.name);
    }
    assert.equal(await chain.usdcBalance("testnet", wallet.address), 5n * USDC);
  } finally {
    await chain.stop();
    await db.drop();
    await anvil.stop();
  }
});
