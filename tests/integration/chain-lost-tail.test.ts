/**
 * A local node killed outright loses its last blocks (up to its state interval) while the
 * database keeps their receipts (an outside audit, 2026-12-01: a stop, a withdrawal and an escrow
 * resolve answered and recorded, gone from the chain). The start that loads its state replays
 * every transaction recorded above the node's head, as its signed bytes (src/chain/lost-tail.ts).
 * Here the loss is made exactly: a snapshot of the node, three recorded mints, the snapshot
 * restored (the blocks and their state gone, as after such a kill).
 */
import assert from "node:assert/strict";
import { startTestService } from "../helpers/service.ts";
import { rpc } from "../helpers/chain.ts";
import { silentLogger } from "../../src/log.ts";
import { replayLostTail } from "../../src/chain/lost-tail.ts";
import * as watcherRepo from "../../src/chain/watcher.repo.ts";
import { CURSOR } from "../../src/chain/watcher.ts";

const USDC = 1_000_000n;

Deno.test("chain: a local node's lost last blocks are replayed from their signed bytes", async () => {
  const svc = await startTestService({ env: { RATE_LIMITS: "off" }, workers: false });
  const chain = svc.deps.chain;
  const sql = svc.db.sql;
  const rt = chain.runtime("testnet");
  const to = `0x${"ab".repeat(20)}` as `0x${string}`;
  try {
    const snapshot = await rpc(rt.rpcUrl, "evm_snapshot");
    const mints = [];
    for (let i = 0; i < 3; i++) {
      mints.push(await chain.mintUsdc({ profile: "testnet", to, amount: USDC }));
    }
    const tip = await rt.client.getBlockNumber({ cacheTime: 0 });
    await watcherRepo.saveCursor(sql, rt.chainId, CURSOR, tip);
    assert.equal(await chain.usdcBalance("testnet", to), 3n * USDC);

    // The kill: the node comes back at the snapshot, the database keeps the three receipts.
    await rpc(rt.rpcUrl, "evm_revert", [snapshot]);
    assert.equal(await chain.usdcBalance("testnet", to), 0n);
    const head = await rt.client.getBlockNumber({ cacheTime: 0 });
    assert.ok(mints.every((m) => m.blockNumber! > head), "the mints' blocks are gone");

    const report = await replayLostTail(sql, rt.client, rt.chainId, silentLogger);
    assert.deepEqual([report.replayed, report.differing], [3, []]);
    assert.equal(await chain.usdcBalance("testnet", to), 3n * USDC, "the chain has them again");
    const rows = await sql<{ txHash: string; status: string; blockNumber: bigint }[]>`
      select tx_hash, status, block_number from chain_transactions
      where id = any(${mints.map((m) => m.id)}::uuid[]) order by nonce`;
    const now = await rt.client.getBlockNumber({ cacheTime: 0 });
    for (const [i, r] of rows.entries()) {
      assert.equal(r.txHash, mints[i].txHash, "the same transaction, not a new one");
      assert.equal(r.status, "confirmed");
      assert.ok(BigInt(r.blockNumber) <= now, "recorded in the block it is in now");
      const receipt = await rt.client.getTransactionReceipt({ hash: r.txHash as `0x${string}` });
      assert.equal(receipt.blockNumber, BigInt(r.blockNumber));
    }
    assert.equal(
      await watcherRepo.readCursor(sql, rt.chainId, CURSOR),
      head,
      "the watcher reads the re-mined blocks again",
    );

    // Nothing more to replay, and the next transaction takes the next nonce.
    const again = await replayLostTail(sql, rt.client, rt.chainId, silentLogger);
    assert.equal(again.replayed, 0);
    await chain.mintUsdc({ profile: "testnet", to, amount: USDC });
    assert.equal(await chain.usdcBalance("testnet", to), 4n * USDC);
  } finally {
    await svc.close();
  }
});

Deno.test("chain: a lost tail with a transaction recorded in flight below it is replayed whole", async () => {
  // The process was killed after the node mined its transaction and before it recorded the
  // receipt: that transaction is recorded in flight, not in a block, and the replayed ones after
  // it (higher nonces of the same sender) waited in the pool for it until recovery's sweep.
  const svc = await startTestService({ env: { RATE_LIMITS: "off" }, workers: false });
  const chain = svc.deps.chain;
  const sql = svc.db.sql;
  const rt = chain.runtime("testnet");
  const to = `0x${"cd".repeat(20)}` as `0x${string}`;
  try {
    const snapshot = await rpc(rt.rpcUrl, "evm_snapshot");
    const mints = [];
    for (let i = 0; i < 3; i++) {
      mints.push(await chain.mintUsdc({ profile: "testnet", to, amount: USDC }));
    }
    assert.ok(mints[0].nonce < mints[1].nonce && mints[1].nonce < mints[2].nonce, "one sender");
    await sql`
      update chain_transactions set status = 'broadcast', block_number = null, gas_used = null,
        confirmed_at = null
      where id = ${mints[1].id}`;
    await rpc(rt.rpcUrl, "evm_revert", [snapshot]);
    assert.equal(await chain.usdcBalance("testnet", to), 0n);

    const report = await replayLostTail(sql, rt.client, rt.chainId, silentLogger);
    assert.deepEqual([report.replayed, report.differing], [2, []]);
    assert.equal(await chain.usdcBalance("testnet", to), 3n * USDC, "all three mined again");
    const middle = await rt.client.getTransactionReceipt({
      hash: mints[1].txHash as `0x${string}`,
    });
    assert.equal(middle.status, "success");
  } finally {
    await svc.close();
  }
});
