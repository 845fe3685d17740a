/**
 * The settler's control flow with a scripted chain (the real batch call is covered on anvil in
 * tests/integration/x402-api.test.ts): a batch refused before broadcast falls back to one
 * transaction per proof; a batch that fails after broadcast fails its callers.
 */
import assert from "node:assert/strict";
import { batchingSettler, type SettleItem } from "../../src/modules/x402/x402.settler.ts";
import { ChainRevertError } from "../../src/chain/errors.ts";
import type { Deps } from "../../src/deps.ts";

function scripted(batch: () => Promise<never>) {
  const singles: string[] = [];
  let batches = 0;
  const deps = {
    chain: {
      has: () => true,
      gateway: {
        settleBatch: () => {
          batches++;
          return batch();
        },
        settle: (_p: string, _t: string, req: { intentKey: string }) => {
          singles.push(req.intentKey);
          return Promise.resolve({ txHash: `0x${singles.length}` });
        },
      },
    },
  } as unknown as Deps;
  return { deps, singles, batches: () => batches };
}

const item = (n: number): SettleItem => ({
  attemptId: crypto.randomUUID(),
  authorization: {
    from: "0x00000000000000000000000000000000000000aa",
    to: "0x00000000000000000000000000000000000000bb",
    value: 1n,
    validAfter: 0n,
    validBefore: 1n,
    nonce: `0x${n.toString(16).padStart(64, "0")}`,
  },
  signature: "0x01",
});

Deno.test("x402 settler: a batch refused at estimation falls back to single settlements", async () => {
  const s = scripted(() => Promise.reject(new ChainRevertError("function not found")));
  const settler = batchingSettler(s.deps);
  // The first goes alone; the next three wait for it and form a batch, which is refused.
  const results = await Promise.all([1, 2, 3, 4].map((n) => settler.settle(item(n))));
  assert.equal(s.batches(), 1);
  assert.equal(s.singles.length, 4);
  assert.deepEqual(results, ["0x1", "0x2", "0x3", "0x4"]);
});

Deno.test("x402 settler: a batch reverted after broadcast fails its callers", async () => {
  const s = scripted(() => Promise.reject(new ChainRevertError("reverted", "0xdead")));
  const settler = batchingSettler(s.deps);
  const results = await Promise.allSettled([1, 2, 3].map((n) => settler.settle(item(n))));
  assert.equal(results[0].status, "fulfilled");
  assert.deepEqual(results.slice(1).map((r) => r.status), ["rejected", "rejected"]);
  assert.equal(s.singles.length, 1);
});
