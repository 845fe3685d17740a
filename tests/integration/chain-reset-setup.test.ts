/**
 * A chain whose state is gone while the database remembers only our deployments and their setup
 * (the USDC minter role for the CCTP messenger) is deployed again, not refused: no money was on
 * it. One service, stopped, then a second one on the same database with new (empty) local nodes.
 */
import assert from "node:assert/strict";
import { createTestDatabase } from "../helpers/db.ts";
import { startTestService } from "../helpers/service.ts";

Deno.test("a reset chain with only our deployments and their setup on it is deployed again", async () => {
  const db = await createTestDatabase();
  try {
    const first = await startTestService({ db, workers: false, serve: false });
    const setup = await db.sql`
      select intent_key from chain_transactions where intent_key like 'cctp:minter:%'`;
    assert.ok(setup.length > 0, "the first start configured the messenger as a USDC minter");
    await first.close();

    const second = await startTestService({ db, workers: false, serve: false });
    try {
      const resets = await db.sql`select missing_contracts from chain_resets`;
      assert.ok(resets.length > 0, "the empty nodes were recognised as reset chains");
      const archived = await db.sql`
        select 1 from chain_transactions_archive where intent_key like 'cctp:minter:%'`;
      assert.ok(archived.length > 0, "the old chain's setup was archived");
      const code = await second.deps.chain.runtime("testnet").client.getCode({
        address: second.deps.chain.contract("testnet", "TestUSDC"),
      });
      assert.ok(code && code !== "0x", "our contracts are deployed on the new chain");
    } finally {
      await second.close();
    }
  } finally {
    await db.drop();
  }
});
