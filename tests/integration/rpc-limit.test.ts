/**
 * `POST /rpc/<profile>` spends the operator's RPC provider quota, so each client address gets
 * `RATE_LIMIT_RPC_PER_MINUTE` calls a minute (a JSON-RPC batch is one call): an outside audit
 * (2026-12-01) sent 400 calls in seconds, all answered.
 */
import assert from "node:assert/strict";
import { startTestService } from "../helpers/service.ts";

Deno.test("rpc proxy: a limit per client address, its own bucket", async () => {
  const svc = await startTestService({
    env: { RATE_LIMIT_RPC_PER_MINUTE: "5", TRUST_PROXY: "true" },
  });
  try {
    const rpc = (from: string, body: unknown) =>
      fetch(`${svc.baseUrl}/rpc/testnet`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-forwarded-for": from },
        body: JSON.stringify(body),
      });
    const one = { jsonrpc: "2.0", id: 1, method: "eth_blockNumber", params: [] };
    for (let i = 0; i < 4; i++) {
      const r = await rpc("203.0.113.7", one);
      assert.equal(r.status, 200);
      assert.match((await r.json()).result, /^0x/);
    }
    const batch = await rpc("203.0.113.7", [one, { ...one, id: 2 }, { ...one, id: 3 }]);
    assert.equal(batch.status, 200, "a batch is one call");
    assert.equal((await batch.json()).length, 3);
    const over = await rpc("203.0.113.7", one);
    assert.equal(over.status, 429);
    assert.ok(Number(over.headers.get("retry-after")) >= 1);
    assert.match((await over.json()).error, /rate limit/i);
    const other = await rpc("203.0.113.8", one);
    assert.equal(other.status, 200, "another client has its own");
    await other.body?.cancel();
  } finally {
    await svc.close();
  }
});
