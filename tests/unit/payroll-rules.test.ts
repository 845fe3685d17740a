/** Payroll's pure parts: chunk assignment, end states, batch references, the CSV preview. */
import assert from "node:assert/strict";
import { assignChunks, endState, newBatchRef } from "../../src/modules/payroll/payroll.rules.ts";
import { parsePayrollCsv } from "../../src/modules/payroll/payroll.csv.ts";
import { parseRunBody, RunBodyError } from "../../src/modules/payroll/payroll.schemas.ts";

const A = "0xAb8483F64d9C6d1EcF9b849Ae677dD3315835cb2";
const B = "0x4B20993Bc481177ec7E8f571ceCaE8A9e22C02db";

Deno.test("payroll: chunks count only the recipients sent on chain", () => {
  const r = (amount: bigint) => ({ recipientSCA: A as `0x${string}`, amount, label: null });
  assert.deepEqual(assignChunks([r(1n), r(0n), r(2n), r(3n), r(0n), r(4n)], 2), [
    0,
    null,
    0,
    1,
    null,
    1,
  ]);
  assert.deepEqual(assignChunks([r(0n)], 200), [null]);
});

Deno.test("payroll: end states", () => {
  const c = (success: number, failed: number, pendingSignature = 0, pending = 0) => ({
    success,
    failed,
    pendingSignature,
    pending,
  });
  assert.equal(endState(c(3, 0)), "COMPLETED");
  assert.equal(endState(c(2, 1)), "PARTIAL_FAILURE");
  assert.equal(endState(c(0, 3)), "FAILED");
  assert.equal(endState(c(0, 1, 2)), "AWAITING_SIGNATURES");
  assert.equal(endState(c(1, 0, 0, 1)), null);
});

Deno.test("payroll: batch references are payroll_<time>_<random> and distinct", () => {
  const now = new Date("2026-11-22T20:00:00Z");
  const refs = new Set(Array.from({ length: 1000 }, () => newBatchRef(now)));
  assert.equal(refs.size, 1000);
  for (const ref of refs) assert.match(ref, /^payroll_[a-z0-9]+_[a-z0-9]{10}$/);
});

Deno.test("payroll CSV: header, BOM, quotes, blank lines; each bad line named", () => {
  const p = parsePayrollCsv(
    `\uFEFFrecipient,amount,label\n${A},1.5,"Doe, Jane"\n\n${B},2\n0x12,3,x\n${A},1.1234567,y\n${A},1,a,extra\n${A},-1\n`,
  );
  assert.equal(p.fileError, undefined);
  assert.equal(p.recipients, undefined, "not runnable while a line is bad");
  assert.deepEqual(p.lines.map((l) => [l.line, l.error ?? "ok"]), [
    [2, "ok"],
    [4, "ok"],
    [5, "recipient must be a 0x address (40 hex characters; mixed case must be a valid checksum)."],
    [
      6,
      "amount must be a USDC amount (a string or number, at most 6 decimal places, not negative).",
    ],
    [7, "Expected 3 columns: recipient, amount, label."],
    [
      8,
      "amount must be a USDC amount (a string or number, at most 6 decimal places, not negative).",
    ],
  ]);
  assert.equal(p.lines[0].parsed?.label, "Doe, Jane");
  assert.equal(p.lines[1].parsed?.amount, 2_000_000n);
  assert.equal(p.lines[1].parsed?.label, null);
});

Deno.test("payroll CSV: a good file runs; zero amounts pass (they fail at run time)", () => {
  const p = parsePayrollCsv(`${A},10,Alice\n${B},0,Bob\n`);
  assert.deepEqual(p.recipients?.map((r) => [r.recipientSCA, r.amount, r.label]), [
    [A.toLowerCase(), 10_000_000n, "Alice"],
    [B.toLowerCase(), 0n, "Bob"],
  ]);
});

Deno.test("payroll CSV: not CSV, empty, too long", () => {
  assert.match(parsePayrollCsv(`"${A},1\n`).fileError ?? "", /not valid CSV/);
  assert.equal(
    parsePayrollCsv("recipient,amount,label\n\n").fileError,
    "The file has no recipients.",
  );
  const many = Array.from({ length: 5001 }, () => `${A},1`).join("\n");
  assert.match(parsePayrollCsv(many).fileError ?? "", /5001 lines; at most 5,000/);
});

Deno.test("payroll: the run's message counts in words that fit one recipient or many", async () => {
  const { runMessage } = await import("../../src/modules/payroll/payroll.service.ts");
  type B = Parameters<typeof runMessage>[0];
  const batch = (over: Partial<B>) =>
    ({
      batchRef: "payroll_x_y",
      status: "COMPLETED",
      recipientCount: 1,
      successCount: 1,
      failedCount: 0,
      pendingSignatureCount: 0,
      ...over,
    }) as B;
  assert.equal(runMessage(batch({})), "Paid the recipient.");
  assert.equal(runMessage(batch({ recipientCount: 2, successCount: 2 })), "Paid all 2 recipients.");
  assert.equal(
    runMessage(batch({ status: "FAILED", successCount: 0, failedCount: 1 })),
    "The recipient was not paid.",
  );
  assert.match(
    runMessage(batch({ status: "AWAITING_SIGNATURES", successCount: 0, pendingSignatureCount: 1 })),
    /^1 payment awaits your wallet's signature/,
  );
});

Deno.test("payroll run body: a mixed-case address with a wrong checksum is refused (a typo)", () => {
  const good = "0x7F9B92C89C392876D5b4B650133FF63F55Ced245";
  const typo = "0x7F9B92c89C392876D5B4B650133Ff63F55CED245";
  const body = (recipientSCA: string) => ({ recipients: [{ recipientSCA, amount: "1" }] });
  assert.equal(parseRunBody(body(good), "any").recipients[0].recipientSCA, good.toLowerCase());
  assert.equal(
    parseRunBody(body(good.toLowerCase()), "any").recipients[0].recipientSCA,
    good.toLowerCase(),
  );
  assert.throws(
    () => parseRunBody(body(typo), "any"),
    (e) =>
      e instanceof RunBodyError && (e as RunBodyError).extra.index === 0 &&
      /mixed case must be a valid checksum/.test(e.message),
  );
});
