/**
 * Money: the one USDC amount parser and formatter. Inside the service money is always `bigint` base
 * units (6 decimals); strings and numbers exist only at the edges (requests and responses).
 *
 * Parsing is strict (DESIGN.md §4): `^[0-9]+(\.[0-9]{1,6})?$`, ASCII digits only, and a value is
 * never rounded. viem's `parseUnits` rounds extra decimals, so it must not be used for input.
 *
 * Leading zeros in the integer part (`007.5`) are accepted: the value is still exact, and
 * rejecting them would break clients that zero-pad fixed-width amounts. Trailing zeros in the
 * fraction (`1.500000`) are accepted for the same reason.
 */
import { z } from "zod";

export const USDC_DECIMALS = 6;
export const USDC_UNIT = 1_000_000n;
/**
 * Default upper bound of an amount in a request: 8,589,934,591.999999 USDC, the largest below
 * 2^33 USDC. A JSON number (the spec's numeric `amount` fields) is a double: below 2^33 its
 * spacing is under a millionth, so every amount of six decimals comes back exactly; above, two
 * amounts a base unit apart can share a double (9007199254.740991 was answered as …740992). A
 * larger one was accepted and then shown wrong (docs/decisions.md, "Amounts a JSON number
 * carries"; the bound was 2^53 − 1 base units until 2026-12-01).
 */
export const USDC_MAX_UNITS = 8_589_934_591_999_999n;

export type AmountErrorReason =
  | "type"
  | "empty"
  | "format"
  | "too_many_decimals"
  | "negative"
  | "too_large"
  | "zero"
  | "imprecise";

const REASON_TEXT: Record<AmountErrorReason, string> = {
  type: "amount must be a decimal string",
  empty: "amount is empty",
  format: "amount must be a decimal number such as 10 or 10.50",
  too_many_decimals: "amount has more than 6 decimal places",
  negative: "amount must not be negative",
  too_large: "amount is too large",
  zero: "amount must be greater than 0",
  imprecise: "amount has too many significant digits for a JSON number; send it as a string",
};

export class AmountError extends Error {
  override name = "AmountError";
  /** Stable machine-readable cause; the message is for people. */
  readonly reason: AmountErrorReason;
  constructor(reason: AmountErrorReason, message = REASON_TEXT[reason]) {
    super(message);
    this.reason = reason;
  }
}

export interface ParseUsdcOptions {
  /** Accept 0 (default false: payments must be greater than 0). */
  allowZero?: boolean;
  /** Largest accepted value in base units (default 2^63-1). */
  max?: bigint;
}

const STRICT = /^([0-9]+)(?:\.([0-9]{1,6}))?$/;
const TOO_MANY_DECIMALS = /^[0-9]+\.[0-9]{7,}$/;

/** Parses a USDC decimal string into base units, exactly, or throws `AmountError`. */
export function parseUsdc(input: string, opts: ParseUsdcOptions = {}): bigint {
  const max = opts.max ?? USDC_MAX_UNITS;
  if (typeof max !== "bigint" || max < 0n) throw new RangeError("max must be a bigint >= 0");
  if (typeof input !== "string") throw new AmountError("type");
  if (input === "") throw new AmountError("empty");
  const m = STRICT.exec(input);
  if (!m) {
    if (input.startsWith("-")) throw new AmountError("negative");
    if (TOO_MANY_DECIMALS.test(input)) throw new AmountError("too_many_decimals");
    throw new AmountError("format");
  }
  const intDigits = m[1].replace(/^0+(?=[0-9])/, "");
  // A longer integer part than max's is over max; checking first keeps a huge digit string
  // from becoming a huge bigint.
  if (intDigits.length > (max / USDC_UNIT).toString().length) throw new AmountError("too_large");
  const frac = (m[2] ?? "").padEnd(USDC_DECIMALS, "0");
  const units = BigInt(intDigits) * USDC_UNIT + BigInt(frac);
  if (units > max) throw new AmountError("too_large");
  if (units === 0n && !opts.allowZero) throw new AmountError("zero");
  return units;
}

/** `parseUsdc`, but `null` for anything that is not a valid amount string. */
export function tryParseUsdc(input: unknown, opts?: ParseUsdcOptions): bigint | null {
  if (typeof input !== "string") return null;
  try {
    return parseUsdc(input, opts);
  } catch (e) {
    if (e instanceof AmountError) return null;
    throw e;
  }
}

/** A JSON number can carry at most 15 significant decimal digits without any doubt. */
const MAX_NUMBER_DIGITS = 15;

/**
 * Accepts a decimal string, or a JSON number (the payroll spec allows "string or number").
 * A number is accepted only if it is finite, not negative, and its shortest decimal form
 * (`String(n)`) has no exponent, at most 6 decimals and at most 15 significant digits — the
 * last so that a number the client wrote is exactly the number we read (a double keeps any
 * 15-digit decimal exactly; with 16 or 17 digits it may already have been rounded). That
 * string is then parsed strictly.
 */
export function parseUsdcLoose(input: unknown, opts?: ParseUsdcOptions): bigint {
  if (typeof input === "string") return parseUsdc(input, opts);
  if (typeof input !== "number") throw new AmountError("type");
  if (!Number.isFinite(input)) throw new AmountError("format");
  if (input < 0) throw new AmountError("negative");
  const text = String(input); // -0 prints as "0"
  if (/e/i.test(text)) throw new AmountError(input >= 1 ? "too_large" : "too_many_decimals");
  const units = parseUsdc(text, opts);
  if (text.replace(".", "").replace(/^0+/, "").length > MAX_NUMBER_DIGITS) {
    throw new AmountError("imprecise");
  }
  return units;
}

