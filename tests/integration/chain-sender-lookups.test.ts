/**
 * The sender's first lookups run at once (the intent's row, the signer's account, a managed
 * wallet's gas balance): whichever of them fails, `submit` rejects with that error and leaves no
 * promise rejected unhandled (Deno fails the test, and would end the service, on one). A real
 * PostgreSQL; no node is reached (the lookups fail or answer before anything is signed).
 */
import assert from "node:assert/strict";
import { createTestDatabase } from "../helpers/db.ts";
import { TxSender } from "../../src/chain/sender.ts";
import type { ChainRuntime } from "../../src/chain/runtime.ts";
import { silentLogger } from "../../src/log.ts";

Deno.test("sender: a failed account or gas lookup rejects submit, nothing unhandled", async (t) => {
  const db = await createTestDatabase({ migrate: true });
  try {
    let balanceReads = 0;
    const rt = {
      chainId: 31337,
      profile: { name: "testnet", gas: { floorWei: 1n, topupWei: 1n } },
      operator: {},
      client: {
        getBalance: () => {
          balanceReads++;
          return Promise.reject(new Error("node down"));
        },
      },
    } as unknown as ChainRuntime;
    const sender = (account: () => Promise<never>) =>
      new TxSender({
        sql: db.sql,
        log: silentLogger,
        runtime: () => rt,
        account,
        receiptTimeoutMs: 1_000,
      });
    const req = (intentKey: string) => ({
      profile: "testnet" as const,
      from: { walletId: "w1" },
      to: `0x${"1".repeat(40)}` as `0x${string}`,
      intentKey,
    });

    await t.step("the account lookup fails: its error, the gas read never starts", async () => {
      const s = sender(() => Promise.reject(new Error("no such wallet")));
      await assert.rejects(s.submit(req("t:1")), /no such wallet/);
      assert.equal(balanceReads, 0);
    });

    await t.step("the gas read fails: its error", async () => {
      const account = { address: `0x${"2".repeat(40)}` };
      const s = sender(() => Promise.resolve(account) as Promise<never>);
      await assert.rejects(s.submit(req("t:2")), /node down/);
      assert.equal(balanceReads, 1);
    });

    await t.step("the intent already has its transaction: it is the answer", async () => {
      await db.sql`insert into chain_transactions (chain_id, intent_key, from_address, nonce,
        value, data, gas, max_fee_per_gas, max_priority_fee_per_gas, raw_tx, tx_hash, status)
        values (31337, 't:3', ${"0x" + "2".repeat(40)}, 0, 0, '0x', 21000, 1, 1, '0x',
          ${"0x" + "3".repeat(64)}, 'broadcast')`;
      const s = sender(() => Promise.reject(new Error("no such wallet")));
      const row = await s.submit(req("t:3"));
      assert.equal(row.intentKey, "t:3");
      assert.equal(row.status, "broadcast");
    });
  } finally {
    await db.drop();
  }
});
