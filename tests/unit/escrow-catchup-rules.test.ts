/**
 * What the escrow catch-up looks for (pendingActions, actionIntent) and what it reads back from a
 * recorded transaction (the chain module's decoding of EscrowVault call data).
 */
import assert from "node:assert/strict";
import { actionIntent, pendingActions } from "../../src/modules/escrow/escrow.rules.ts";
import {
  decodeEscrowCall,
  escrowActionData,
  reasonHash,
  resolveData,
} from "../../src/chain/escrow.ts";

const REF = "escrow_AbCdEfGhIj_0123456789";

Deno.test("escrow catch-up rules: the actions that could move a row, in order", () => {
  const at = new Date(0);
  assert.deepEqual(pendingActions({ status: "ACTIVE", confirmedAt: null }), [
    "confirm",
    "dispute",
    "release",
    "refund",
  ]);
  assert.deepEqual(pendingActions({ status: "ACTIVE", confirmedAt: at }), [
    "dispute",
    "release",
    "refund",
  ]);
  assert.deepEqual(pendingActions({ status: "DISPUTED", confirmedAt: null }), [
    "confirm",
    "resolve",
  ]);
  assert.deepEqual(pendingActions({ status: "DISPUTED", confirmedAt: at }), ["resolve"]);
  assert.deepEqual(pendingActions({ status: "RELEASED", confirmedAt: null }), []);
  assert.deepEqual(pendingActions({ status: "REFUNDED", confirmedAt: at }), []);
  assert.equal(actionIntent("dispute", REF), `escrow:dispute:${REF}`);
});

Deno.test("escrow catch-up rules: recorded call data decodes to what was sent", () => {
  for (const fn of ["release", "confirm", "refund"] as const) {
    assert.deepEqual(decodeEscrowCall(escrowActionData(fn, REF)), { fn, reference: REF });
  }
  assert.deepEqual(decodeEscrowCall(escrowActionData("dispute", REF, "late")), {
    fn: "dispute",
    reference: REF,
    reasonHash: reasonHash("late"),
  });
  for (const released of [true, false]) {
    assert.deepEqual(decodeEscrowCall(resolveData(REF, released)), {
      fn: "resolve",
      reference: REF,
      released,
    });
  }
  assert.equal(decodeEscrowCall("0xdeadbeef"), null);
  assert.equal(decodeEscrowCall("0x"), null);
});
