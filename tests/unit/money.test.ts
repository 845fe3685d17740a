import assert from "node:assert/strict";
import fc from "fast-check";
import { z } from "zod";
import {
  AmountError,
  type AmountErrorReason,
  formatUsdc,
  parseUsdc,
  parseUsdcLoose,
  roundUsdcTo,
  tryParseUsdc,
  USDC_DECIMALS,
  USDC_MAX_UNITS,
  USDC_UNIT,
  usdcAmount,
  usdcAmountLoose,
  usdcToNumber,
} from "../../src/money.ts";

const MAX = 2n ** 63n - 1n;
/** The largest amount a request may carry: what a JSON number holds exactly. */
// The largest amount below 2^33 USDC: every six-decimal amount up to it survives a JSON number.
const MAX_INPUT = 2n ** 33n * 1_000_000n - 1n;

function reasonOf(fn: () => unknown): AmountErrorReason | "no error" {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof AmountError, `expected AmountError, got ${e}`);
    return e.reason;
  }
  return "no error";
}

Deno.test("amount: constants", () => {
  assert.equal(USDC_DECIMALS, 6);
  assert.equal(USDC_UNIT, 1_000_000n);
  assert.equal(USDC_MAX_UNITS, MAX_INPUT);
});

Deno.test("amount: parseUsdc accepts exact decimal strings", () => {
  const cases: [string, bigint][] = [
    ["1", 1_000_000n],
    ["10.5", 10_500_000n],
    ["10.50", 10_500_000n],
    ["0.000001", 1n],
    ["1.000000", 1_000_000n],
    ["123456.789012", 123_456_789_012n],
    ["007.5", 7_500_000n], // leading zeros: accepted, exact
    ["0000000000000000000000000000000000001", 1_000_000n],
    ["8589934591.999999", MAX_INPUT],
  ];
  for (const [input, units] of cases) assert.equal(parseUsdc(input), units, input);
});

Deno.test("amount: parseUsdc rejection matrix names the reason", () => {
  const cases: [string, AmountErrorReason][] = [
    ["", "empty"],
    ["1e6", "format"],
    ["1E6", "format"],
    ["1.5e2", "format"],
    ["-1", "negative"],
    ["-0.5", "negative"],
    ["+1", "format"],
    [" 1", "format"],
    ["1 ", "format"],
    ["1 000", "format"],
    ["\t1", "format"],
    ["1\n", "format"],
    [" ", "format"],
    ["1,000", "format"],
    ["1_000", "format"],
    ["1,5", "format"],
    ["0x10", "format"],
    ["NaN", "format"],
    ["Infinity", "format"],
    ["-Infinity", "negative"],
    [".5", "format"],
    ["5.", "format"],
    [".", "format"],
    ["1.2.3", "format"],
    ["abc", "format"],
    ["١٢٣", "format"], // Arabic-Indic digits
    ["１２３", "format"], // full-width digits
    ["1.５", "format"],
    ["۱", "format"], // Extended Arabic-Indic digit
    ["1.0000001", "too_many_decimals"],
    ["0.0000000", "too_many_decimals"],
    ["1.1234567890", "too_many_decimals"],
    ["0", "zero"],
    ["0.0", "zero"],
    ["000.000000", "zero"],
    ["8589934592", "too_large"],
    ["9007199254.740991", "too_large"],
    ["9007199254.740992", "too_large"],
    ["9007199255", "too_large"],
    ["999999999999.999999", "too_large"],
    ["9223372036854.775807", "too_large"],
    ["1" + "0".repeat(10_000), "too_large"],
  ];
  for (const [input, reason] of cases) {
    assert.equal(reasonOf(() => parseUsdc(input)), reason, JSON.stringify(input));
    assert.equal(tryParseUsdc(input), null, JSON.stringify(input));
  }
});

Deno.test("amount: parseUsdc options", () => {
  assert.equal(parseUsdc("0", { allowZero: true }), 0n);
  assert.equal(parseUsdc("0.000000", { allowZero: true }), 0n);
  assert.equal(parseUsdc("100", { max: 100_000_000n }), 100_000_000n);
  assert.equal(reasonOf(() => parseUsdc("100.000001", { max: 100_000_000n })), "too_large");
  assert.equal(reasonOf(() => parseUsdc("1000", { max: 100_000_000n })), "too_large");
  assert.equal(reasonOf(() => parseUsdc("0.000001", { max: 0n })), "too_large");
  assert.throws(() => parseUsdc("1", { max: -1n }), RangeError);
  // Not a string at runtime (a JSON number slipping past types).
  assert.equal(reasonOf(() => parseUsdc(5 as unknown as string)), "type");
});

