/**
 * The gateway vault's settlers on a configured chain (an outside node, as a real network is):
 * the deployment names the relayer pool, a pool grown later is added when the service starts
 * (the operator's `setSettlers`; `contracts:deploy` does the same), and a vault without settlers is told apart
 * (x402's batched option is not offered on it: x402.batched.rules.ts `batchedRefusal`). The
 * vault it deploys delays withdrawals by a day unless `TESTNET_GATEWAY_WITHDRAWAL_DELAY_SECONDS`
 * says otherwise.
 */
import assert from "node:assert/strict";
import { createPublicClient, http } from "viem";
import { createTestDatabase } from "../helpers/db.ts";
import { ANVIL_KEYS, startAnvil } from "../helpers/anvil.ts";
import { startTestChain } from "../helpers/chain.ts";
import { deployContracts } from "../../src/chain/deploy.ts";
import { missingSettlers } from "../../src/chain/gateway-settlers.ts";
import { GatewayVault } from "../../src/chain/contracts/artifacts/index.ts";
import { silentLogger } from "../../src/log.ts";
import { deriveRelayers } from "../../src/chain/relayers.ts";
import type { ChainRuntime } from "../../src/chain/runtime.ts";

Deno.test("gateway vault settlers: the relayer pool, a grown pool, a vault without settlers", async () => {
  const anvil = await startAnvil({ chainId: 5042002 });
  const db = await createTestDatabase();
  const env = (relayers: number) => ({
    TESTNET_RPC_URL: anvil.rpcUrl,
    TESTNET_OPERATOR_KEY: ANVIL_KEYS[0],
    TESTNET_CONFIRMATIONS: "0",
    TESTNET_RELAYERS: String(relayers),
  });
  const isSettler = (rt: ChainRuntime, vault: `0x${string}`, who: `0x${string}`) =>
    rt.client.readContract({
      address: vault,
      abi: GatewayVault.abi,
      functionName: "isSettler",
      args: [who],
    });
  try {
    let chain = await startTestChain(db.sql, { env: env(2) });
    let vault: `0x${string}`;
    try {
      const rt = chain.runtime("testnet");
      assert.equal(rt.node, undefined, "a configured chain, not a node of ours");
      await deployContracts(rt, chain.sender, db.sql, silentLogger);
      vault = rt.contracts.GatewayVault!;
      assert.equal(rt.relayers.length, 2);
      for (const r of rt.relayers) assert.equal(await isSettler(rt, vault, r.address), true);
      assert.deepEqual(await chain.gateway.settlersMissing("testnet"), []);
      assert.equal(await isSettler(rt, vault, ANVIL_KEYS_ADDRESS_1), false);
      // On a configured chain the vault delays withdrawals (a day unless configured): long
      // enough for x402's batched option, which a vault without a delay does not get.
      assert.equal(await chain.gateway.withdrawalDelay("testnet"), 86_400n);
    } finally {
      await chain.stop();
    }

    // The pool grows to 4 (another process of the deployment, or a restart with more relayers):
    // its start adds the two the vault lacks, once, and keeps the vault (it holds funds).
    const grown = deriveRelayers(ANVIL_KEYS[0], 4);
    const outside = createPublicClient({ transport: http(anvil.rpcUrl) });
    const settles = (who: `0x${string}`) =>
      outside.readContract({
        address: vault,
        abi: GatewayVault.abi,
        functionName: "isSettler",
        args: [who],
      });
    assert.deepEqual(
      await Promise.all(grown.map((r) => settles(r.address))),
      [true, true, false, false],
    );
    chain = await startTestChain(db.sql, { env: env(4) });
    try {
      const rt = chain.runtime("testnet");
      assert.equal(rt.contracts.GatewayVault, vault, "the vault holds funds: kept");
      assert.deepEqual(rt.relayers.map((r) => r.address), grown.map((r) => r.address));
      for (const r of rt.relayers) assert.equal(await isSettler(rt, vault, r.address), true);
      assert.deepEqual(await chain.gateway.settlersMissing("testnet"), []);
      const added = await db.sql`select count(*)::int as n from chain_transactions
        where intent_key like 'gateway:settlers:%'`;
      assert.equal(added[0].n, 1);
      // Again: nothing missing, nothing sent.
      const sent = await db.sql`select count(*)::int as n from chain_transactions`;
      await deployContracts(rt, chain.sender, db.sql, silentLogger);
      const again = await db.sql`select count(*)::int as n from chain_transactions`;
      assert.equal(again[0].n, sent[0].n);
      // A contract at the vault's address that has no settlers (as a vault from before them).
      assert.equal(await missingSettlers(rt, rt.contracts.TestUSDC!), null);
    } finally {
      await chain.stop();
    }

    // Another delay: the vault alone is replaced (`--force --only GatewayVault`, what doctor's
    // fix says); every other contract, funds-holding ones included, keeps its address.
    chain = await startTestChain(db.sql, {
      env: { ...env(4), TESTNET_GATEWAY_WITHDRAWAL_DELAY_SECONDS: "300" },
    });
    try {
      const rt = chain.runtime("testnet");
      const before = { ...rt.contracts };
      const replaced = await deployContracts(rt, chain.sender, db.sql, silentLogger, {
        force: true,
        only: ["GatewayVault"],
      });
      assert.deepEqual(replaced, ["GatewayVault"]);
      assert.notEqual(rt.contracts.GatewayVault, before.GatewayVault);
      assert.deepEqual({ ...rt.contracts, GatewayVault: before.GatewayVault }, before);
      assert.equal(await chain.gateway.withdrawalDelay("testnet"), 300n);
      assert.deepEqual(await chain.gateway.settlersMissing("testnet"), []);
    } finally {
      await chain.stop();
    }
  } finally {
    await db.drop();
    await anvil.stop();
  }
});

// The second of anvil's well-known accounts: not a relayer of this pool.
const ANVIL_KEYS_ADDRESS_1 = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8" as const;
