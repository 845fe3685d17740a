/** The gateway proof's window against our clock, and the upstream's time for a paid call. */
import assert from "node:assert/strict";
import { checkWindow } from "../../src/modules/x402/x402.rules.ts";
import { checkBatchedWindow } from "../../src/modules/x402/x402.batched.rules.ts";
import { UPSTREAM_TIMEOUT_MS, upstreamTimeoutMs } from "../../src/modules/x402/x402.context.ts";

const NOW = 1_800_000_000n;
const w = (validAfter: bigint, validBefore: bigint) =>
  checkWindow({ validAfter, validBefore }, NOW);

Deno.test("x402 window: validBefore must leave 6 s to settle and fit a stored bigint", () => {
  assert.equal(w(NOW - 5n, NOW + 300n), "ok");
  assert.equal(w(NOW - 5n, NOW + 6n), "ok");
  assert.equal(w(NOW - 5n, NOW + 5n), "too_soon");
  assert.equal(w(NOW - 5n, NOW), "lapsed", "validBefore passed: not the spec's 5-minute text");
  assert.equal(w(NOW - 301n, NOW + 300n), "expired");
  assert.equal(w(NOW + 3600n, NOW + 7200n), "not_yet_valid");
  assert.equal(w(NOW, NOW), "window_invalid");
  assert.equal(w(NOW - 5n, 2n ** 63n - 1n), "ok");
  assert.equal(w(NOW - 5n, 2n ** 63n), "too_far");
  assert.equal(w(NOW - 5n, 2n ** 255n), "too_far");
  const b = (validBefore: bigint) => checkBatchedWindow({ validAfter: NOW, validBefore }, NOW, 5);
  assert.equal(b(NOW + 86_400n), "ok");
  assert.equal(b(2n ** 255n), "too_short");
});

Deno.test("x402 upstream time: what is left before the settlement's 5 s margin, at most 30 s", () => {
  const nowMs = Number(NOW) * 1000;
  assert.equal(upstreamTimeoutMs(NOW + 300n, nowMs), UPSTREAM_TIMEOUT_MS);
  assert.equal(upstreamTimeoutMs(NOW + 8n, nowMs), 3_000);
  assert.equal(upstreamTimeoutMs(NOW + 8n, nowMs + 500), 2_500);
  assert.equal(upstreamTimeoutMs(NOW + 4n, nowMs), 0);
  assert.equal(upstreamTimeoutMs(2n ** 63n - 1n, nowMs), UPSTREAM_TIMEOUT_MS);
});