Deno.test("amount: tryParseUsdc", () => {
  assert.equal(tryParseUsdc("2.5"), 2_500_000n);
  assert.equal(tryParseUsdc("0"), null);
  assert.equal(tryParseUsdc("0", { allowZero: true }), 0n);
  for (const v of [1, 1n, null, undefined, {}, ["1"], true]) assert.equal(tryParseUsdc(v), null);
});

Deno.test("amount: parseUsdcLoose", () => {
  assert.equal(parseUsdcLoose("1.5"), 1_500_000n);
  assert.equal(parseUsdcLoose(1.5), 1_500_000n);
  assert.equal(parseUsdcLoose(0.000001), 1n);
  assert.equal(parseUsdcLoose(100), 100_000_000n);
  assert.equal(parseUsdcLoose(0.1), 100_000n);
  assert.equal(parseUsdcLoose(123456789.123456), 123_456_789_123_456n); // 15 digits
  assert.equal(parseUsdcLoose(0, { allowZero: true }), 0n);
  assert.equal(parseUsdcLoose(-0, { allowZero: true }), 0n);
  const cases: [unknown, AmountErrorReason][] = [
    [NaN, "format"],
    [Infinity, "format"],
    [-Infinity, "format"],
    [-1, "negative"],
    [-0.5, "negative"],
    [0, "zero"],
    [-0, "zero"],
    [1e21, "too_large"],
    [1e-7, "too_many_decimals"],
    [0.0000001, "too_many_decimals"],
    [1.0000001, "too_many_decimals"],
    [0.1 + 0.2, "too_many_decimals"],
    [1e15, "too_large"],
    [1234567890.123456, "imprecise"], // 16 significant digits: may be rounded already
    ["1e6", "format"],
    [" 1", "format"],
    [1n, "type"],
    [null, "type"],
    [undefined, "type"],
    [{}, "type"],
    [true, "type"],
  ];
  for (const [input, reason] of cases) {
    assert.equal(reasonOf(() => parseUsdcLoose(input)), reason, String(input));
  }
});

Deno.test("amount: formatUsdc", () => {
  const cases: [bigint, string, string][] = [
    [1_500_000n, "1.5", "1.500000"],
    [1_000_000n, "1", "1.000000"],
    [1n, "0.000001", "0.000001"],
    [0n, "0", "0.000000"],
    [10_050_000n, "10.05", "10.050000"],
    [123_456_789_012n, "123456.789012", "123456.789012"],
    [MAX, "9223372036854.775807", "9223372036854.775807"],
    [-1_500_000n, "-1.5", "-1.500000"],
    [-1n, "-0.000001", "-0.000001"],
    [-2_000_000n, "-2", "-2.000000"],
  ];
  for (const [units, trim, fixed] of cases) {
    assert.equal(formatUsdc(units), trim);
    assert.equal(formatUsdc(units, { decimals: "trim" }), trim);
    assert.equal(formatUsdc(units, { decimals: "fixed" }), fixed);
  }
  assert.throws(() => formatUsdc(5 as unknown as bigint), TypeError);
});

Deno.test("amount: usdcToNumber", () => {
  assert.equal(usdcToNumber(1_500_000n), 1.5);
  assert.equal(usdcToNumber(1n), 0.000001);
  assert.equal(usdcToNumber(0n), 0);
  assert.equal(usdcToNumber(-2_250_000n), -2.25);
  assert.equal(usdcToNumber(100_100_000n), 100.1);
});

Deno.test("amount: roundUsdcTo rounds half away from zero in bigint arithmetic", () => {
  const cases: [bigint, number, string][] = [
    [1_234_550n, 4, "1.2346"],
    [1_234_549n, 4, "1.2345"],
    [1_234_500n, 4, "1.2345"],
    [1_000_050n, 4, "1.0001"],
    [1_000_049n, 4, "1"],
    [999_950n, 4, "1"],
    [0n, 4, "0"],
    [1n, 4, "0"],
    [50n, 4, "0.0001"],
    [-1_234_550n, 4, "-1.2346"],
    [-1_234_549n, 4, "-1.2345"],
    [2_500_000n, 0, "3"],
    [2_499_999n, 0, "2"],
    [123_456n, 6, "0.123456"],
    [MAX, 4, "9223372036854.7758"],
  ];
  for (const [units, places, text] of cases) {
    assert.equal(roundUsdcTo(units, places), text, `${units} @ ${places}`);
  }
  assert.equal(roundUsdcTo(1_500_000n, 4, { decimals: "fixed" }), "1.5000");
  assert.equal(roundUsdcTo(1_500_000n, 0, { decimals: "fixed" }), "2");
  for (const bad of [-1, 7, 1.5, NaN]) assert.throws(() => roundUsdcTo(1n, bad), RangeError);
});

