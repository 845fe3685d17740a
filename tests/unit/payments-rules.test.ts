import assert from "node:assert/strict";
import {
  chainCode,
  effectiveStatus,
  newReference,
  REFERENCE_PATTERN,
} from "../../src/modules/payments/payments.rules.ts";
import { displayUsdc } from "../../src/money.ts";

Deno.test("payments: references are pay_ref_ + 20 base62 characters and fit a bytes32", () => {
  const seen = new Set<string>();
  for (let i = 0; i < 2000; i++) {
    const r = newReference();
    assert.match(r, /^pay_ref_[0-9A-Za-z]{20}$/);
    assert.ok(REFERENCE_PATTERN.test(r));
    assert.ok(new TextEncoder().encode(r).length <= 32);
    seen.add(r);
  }
  assert.equal(seen.size, 2000);
});

Deno.test("payments: a pending payment past its deadline reads as expired", () => {
  const at = new Date("2026-01-01T00:00:00Z");
  const p = { status: "PENDING" as const, expiresAt: at };
  assert.equal(effectiveStatus(p, new Date(at.getTime() - 1)), "PENDING");
  assert.equal(effectiveStatus(p, at), "EXPIRED");
  assert.equal(effectiveStatus({ ...p, status: "SUCCESS" }, new Date(at.getTime() + 1)), "SUCCESS");
  assert.equal(chainCode("production"), "Settle");
  assert.equal(chainCode("testnet"), "Settle_Testnet");
});

Deno.test("payments: amounts shown to people keep two decimals and every significant one", () => {
  assert.equal(displayUsdc(42_500_000n), "42.50");
  assert.equal(displayUsdc(1_000_000n), "1.00");
  assert.equal(displayUsdc(1_234_567n), "1.234567");
  assert.equal(displayUsdc(1n), "0.000001");
  assert.equal(displayUsdc(1_230_000n), "1.23");
  assert.equal(displayUsdc(1_234_567_000_000n), "1,234,567.00");
  assert.equal(displayUsdc(1_234_567_000_000n, { grouped: false }), "1234567.00");
  assert.equal(displayUsdc(1_234_550n, { places: 4 }), "1.2346");
});
