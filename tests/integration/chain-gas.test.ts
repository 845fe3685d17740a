/**
 * Gas for managed wallets: a wallet below the floor is topped up from the operator before it
 * signs, once per need (intent `gas:<address>:<nonce>`), on local and configured chains alike;
 * the operator's own low balance is reported.
 */
import assert from "node:assert/strict";
import { createTestDatabase } from "../helpers/db.ts";
import { rpc, startTestChain } from "../helpers/chain.ts";
import { ANVIL_KEYS, startAnvil } from "../helpers/anvil.ts";
import { deployContracts } from "../../src/chain/deploy.ts";
import { silentLogger } from "../../src/log.ts";
import type { Chain } from "../../src/chain/index.ts";
import type { Sql } from "../../src/db/client.ts";

const USDC = 1_000_000n;
const FLOOR = 10n ** 16n;
const TOPUP = 10n ** 17n;

async function topups(sql: Sql, address: string) {
  return await sql<{ intentKey: string; status: string; value: string }[]>`
    select intent_key, status, value from chain_transactions
    where intent_key like ${`gas:${address}:%`} order by nonce`;
}

async function burstFromFreshWallet(chain: Chain, sql: Sql, label: string) {
  const payer = await chain.createWallet("test");
  const payee = await chain.createWallet("test");
  assert.equal(await chain.nativeBalance("testnet", payer.address), 0n, "no gas at creation");
  await chain.mintUsdc({ profile: "testnet", to: payer.address, amount: 100n * USDC });
  const started = performance.now();
  const rows = await Promise.all(Array.from({ length: 10 }, (_, i) =>
    chain.transferUsdc({
      profile: "testnet",
      from: { walletId: payer.id },
      to: payee.address,
      amount: USDC,
      intentKey: `${label}:burst:${i}`,
    })));
  const ms = performance.now() - started;
  assert.ok(rows.every((r) => r.status === "confirmed"));
  assert.equal(await chain.usdcBalance("testnet", payee.address), 10n * USDC);
  const gas = await topups(sql, payer.address);
  assert.deepEqual(gas.map((g) => [g.intentKey, g.status]), [[
    `gas:${payer.address}:0`,
    "confirmed",
  ]]);
  console.log(`${label}: 10 concurrent first sends, ${gas.length} top-up, ${ms.toFixed(0)} ms`);
  return { payer, payee };
}

Deno.test("gas: a fresh managed wallet is topped up once, before it signs; again only below the floor", async (t) => {
  const db = await createTestDatabase();
  const chain = await startTestChain(db.sql, {
    env: { TESTNET_GAS_FLOOR_WEI: String(FLOOR), TESTNET_GAS_TOPUP_WEI: String(TOPUP) },
  });
  try {
    const { payer, payee } = await burstFromFreshWallet(chain, db.sql, "local");

    await t.step(
      "above the floor nothing is sent; the same need never gets a second top-up",
      async () => {
        await chain.transferUsdc({
          profile: "testnet",
          from: { walletId: payer.id },
          to: payee.address,
          amount: USDC,
          intentKey: "local:above",
        });
        assert.equal((await topups(db.sql, payer.address)).length, 1);
        // Asking again for the need already met (nonce 0) finds the first top-up.
        const rt = chain.runtime("testnet");
        const again = await chain.sender.send({
          profile: "testnet",
          from: "operator",
          to: payer.address,
          value: TOPUP,
          intentKey: `gas:${payer.address}:0`,
        });
        assert.equal(again.intentKey, `gas:${payer.address}:0`);
        assert.equal((await topups(db.sql, payer.address)).length, 1);
        assert.ok(rt.operator);
      },
    );

    await t.step(
      "below the floor again: one more top-up, keyed by the nonce about to be used",
      async () => {
        const rt = chain.runtime("testnet");
        await rpc(rt.rpcUrl, "anvil_setBalance", [payer.address, "0x" + (FLOOR / 2n).toString(16)]);
        const nonce = await rt.client.getTransactionCount({ address: payer.address });
        const row = await chain.transferUsdc({
          profile: "testnet",
          from: { walletId: payer.id },
          to: payee.address,
          amount: USDC,
          intentKey: "local:after-drain",
        });
        assert.equal(Number(row.nonce), nonce);
        const gas = await topups(db.sql, payer.address);
        assert.deepEqual(gas.map((g) => g.intentKey), [
          `gas:${payer.address}:0`,
          `gas:${payer.address}:${nonce}`,
        ]);
        assert.ok(await chain.nativeBalance("testnet", payer.address) > FLOOR);
      },
    );

    await t.step(
      "a transaction that costs more than the floor: topped up to its cost, then sent",
      async () => {
        // Above the floor, below what 25M gas costs (at least 1 gwei each on anvil: 0.025).
        const rt = chain.runtime("testnet");
        await rpc(rt.rpcUrl, "anvil_setBalance", [payer.address, "0x" + (FLOOR + 1n).toString(16)]);
        const nonce = await rt.client.getTransactionCount({ address: payer.address });
        const row = await chain.sender.send({
          profile: "testnet",
          from: { walletId: payer.id },
          to: payee.address,
          gas: 25_000_000n,
          intentKey: "local:costly",
        });
        assert.equal(row.status, "confirmed");
        const gas = await topups(db.sql, payer.address);
        assert.equal(gas.at(-1)?.intentKey, `gas:${payer.address}:${nonce}:cost`);
        assert.ok(BigInt(gas.at(-1)!.value) > FLOOR, "the top-up covers the cost, not the floor");
      },
    );

    await t.step("the operator's low balance is reported by the readiness check", async () => {
      const before = await chain.readiness().run();
      const detail = (before.detail as Record<string, Record<string, unknown>>).testnet;
      assert.equal((detail.operator as { low: boolean }).low, false);
      assert.equal(detail.warnings, undefined);
      const rt = chain.runtime("testnet");
      await rpc(rt.rpcUrl, "anvil_setBalance", [
        rt.operator!.address,
        "0x" + (10n ** 17n).toString(16),
      ]);
      const after = await chain.readiness().run();
      assert.equal(after.ok, true, "reported, not failed");
      const low = (after.detail as Record<string, Record<string, unknown>>).testnet;
      assert.equal((low.operator as { low: boolean }).low, true);
      assert.match(String((low.warnings as string[])[0]), /below 1000000000000000000 wei/);
      const op = await chain.operatorGas("testnet");
      assert.equal(op?.low, true);
    });
  } finally {
    await chain.stop();
    await db.drop();
  }
});

Deno.test("gas: top-ups work the same on a configured (remote) chain", async () => {
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
    assert.equal(chain.isLocal("testnet"), false);
    await deployContracts(chain.runtime("testnet"), chain.sender, db.sql, silentLogger);
    await burstFromFreshWallet(chain, db.sql, "remote");
  } finally {
    await chain.stop();
    await db.drop();
    await anvil.stop();
  }
});