export interface FormatUsdcOptions {
  /** "trim" (default): no trailing zeros, no dot for whole amounts; "fixed": always 6 places. */
  decimals?: "trim" | "fixed";
}

/** Base units to a decimal string: `1500000n` → "1.5" (or "1.500000" fixed). Exact. */
export function formatUsdc(units: bigint, opts: FormatUsdcOptions = {}): string {
  return formatScaled(units, USDC_DECIMALS, opts.decimals ?? "trim");
}

/** The spec's response amounts: always 6 places (`1500000n` → "1.500000"). */
export function formatUsdcFixed(units: bigint): string {
  return formatUsdc(units, { decimals: "fixed" });
}

/**
 * Base units to a JSON number, for the spec's numeric response fields at render time only.
 * Never compute with the result: from 2^33 USDC (about 8.6 billion) a double cannot hold every
 * six-decimal value exactly (`USDC_MAX_UNITS`).
 */
export function usdcToNumber(units: bigint): number {
  return Number(formatUsdc(units));
}

/**
 * Base units to a decimal string rounded half away from zero to `places` decimals (0–6), in
 * bigint arithmetic: `roundUsdcTo(1234550n, 4)` → "1.2346". The spec's merchant stats use it
 * for "totalVolume rounded to 4 places" (wrap in `Number()` for a JSON number).
 */
export function roundUsdcTo(units: bigint, places: number, opts: FormatUsdcOptions = {}): string {
  if (!Number.isInteger(places) || places < 0 || places > USDC_DECIMALS) {
    throw new RangeError(`places must be an integer from 0 to ${USDC_DECIMALS}`);
  }
  const step = 10n ** BigInt(USDC_DECIMALS - places);
  const abs = units < 0n ? -units : units;
  let q = abs / step;
  if ((abs % step) * 2n >= step) q += 1n;
  return formatScaled(units < 0n ? -q : q, places, opts.decimals ?? "trim");
}

/**
 * Money as people read it (pages, not API fields): thousands grouped, at least two decimals,
 * more only when the amount has them; `42500000n` → "42.50", `1234567000000n` → "1,234,567.00",
 * `1234567n` → "1.234567". With `places`, rounded first like `roundUsdcTo` (the stats' 4 places);
 * `grouped: false` leaves out the separators (the checkout page hands the text to its script).
 */
export function displayUsdc(
  units: bigint,
  opts: { places?: number; grouped?: boolean } = {},
): string {
  const decimal = opts.places === undefined ? formatUsdc(units) : roundUsdcTo(units, opts.places);
  const [whole, frac = ""] = decimal.split(".");
  const shown = opts.grouped === false ? whole : whole.replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  return `${shown}.${frac.padEnd(2, "0")}`;
}

function formatScaled(value: bigint, places: number, mode: "trim" | "fixed"): string {
  if (typeof value !== "bigint") throw new TypeError("amount must be a bigint of base units");
  const sign = value < 0n ? "-" : "";
  const abs = value < 0n ? -value : value;
  const unit = 10n ** BigInt(places);
  const whole = (abs / unit).toString();
  let frac = places === 0 ? "" : (abs % unit).toString().padStart(places, "0");
  if (mode === "trim") frac = frac.replace(/0+$/, "");
  return sign + whole + (frac === "" ? "" : "." + frac);
}

export interface UsdcSchemaOptions extends ParseUsdcOptions {
  /** Text of the zod issue for an invalid amount; default: the AmountError's own text. */
  message?: string;
}

/**
 * A zod schema for a request amount: a strict USDC decimal string in, base-unit bigint out.
 * `amount: usdcAmount(M.invalidAmount)` or `usdcAmount({ message, allowZero, max })`.
 */
export function usdcAmount(options: string | UsdcSchemaOptions = {}) {
  const opts = typeof options === "string" ? { message: options } : options;
  return z
    .string({ error: opts.message ?? REASON_TEXT.type })
    .describe("USDC amount: a decimal string with up to 6 decimal places")
    .transform((value, ctx) => toUnits(() => parseUsdc(value, opts), opts.message, ctx));
}

/** As `usdcAmount`, but also accepts a JSON number under `parseUsdcLoose`'s rules (payroll). */
export function usdcAmountLoose(options: string | UsdcSchemaOptions = {}) {
  const opts = typeof options === "string" ? { message: options } : options;
  return z
    .union([z.string(), z.number()], { error: opts.message ?? REASON_TEXT.type })
    .describe("USDC amount: a decimal string (or number) with up to 6 decimal places")
    .transform((value, ctx) => toUnits(() => parseUsdcLoose(value, opts), opts.message, ctx));
}

function toUnits(
  parse: () => bigint,
  message: string | undefined,
  ctx: z.core.$RefinementCtx,
): bigint {
  try {
    return parse();
  } catch (e) {
    if (!(e instanceof AmountError)) throw e;
    ctx.addIssue({ code: "custom", message: message ?? e.message, params: { reason: e.reason } });
    return z.NEVER;
  }
}
