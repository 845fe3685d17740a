/** CCTP fee arithmetic, the attester's message filling and the CCTP configuration. Pure. */
import assert from "node:assert/strict";
import type { Hex } from "viem";
import {
  bpsFee,
  decodeMessage,
  fillMessage,
  grossForNet,
  parseBps,
} from "../../src/chain/cctp-message.ts";
import { parseChainConfig } from "../../src/chain/profiles.ts";

Deno.test("parseBps: exact decimals, never floats; anything else refused", () => {
  assert.deepEqual(parseBps("1"), { num: 1n, den: 10_000n });
  assert.deepEqual(parseBps("1.3"), { num: 13n, den: 100_000n });
  assert.deepEqual(parseBps(1.3), { num: 13n, den: 100_000n });
  assert.deepEqual(parseBps(0), { num: 0n, den: 10_000n });
  for (const bad of ["", "-1", "1e2", "0x10", "1,3", " ", "1.", ".5", "abc"]) {
    assert.equal(parseBps(bad), null, bad);
  }
});

Deno.test("bpsFee rounds up: a fee rounded down would fall short", () => {
  assert.equal(bpsFee(10_000_000n, parseBps("1")!), 1_000n);
  assert.equal(bpsFee(1n, parseBps("1")!), 1n);
  assert.equal(bpsFee(3_500_000n, parseBps("1.3")!), 455n);
  assert.equal(bpsFee(3_500_001n, parseBps("1.3")!), 456n);
  assert.equal(bpsFee(5_000_000n, parseBps("0")!), 0n);
});

Deno.test("grossForNet: the smallest burn that leaves the net amount after its fee", async () => {
  // Circle's getMinFeeAmount: floor(amount × minFee / 10^7), at least 1 when the switch is on.
  const circle = (minFee: bigint) => (x: bigint) => {
    const f = x * minFee / 10_000_000n;
    return Promise.resolve(minFee === 0n ? 0n : f === 0n ? 1n : f);
  };
  assert.deepEqual(await grossForNet(3_500_000n, circle(1000n)), { gross: 3_500_350n, fee: 350n });
  assert.deepEqual(await grossForNet(3_500_000n, circle(0n)), { gross: 3_500_000n, fee: 0n });
  for (const net of [1n, 999n, 9_999n, 123_456_789n]) {
    for (const minFee of [1n, 1000n, 77_777n]) {
      const { gross, fee } = await grossForNet(net, circle(minFee));
      assert.equal(fee, await circle(minFee)(gross));
      assert.ok(gross - fee >= net, `${net} ${minFee}`);
      assert.ok(gross - 1n - (await circle(minFee)(gross - 1n)) < net, "the smallest such burn");
    }
  }
});

Deno.test("fillMessage: nonce, finality and feeExecuted filled, everything else kept", () => {
  const header = "00000001" + "00000006" + "0000001a" + "00".repeat(32) + "11".repeat(32) +
    "22".repeat(32) + "00".repeat(32) + "000003e8" + "00000000";
  const body = "00000001" + "33".repeat(32) + "44".repeat(32) +
    (10_000_000n).toString(16).padStart(64, "0") + "55".repeat(32) +
    (2000n).toString(16).padStart(64, "0") + "00".repeat(32) + "00".repeat(32) + "beef";
  const sent = `0x${header}${body}` as Hex;
  const nonce = `0x${"ab".repeat(32)}` as Hex;
  const filled = fillMessage(sent, { nonce, finalityThresholdExecuted: 1000, feeExecuted: 1500n });
  const d = decodeMessage(filled)!;
  assert.deepEqual(
    [d.sourceDomain, d.destinationDomain, d.nonce, d.minFinalityThreshold],
    [6, 26, nonce, 1000],
  );
  assert.equal(d.finalityThresholdExecuted, 1000);
  assert.deepEqual(
    [d.decodedMessageBody!.amount, d.decodedMessageBody!.maxFee, d.decodedMessageBody!.feeExecuted],
    ["10000000", "2000", "1500"],
  );
  assert.equal(d.decodedMessageBody!.hookData, "0xbeef");
  assert.equal(filled.length, sent.length);
});

Deno.test("CCTP configuration: attester keys listed, fast fee in bps", () => {
  const key = (c: string) => `0x${c.repeat(64)}`;
  const parse = (env: Record<string, string>) => {
    const problems: string[] = [];
    const cfg = parseChainConfig(env, { baseUrl: "http://x", isProduction: false }, problems);
    return { cctp: cfg.cctp, problems };
  };
  const both = parse({
    CCTP_ATTESTER_KEY: key("a"),
    CCTP_ATTESTER_KEYS: `${key("b")}, ${key("a")}`,
  });
  assert.deepEqual(both.cctp.attesterKeys, [key("a"), key("b")], "the single key first, once");
  assert.equal(both.cctp.attesterKey, key("a"));
  assert.equal(both.cctp.fastFeeBps, "1");
  const bad = parse({ CCTP_ATTESTER_KEYS: "0x12", CCTP_FAST_FEE_BPS: "1e2" });
  assert.deepEqual(bad.problems, [
    "CCTP_ATTESTER_KEYS: must be a comma list of 0x-prefixed 32-byte hex keys",
    "CCTP_FAST_FEE_BPS: must be basis points, e.g. 1 or 1.3",
  ]);
  assert.deepEqual(parse({}).cctp.attesterKeys, []);
});
