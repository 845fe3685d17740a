/**
 * The stream formula, the contract's own (StreamVault.accruedAt): accrued = min(rate × elapsed,
 * deposit) in base units, elapsed in whole seconds from the start block's timestamp to `now`
 * (or to stoppedAt once stopped or completed). Pure bigint arithmetic, no floats.
 */
import { roundUsdcTo, usdcToNumber } from "../../money.ts";

export interface StreamTerms {
  rate: bigint;
  deposit: bigint;
  startedAt: Date;
  stoppedAt: Date | null;
  status: "ACTIVE" | "STOPPED" | "COMPLETED";
}

const seconds = (d: Date) => BigInt(Math.floor(d.getTime() / 1000));

export function elapsedSeconds(s: StreamTerms, now: Date): bigint {
  const end = s.status === "ACTIVE" || !s.stoppedAt ? seconds(now) : seconds(s.stoppedAt);
  const e = end - seconds(s.startedAt);
  return e > 0n ? e : 0n;
}

export function accrued(s: StreamTerms, now: Date): bigint {
  if (s.status === "COMPLETED") return s.deposit;
  const a = s.rate * elapsedSeconds(s, now);
  return a > s.deposit ? s.deposit : a;
}

/** Seconds until the deposit is fully streamed: ceil(deposit / rate). */
export function durationSeconds(rate: bigint, deposit: bigint): bigint {
  return (deposit + rate - 1n) / rate;
}

export interface Derived {
  currentStreamed: bigint;
  remainingBalance: bigint;
  secondsRemaining: bigint;
  /** Hundredths of a percent, rounded half up. */
  percentHundredths: bigint;
}

export function derive(s: StreamTerms, now: Date): Derived {
  const current = accrued(s, now);
  const remaining = s.deposit - current;
  const secondsRemaining = s.status === "ACTIVE" ? (remaining + s.rate - 1n) / s.rate : 0n;
  const percentHundredths = (current * 20_000n + s.deposit) / (2n * s.deposit);
  return {
    currentStreamed: current,
    remainingBalance: remaining,
    secondsRemaining,
    percentHundredths,
  };
}

/** percentComplete as the spec's number with 2 places. */
export function percentNumber(hundredths: bigint): number {
  return Number(roundUsdcTo(hundredths * 10_000n, 6));
}

/** `stream_<base36 timestamp>_<random>`. */
export function newReference(now: Date): string {
  const random = Array.from(crypto.getRandomValues(new Uint8Array(8)))
    .map((b) => (b % 36).toString(36)).join("");
  return `stream_${now.getTime().toString(36)}_${random}`;
}

/** The stop's message: what streamed in all, what this stop paid, what went back to the sender. */
export function stopMessage(
  r: { totalStreamed: bigint; paidAtStop: bigint; refundedToSender: bigint },
): string {
  const earlier = r.totalStreamed > r.paidAtStop
    ? ` (${usdcToNumber(r.paidAtStop)} USDC sent now; the rest was withdrawn before)`
    : "";
  return `Stream stopped. ${usdcToNumber(r.totalStreamed)} USDC went to the receiver${earlier} ` +
    `and ${usdcToNumber(r.refundedToSender)} USDC was refunded to the sender.`;
}
