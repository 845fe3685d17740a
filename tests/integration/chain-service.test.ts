import assert from "node:assert/strict";
import { planFor } from "../../src/chain/deploy.ts";
import { startTestService } from "../helpers/service.ts";

Deno.test("chain in the service: readiness per chain, contracts deployed, explorer links open", async () => {
  const svc = await startTestService();
  try {
    const ready = await fetch(`${svc.baseUrl}/readyz`);
    assert.equal(ready.status, 200);
    const body = await ready.json();
    for (const [name, id] of [["testnet", 5042002], ["production", 5042]] as const) {
      const c = body.checks.chains.detail[name];
      assert.equal(c.ok, true);
      assert.equal(c.chainId, id);
      assert.match(c.contracts.TestUSDC, /^0x[0-9a-f]{40}$/);
      assert.match(c.contracts.PaymentRouter, /^0x[0-9a-f]{40}$/);
      assert.match(c.contracts.EscrowVault, /^0x[0-9a-f]{40}$/);
    }
    const { chain } = svc.deps;
    const wallet = await chain.createWallet("test");
    const tx = await chain.mintUsdc({ profile: "testnet", to: wallet.address, amount: 2_500_000n });
    const url = chain.explorerTxUrl("testnet", tx.txHash);
    assert.equal(url, `${svc.baseUrl}/explorer/testnet/tx/${tx.txHash}`);
    const page = await fetch(url);
    assert.equal(page.status, 200);
    assert.match(page.headers.get("content-type") ?? "", /text\/html/);
    const html = await page.text();
    assert.match(html, /Success/);
    assert.match(html, /2\.5 USDC/);
    assert.ok(html.includes(wallet.address));
    const missing = await fetch(`${svc.baseUrl}/explorer/testnet/tx/0x${"0".repeat(64)}`);
    assert.equal(missing.status, 404);
    await missing.body?.cancel();
    const rows = await svc.db
      .sql`select name, address from chain_contracts order by chain_id, name`;
    // Every contract on each of two chains (the CCTP pair where the chain has a CCTP domain).
    assert.equal(
      rows.length,
      planFor(chain.runtime("testnet")).length + planFor(chain.runtime("production")).length,
    );
  } finally {
    await svc.close();
  }
});
