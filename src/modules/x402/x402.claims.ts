/**
 * One payer's gateway balance is spent by paid calls and withdrawals. Withdrawals take the
 * payer's claim (src/db/claims.ts: a row, not a held connection) until mined, so two never count
 * on the same balance. Paid calls reserve on the payer's mirror row instead (one statement under
 * its row lock: x402.repo.ts `claimGatewayAttempt`, x402.batched.repo.ts `reserveMany`), which a
 * withdrawal in flight marks (x402.batched.mirror.ts `whileWithdrawing`): a reservation is either
 * counted in the withdrawal's check or refused until it is mined, and a withdrawal never takes
 * what paid calls in flight will settle.
 */
import type { Deps } from "../../deps.ts";
import type { ProfileName } from "../../chain/profiles.ts";
import * as repo from "./x402.repo.ts";
import type { Address } from "./x402.types.ts";

export const payerClaim = (chainId: number, payer: string) =>
  `x402-payer:${chainId}:${payer.toLowerCase()}`;

/** The intents' family of an outside payer's relayed (signed) withdrawals, per account. */
export const RELAY_WITHDRAW = "x402-payer-relay-withdraw";
export const relayWithdrawFamily = (account: string) =>
  `${RELAY_WITHDRAW}:${account.toLowerCase()}:`;

/**
 * What the payer may withdraw now (under its claim): the vault's withdrawable, less its paid
 * calls in flight and the withdrawals a dead process left in flight (signed or broadcast, found
 * among the intents of `families`). The paid calls are read first: a settlement mined between
 * the two reads is then counted twice (a safe answer), never not at all.
 */
export async function withdrawableNow(
  deps: Deps,
  profile: ProfileName,
  payer: Address,
  families: string[],
): Promise<bigint> {
  const pending = await repo.pendingAmount(deps.sql, deps.chain.chainId(profile), payer);
  const [balance, open] = await Promise.all([
    deps.chain.gateway.balance(profile, payer),
    Promise.all(families.map((f) => deps.chain.openIntents(profile, f))),
  ]);
  const inFlight = open.flat().reduce(
    (sum, tx) => sum + deps.chain.gateway.withdrawnBy(profile, tx, payer),
    0n,
  );
  return balance.withdrawable - pending - inFlight;
}
