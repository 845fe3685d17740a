import assert from "node:assert/strict";
import { actionsBetween, chainIsAhead } from "../../src/modules/commerce/commerce.rules.ts";

Deno.test("jobs rules: a row only moves forward to the chain's status", () => {
  assert.equal(chainIsAhead("OPEN", "FUNDED"), true);
  assert.equal(chainIsAhead("FUNDED", "COMPLETED"), true);
  assert.equal(chainIsAhead("SUBMITTED", "EXPIRED"), true);
  assert.equal(chainIsAhead("FUNDED", "FUNDED"), false);
  assert.equal(chainIsAhead("SUBMITTED", "FUNDED"), false, "never back");
  assert.equal(chainIsAhead("COMPLETED", "REJECTED"), false, "an end never moves");
});

Deno.test("jobs rules: the transactions to look up between two statuses", () => {
  const cols = (
    from: Parameters<typeof actionsBetween>[0],
    to: Parameters<typeof actionsBetween>[1],
  ) => actionsBetween(from, to).map((s) => s.column);
  assert.deepEqual(cols("OPEN", "FUNDED"), ["approveTxHash", "fundTxHash"]);
  assert.deepEqual(cols("FUNDED", "SUBMITTED"), ["submitTxHash"]);
  assert.deepEqual(cols("OPEN", "SUBMITTED"), ["approveTxHash", "fundTxHash", "submitTxHash"]);
  assert.deepEqual(cols("SUBMITTED", "COMPLETED"), ["completeTxHash"]);
  assert.deepEqual(cols("FUNDED", "EXPIRED"), ["submitTxHash", "refundTxHash"]);
  assert.deepEqual(cols("FUNDED", "REJECTED"), ["submitTxHash", "rejectTxHash"]);
  assert.deepEqual(
    actionsBetween("OPEN", "FUNDED").map((s) => `${s.action}${s.suffix}`),
    ["fund:approve", "fund:fund"],
  );
});
