/**
 * When a vault is safe for batched acceptance off a local node (x402.batched.rules.ts): only
 * settlers submit its authorizations, every relayer is one, and withdrawals wait past the
 * settlement window.
 */
import assert from "node:assert/strict";
import {
  batchedRefusal,
  minWithdrawalDelay,
  withdrawalSettled,
} from "../../src/modules/x402/x402.batched.rules.ts";

Deno.test("x402 batched rules: a vault is safe only with settlers and a long enough delay", () => {
  const needed = minWithdrawalDelay(5);
  assert.equal(needed, 30 + 2 * 5 + 120);
  const long = BigInt(needed);
  assert.equal(batchedRefusal({ delay: long, needed, missing: [] }), null);
  assert.equal(batchedRefusal({ delay: long * 100n, needed, missing: [] }), null);
  // A vault anyone may submit to: a payer can pay itself ahead of our settlement.
  assert.match(batchedRefusal({ delay: long, needed, missing: null })!, /anyone may submit/);
  // A relayer that is not a settler: our settlements from it would revert.
  assert.match(
    batchedRefusal({ delay: long, needed, missing: ["0x" + "1".repeat(40)] })!,
    /not settlers/,
  );
  // A payer could withdraw before a charge it promised is settled.
  assert.match(batchedRefusal({ delay: long - 1n, needed, missing: [] })!, /delay is too short/);
  assert.match(batchedRefusal({ delay: 0n, needed, missing: [] })!, /delay is too short/);
});

Deno.test("x402 batched rules: a dead process's withdrawal hold goes once nothing can be mined", () => {
  assert.equal(withdrawalSettled(null), true, "never written: never sent");
  for (const done of ["confirmed", "reverted", "failed"]) {
    assert.equal(withdrawalSettled(done), true);
  }
  for (const flying of ["signed", "broadcast"]) {
    assert.equal(withdrawalSettled(flying), false, `${flying}: may still be mined`);
  }
});
