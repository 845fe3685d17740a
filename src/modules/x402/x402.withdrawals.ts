/**
 * Starting a withdrawal on a vault with a delay (`initiateWithdrawal`): what a seller or one of
 * the merchant's payers (a managed wallet, an agent's smart account) needs before the withdraw
 * routes can pay anything there, since the service holds their keys and the merchant cannot call
 * the vault itself. The amount moves from available to withdrawing and becomes withdrawable after
 * the vault's delay; POST /api/x402/seller/balance/withdraw and /api/x402/gateway/withdraw then
 * pay it. On a vault without a delay everything available is withdrawable already: refused.
 *
 * Only what no paid call still needs is started: available less the payer's charges accepted and
 * not yet settled, under the payer's claim and with its paid calls held meanwhile (the withdraw
 * routes' rules, x402.claims.ts), so a started withdrawal never waits on money a settlement takes.
 */
import type { Deps } from "../../deps.ts";
import { DomainError } from "../../errors.ts";
import { checksum, lower } from "../../chain/address.ts";
import type { MerchantRow } from "../merchants/merchants.types.ts";
import { gatewayFields, requestIntent } from "./x402.gateway.ts";
import type { Signer } from "../../chain/sender.ts";
import { formatUsdcFixed as usdc } from "../../money.ts";
import { withClaim } from "../../db/claims.ts";
import { x402Profile } from "./x402.context.ts";
import { payerClaim } from "./x402.claims.ts";
import { whileWithdrawing } from "./x402.batched.mirror.ts";
import * as repo from "./x402.repo.ts";
import type { Address } from "./x402.types.ts";

/** Whose withdrawal starts: the balance's owner, who signs, and the intent's family. */
export interface WithdrawalStarter {
  address: Address;
  from: Signer;
  /** An agent's smart account: its owner has it call the vault (`execute`). */
  account?: Address;
  intentKey: string;
}

export async function startWithdrawal(deps: Deps, who: WithdrawalStarter, amount: bigint) {
  const profile = x402Profile(deps);
  if ((await deps.chain.gateway.withdrawalDelay(profile)) === 0n) {
    throw new DomainError("x402_withdraw_no_delay");
  }
  const chainId = deps.chain.chainId(profile);
  const tx = await withClaim(
    deps.sql,
    payerClaim(chainId, who.address),
    () =>
      whileWithdrawing(deps, profile, who.address, async () => {
        const earlier = await deps.chain.intent(profile, who.intentKey);
        if (!earlier || earlier.status === "failed") {
          // The paid calls first: a settlement mined between the reads counts twice (safe).
          const pending = await repo.pendingAmount(deps.sql, chainId, who.address);
          const { available } = await deps.chain.gateway.balance(profile, who.address);
          const free = available - pending;
          if (free < amount) {
            throw new DomainError("x402_withdraw_start_exceeds", {
              balance: usdc(free > 0n ? free : 0n),
            });
          }
        }
        return await deps.chain.gateway.initiateWithdrawal(profile, {
          from: who.from,
          account: who.account,
          amount,
          intentKey: who.intentKey,
        });
      }),
  );
  const [b, at] = await Promise.all([
    deps.chain.gateway.balance(profile, who.address),
    deps.chain.gateway.withdrawableAt(profile, who.address),
  ]);
  return {
    txHash: tx.txHash,
    explorerUrl: deps.chain.explorerTxUrl(profile, tx.txHash),
    amount: usdc(amount),
    withdrawableAt: new Date(Number(at) * 1000).toISOString(),
    gateway: gatewayFields(b),
  };
}

/**
 * POST /api/x402/seller/balance/withdraw/start: the merchant's payout wallet starts withdrawing
 * `amount` of its gateway balance (a managed wallet: the service signs).
 */
export async function startSellerWithdrawal(
  deps: Deps,
  m: MerchantRow,
  input: { amount: bigint },
  requestKey?: string,
) {
  if (m.walletProvider !== "MANAGED" || !m.managedWalletId || !m.walletAddress) {
    throw new DomainError("withdraw_external_wallet");
  }
  const seller = lower(m.walletAddress);
  const started = await startWithdrawal(deps, {
    address: seller,
    from: { walletId: m.managedWalletId },
    intentKey: requestIntent("x402-withdraw-start", m.managedWalletId, requestKey, [
      m.id,
      input.amount,
    ]),
  }, input.amount);
  return { ...started, sellerAddress: checksum(seller) };
}

/**
 * The vault's withdrawal delay (seconds; 0: everything available is withdrawable) and when what
 * `address` has withdrawing matures (ISO 8601; null when it never started one).
 */
export async function vaultDelay(deps: Deps, address: string) {
  const profile = x402Profile(deps);
  const [seconds, at] = await Promise.all([
    deps.chain.gateway.withdrawalDelay(profile),
    deps.chain.gateway.withdrawableAt(profile, lower(address)),
  ]);
  return { seconds, withdrawableAt: at > 0n ? new Date(Number(at) * 1000).toISOString() : null };
}
