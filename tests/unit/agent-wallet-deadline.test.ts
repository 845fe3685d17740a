/**
 * The deadline of an agent wallet proof (AgentWalletSet): the official ERC-8004 registry refuses
 * one more than 5 minutes past the including block's time (`deadline too far`) or before it
 * (`expired`). It comes from the later of the wall clock and the chain's next block time, plus
 * 150 s, so it holds on a real chain, on a local node whose last block is long past, and on one
 * whose time a test moved ahead.
 */
import assert from "node:assert/strict";
import { WALLET_PROOF_SECONDS, walletProofDeadline } from "../../src/chain/agents.ts";

const WINDOW = 300n;
/** Whether the registry would take it in a block stamped `blockTime`. */
const accepted = (deadline: bigint, blockTime: bigint) =>
  blockTime <= deadline && deadline <= blockTime + WINDOW;

Deno.test("agent wallet proof: deadline within the registry's 5-minute window", () => {
  const wallMs = 1_800_000_000_000;
  const wall = 1_800_000_000n;
  // A real chain: the next block is about now.
  const live = walletProofDeadline(wall - 2n, wallMs);
  assert.equal(live, wall + WALLET_PROOF_SECONDS);
  for (const included of [wall, wall + 60n, wall + 149n]) assert.ok(accepted(live, included));
  assert.ok(!accepted(wall - 2n + 3600n, wall), "the latest block + 3600 s: deadline too far");
  // A local node idle for an hour: its last block is old, the next is stamped with the wall
  // clock; the last block's time plus a margin would be `expired`.
  const idle = walletProofDeadline(wall - 3600n, wallMs);
  assert.ok(accepted(idle, wall));
  assert.ok(!accepted(wall - 3600n + WALLET_PROOF_SECONDS, wall), "stale block time: expired");
  // A local node whose time a test moved a day ahead.
  const ahead = walletProofDeadline(wall + 86_400n, wallMs);
  assert.ok(accepted(ahead, wall + 86_400n));
  assert.ok(!accepted(wall + WALLET_PROOF_SECONDS, wall + 86_400n), "the wall clock alone");
  // A node whose clock is up to 150 s behind the wall clock still takes it.
  assert.ok(accepted(live, wall - 150n));
});