Deno.test("amount: zod schemas", () => {
  const schema = z.object({ amount: usdcAmount("Invalid amount") });
  assert.deepEqual(schema.parse({ amount: "12.34" }), { amount: 12_340_000n });
  for (const bad of ["1e6", "-1", "0", "1.0000001", "", 12, null, undefined]) {
    const r = schema.safeParse({ amount: bad });
    assert.equal(r.success, false, String(bad));
    assert.equal(r.error!.issues.length, 1);
    assert.equal(r.error!.issues[0].message, "Invalid amount", String(bad));
    assert.deepEqual(r.error!.issues[0].path, ["amount"]);
  }
  // Default messages come from AmountError; options pass through.
  const plain = usdcAmount({ allowZero: true, max: 10n * USDC_UNIT });
  assert.equal(plain.parse("0"), 0n);
  const tooMany = plain.safeParse("1.0000001");
  assert.equal(tooMany.error?.issues[0].message, "amount has more than 6 decimal places");
  assert.equal(plain.safeParse("10.000001").success, false);

  const loose = usdcAmountLoose("Invalid amount");
  assert.equal(loose.parse(2.5), 2_500_000n);
  assert.equal(loose.parse("2.5"), 2_500_000n);
  for (const bad of [0.1 + 0.2, -1, "abc", true, null]) {
    const r = loose.safeParse(bad);
    assert.equal(r.success, false, String(bad));
    assert.equal(r.error!.issues[0].message, "Invalid amount");
  }
});

// ---- properties ----

const RUNS = 3000;
const units = fc.bigInt({ min: 0n, max: MAX_INPUT });
const digits = (min: number, max: number) =>
  fc.string({ unit: fc.constantFrom(..."0123456789"), minLength: min, maxLength: max });

Deno.test("amount property: parse(format(x)) === x, trim and fixed", () => {
  fc.assert(
    fc.property(units, (x) => {
      assert.equal(parseUsdc(formatUsdc(x), { allowZero: true }), x);
      assert.equal(parseUsdc(formatUsdc(x, { decimals: "fixed" }), { allowZero: true }), x);
    }),
    { numRuns: RUNS },
  );
});

Deno.test("amount property: format(parse(s)) is s normalised", () => {
  const valid = fc.tuple(digits(1, 9), fc.option(digits(1, 6), { nil: undefined }));
  fc.assert(
    fc.property(valid, ([int, frac]) => {
      const s = frac === undefined ? int : `${int}.${frac}`;
      const x = parseUsdc(s, { allowZero: true });
      const nInt = int.replace(/^0+(?=\d)/, "");
      const nFrac = (frac ?? "").replace(/0+$/, "");
      assert.equal(formatUsdc(x), nFrac === "" ? nInt : `${nInt}.${nFrac}`);
      assert.equal(x === 0n, /^[0]+$/.test(int + (frac ?? "")));
    }),
    { numRuns: RUNS },
  );
});

Deno.test("amount property: 7 or more decimals always throw", () => {
  fc.assert(
    fc.property(digits(1, 20), digits(7, 30), (int, frac) => {
      const reason = reasonOf(() => parseUsdc(`${int}.${frac}`, { allowZero: true }));
      assert.equal(reason, "too_many_decimals");
    }),
    { numRuns: RUNS },
  );
});

Deno.test("amount property: parseUsdcLoose round-trips numbers with <= 6 decimals", () => {
  // Up to 15 significant digits: every such decimal survives as a double.
  fc.assert(
    fc.property(fc.bigInt({ min: 0n, max: 10n ** 15n - 1n }), (x) => {
      const n = usdcToNumber(x);
      assert.equal(parseUsdcLoose(n, { allowZero: true }), x);
    }),
    { numRuns: RUNS },
  );
});

Deno.test("amount property: arbitrary strings either parse exactly or throw AmountError", () => {
  fc.assert(
    fc.property(fc.string({ maxLength: 24 }), (s) => {
      const r = reasonOf(() => parseUsdc(s, { allowZero: true }));
      const ok = /^[0-9]+(\.[0-9]{1,6})?$/.test(s);
      assert.equal(
        r === "no error",
        ok && parseUsdc(s, { allowZero: true, max: 2n ** 256n }) <= MAX,
      );
    }),
    { numRuns: RUNS },
  );
});

Deno.test("amount: every amount up to the bound survives a JSON number; one above does not", () => {
  const exact = (units: bigint) => {
    const back = String(usdcToNumber(units));
    const [w, f = ""] = back.split(".");
    return BigInt(w) * 1_000_000n + BigInt((f + "000000").slice(0, 6)) === units;
  };
  // The top of the range, where the spacing of doubles is closest to a millionth.
  for (let i = 0n; i < 20_000n; i++) assert.ok(exact(USDC_MAX_UNITS - i * 7_919n), `${i}`);
  assert.ok(exact(USDC_MAX_UNITS));
  // Past 2^33 USDC two amounts a base unit apart share a double (an outside audit's example).
  assert.equal(exact(9_007_199_254_740_991n), false);
});
