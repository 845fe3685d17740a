import assert from "node:assert/strict";
import { payoutFloor, payoutLookupWindows } from "../../src/chain/payroll.ts";
import type { ChainRuntime } from "../../src/chain/runtime.ts";

Deno.test("payroll lookup: windows run newest first from the upper block down to the floor", () => {
  assert.deepEqual(payoutLookupWindows(10n, 0n, 4n), [[7n, 10n], [3n, 6n], [0n, 2n]]);
  assert.deepEqual(payoutLookupWindows(10n, 7n, 4n), [[7n, 10n]]);
  assert.deepEqual(payoutLookupWindows(10n, 8n, 4n), [[8n, 10n]]);
  assert.deepEqual(payoutLookupWindows(5n, 5n, 4n), [[5n, 5n]]);
  assert.deepEqual(payoutLookupWindows(4n, 5n, 4n), []);
  // A long chain: the first window is the last PAYOUT_WINDOW blocks, never block 0.
  const w = payoutLookupWindows(50_000_000n, 0n);
  assert.deepEqual(w[0], [49_998_001n, 50_000_000n]);
});

/** A chain whose block n was mined at `t0 + 2n` seconds (only getBlock is read). */
function chainOf(t0: bigint, opts: { node?: boolean; startBlock?: bigint } = {}) {
  const asked: bigint[] = [];
  const rt = {
    node: opts.node ? {} : undefined,
    profile: { startBlock: opts.startBlock },
    client: {
      getBlock: ({ blockNumber }: { blockNumber: bigint }) => {
        asked.push(blockNumber);
        return Promise.resolve({ timestamp: t0 + 2n * blockNumber });
      },
    },
  } as unknown as Pick<ChainRuntime, "node" | "profile" | "client">;
  return { rt, asked };
}

Deno.test("payroll lookup: the floor on a configured chain is the last block before the batch (less an hour)", async () => {
  const t0 = 1_700_000_000n;
  const { rt, asked } = chainOf(t0);
  // The batch was created when block 20,000,000 was mined; an hour is 1,800 blocks of 2 s.
  const since = new Date(Number(t0 + 2n * 20_000_000n) * 1000);
  const floor = await payoutFloor(rt, since, 30_000_000n);
  assert.equal(floor, 20_000_000n - 1_800n - 1n);
  assert.ok(asked.length <= 26, `bisection: ${asked.length} block reads`);

  // A configured START_BLOCK later than that wins.
  const later = chainOf(t0, { startBlock: 25_000_000n });
  assert.equal(await payoutFloor(later.rt, since, 30_000_000n), 25_000_000n);

  // A local node's chain is short: read from 0, no block reads.
  const local = chainOf(t0, { node: true });
  assert.equal(await payoutFloor(local.rt, since, 30_000_000n), 0n);
  assert.equal(local.asked.length, 0);
});
