/**
 * The sender under pipelined load: one wallet's batch with a refusal in the middle leaves no
 * nonce gap on chain, and relayed work spreads over the relayer pool, each relayer funded from
 * the operator before it first signs.
 */
import assert from "node:assert/strict";
import { encodeFunctionData } from "viem";
import { createTestDatabase } from "../helpers/db.ts";
import { startTestChain } from "../helpers/chain.ts";
import { waitFor } from "../helpers/poll.ts";
import { TestUSDC } from "../../src/chain/contracts/artifacts/index.ts";

const USDC = 1_000_000n;

Deno.test("sender: pipelined sends from one wallet with a refusal among them leave no nonce gap", async () => {
  const db = await createTestDatabase();
  const chain = await startTestChain(db.sql);
  try {
    const rt = chain.runtime("testnet");
    const usdc = chain.contract("testnet", "TestUSDC");
    const payer = await chain.createWallet("test");
    const payee = await chain.createWallet("test");
    await chain.mintUsdc({ profile: "testnet", to: payer.address, amount: 100n * USDC });
    await chain.grantGas("testnet", payer.address, 10n ** 18n);
    const data = encodeFunctionData({
      abi: TestUSDC.abi,
      functionName: "transfer",
      args: [payee.address, USDC],
    });
    const results = await Promise.allSettled(Array.from({ length: 40 }, (_, i) =>
      i === 20
        // More ether than the wallet has: the node refuses it at broadcast.
        ? chain.send({
          profile: "testnet",
          from: { walletId: payer.id },
          to: payee.address,
          value: 10n ** 21n,
          gas: 21_000n,
          intentKey: `pipe:refused`,
        })
        : chain.send({
          profile: "testnet",
          from: { walletId: payer.id },
          to: usdc,
          data,
          gas: 80_000n,
          intentKey: `pipe:${i}`,
        })));
    const refused = results.filter((r) => r.status === "rejected");
    assert.equal(refused.length, 1);
    assert.equal((refused[0] as PromiseRejectedResult).reason.code, "chain_refused");
    assert.equal(results.filter((r) => r.status === "fulfilled").length, 39);
    assert.equal(await chain.usdcBalance("testnet", payee.address), 39n * USDC);

    // Every live nonce is taken exactly once, and the chain has mined them all: no gap.
    const live = await db.sql<{ nonce: bigint }[]>`
      select nonce from chain_transactions
      where from_address = ${payer.address.toLowerCase()} and status <> 'failed' order by nonce`;
    const nonces = live.map((r) => Number(r.nonce));
    // The refused intent's nonce is taken: by a filler when later nonces of its batch went out,
    // else by the next intent.
    const [refusedRow] = await db.sql<{ nonce: bigint }[]>`
      select nonce from chain_transactions where intent_key = 'pipe:refused'`;
    const [filler] = await db.sql<{ nonce: bigint; intentKey: string }[]>`
      select nonce, intent_key from chain_transactions
      where from_address = ${payer.address.toLowerCase()} and nonce = ${refusedRow.nonce}
        and status <> 'failed'`;
    assert.ok(filler, "the refused nonce is not left empty");
    assert.deepEqual(nonces, Array.from({ length: nonces.length }, (_, i) => i));
    await waitFor(
      async () =>
        (await rt.client.getTransactionCount({ address: payer.address, blockTag: "latest" })) ===
          nonces.length,
      { what: "every recorded nonce mined" },
    );
  } finally {
    await chain.stop();
    await db.drop();
  }
});

Deno.test("sender: relays spread over the relayer pool, each funded from the operator first", async () => {
  const db = await createTestDatabase();
  const chain = await startTestChain(db.sql, { env: { TESTNET_RELAYERS: "3" } });
  try {
    const rt = chain.runtime("testnet");
    assert.equal(rt.relayers.length, 3);
    const relayers = rt.relayers.map((r) => r.address.toLowerCase());
    assert.ok(!relayers.includes(rt.operator!.address.toLowerCase()));
    const usdc = chain.contract("testnet", "TestUSDC");
    const payee = await chain.createWallet("test");
    const zero = encodeFunctionData({
      abi: TestUSDC.abi,
      functionName: "transfer",
      args: [payee.address, 0n],
    });
    const rows = await Promise.all(Array.from({ length: 24 }, (_, i) =>
      chain.send({
        profile: "testnet",
        from: "relayer",
        to: usdc,
        data: zero,
        intentKey: `relay:${i}`,
      })));
    assert.ok(rows.every((r) => r.status === "confirmed"));
    const used = new Set(rows.map((r) => r.fromAddress));
    assert.equal(used.size, 3, "every relayer took a share");
    assert.ok([...used].every((a) => relayers.includes(a)));
    // The same intent again is the same transaction from the same relayer.
    const again = await chain.send({
      profile: "testnet",
      from: "relayer",
      to: usdc,
      data: zero,
      intentKey: "relay:5",
    });
    assert.equal(again.txHash, rows[5].txHash);
    // One top-up per relayer, from the operator, before its first relay.
    const topups = await db.sql<{ toAddress: string; fromAddress: string; status: string }[]>`
      select to_address, from_address, status from chain_transactions where intent_key like 'gas:%'`;
    assert.deepEqual(topups.map((t) => t.toAddress).sort(), [...relayers].sort());
    assert.ok(
      topups.every((t) =>
        t.fromAddress === rt.operator!.address.toLowerCase() && t.status === "confirmed"
      ),
    );
    for (const r of relayers) {
      assert.ok(await chain.nativeBalance("testnet", r as `0x${string}`) > 0n);
    }
  } finally {
    await chain.stop();
    await db.drop();
  }
});
