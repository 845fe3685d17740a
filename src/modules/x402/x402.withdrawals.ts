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
import { createHash } from "node:crypto";
import { toFunctionSelector } from "viem";
import type { Deps } from "../../deps.ts";
import { DomainError } from "../../errors.ts";
import { checksum, lower } from "../../chain/address.ts";
import type { MerchantRow } from "../merchants/merchants.types.ts";
import { gatewayFields, gatewayView, requestIntent } from "./x402.gateway.ts";
import type { Signer } from "../../chain/sender.ts";
import { formatUsdcFixed as usdc } from "../../money.ts";
import { withClaim } from "../../db/claims.ts";
import { x402Profile } from "./x402.context.ts";
import { payerClaim, RELAY_WITHDRAW, relayWithdrawFamily, withdrawableNow } from "./x402.claims.ts";
import { whileWithdrawing } from "./x402.batched.mirror.ts";
import * as repo from "./x402.repo.ts";
import type { Address } from "./x402.types.ts";
import type { SignedWithdrawal } from "../../chain/gateway-withdrawals.ts";
import { nowSeconds, relayDeadlineOpen, relayWithdrawalTooSmall } from "./x402.rules.ts";
import type { PayerSignedWithdrawInput, PayerWithdrawalStartInput } from "./x402.schemas.ts";

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
      whileWithdrawing(deps, profile, who.address, who.intentKey, async (fence) => {
        const earlier = await deps.chain.intent(profile, who.intentKey);
        if (!earlier || earlier.status === "failed") {
          await startableNow(deps, profile, who.address, amount);
        }
        fence();
        return await deps.chain.gateway.initiateWithdrawal(profile, {
          from: who.from,
          account: who.account,
          amount,
          intentKey: who.intentKey,
        });
      }),
  );
  return {
    txHash: tx.txHash,
    explorerUrl: deps.chain.explorerTxUrl(profile, tx.txHash),
    amount: usdc(amount),
    ...await startedView(deps, profile, who.address),
  };
}

/**
 * What `address` may start withdrawing now: its available balance less its paid calls not yet
 * settled (read first: a settlement mined between the reads counts twice, which is safe).
 * Refuses `amount` above it (`x402_withdraw_start_exceeds`, with that balance).
 */
async function startableNow(
  deps: Deps,
  profile: ReturnType<typeof x402Profile>,
  address: Address,
  amount: bigint,
): Promise<bigint> {
  const pending = await repo.pendingAmount(deps.sql, deps.chain.chainId(profile), address);
  const { available } = await deps.chain.gateway.balance(profile, address);
  const free = available - pending;
  if (free < amount) {
    throw new DomainError("x402_withdraw_start_exceeds", { balance: usdc(free > 0n ? free : 0n) });
  }
  return free;
}

/** After a start: when what is withdrawing matures, and the balances. */
async function startedView(
  deps: Deps,
  profile: ReturnType<typeof x402Profile>,
  address: Address,
) {
  const [b, at] = await Promise.all([
    deps.chain.gateway.balance(profile, address),
    deps.chain.gateway.withdrawableAt(profile, address),
  ]);
  return {
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

/**
 * An outside payer's withdrawal, signed and relayed (POST /api/x402/payer/withdraw/start and
 * /api/x402/payer/withdraw): the account signs `InitiateWithdrawal` or `Withdraw` under the
 * vault's domain and one of our relayers sends it, so a wallet with no gas takes its balance out
 * as it put it in (POST /api/x402/payer/deposit). Public: the signature is the only credential,
 * and it moves only the signer's balance, where the signer said. The rules are the managed
 * payers' (under the payer's claim, its paid calls held meanwhile, never what a paid call not yet
 * settled needs), and everything the vault would refuse is refused before anything is sent.
 * Once per signed withdrawal: a retry, or a copy sent at the same time, answers its transaction.
 */
async function relaySigned(
  deps: Deps,
  w: SignedWithdrawal,
  family: string,
  check: (profile: ReturnType<typeof x402Profile>) => Promise<void>,
) {
  const profile = x402Profile(deps);
  if (!(await deps.chain.gateway.signedWithdrawalValid(profile, w))) {
    throw new DomainError("x402_relay_withdraw_signature");
  }
  // Read once before the payer's claim, where a vault from before signed withdrawals (which has
  // no such nonces) is told apart with nothing held; read again under it, where it counts.
  await deps.chain.gateway.withdrawalNonceUsed(profile, w.account, w.nonce);
  const digest = createHash("sha256").update(w.signature).digest("hex");
  const intentKey = `${family}:${w.account}:${w.nonce}:${digest}`;
  // A copy or a retry of a withdrawal already sent answers its transaction with nothing held: a
  // signed withdrawal is public once given, and replaying it must not keep refusing the payer's
  // paid calls.
  const sent = await deps.chain.intent(profile, intentKey);
  const tx = sent && sent.status !== "failed"
    ? await deps.chain.gateway.relaySignedWithdrawal(profile, w, intentKey)
    : await withClaim(
      deps.sql,
      payerClaim(deps.chain.chainId(profile), w.account),
      () =>
        whileWithdrawing(deps, profile, w.account, intentKey, async (fence) => {
          const earlier = await deps.chain.intent(profile, intentKey);
          if (!earlier || earlier.status === "failed") {
            if (!relayDeadlineOpen(w.validBefore, nowSeconds(deps.clock.now()))) {
              throw new DomainError("x402_relay_deadline");
            }
            if (await deps.chain.gateway.withdrawalNonceUsed(profile, w.account, w.nonce)) {
              throw new DomainError("x402_relay_used");
            }
            await check(profile);
          }
          fence();
          return await deps.chain.gateway.relaySignedWithdrawal(profile, w, intentKey);
        }),
    );
  return {
    txHash: tx.txHash,
    explorerUrl: deps.chain.explorerTxUrl(profile, tx.txHash),
    amount: usdc(w.value),
    payer: checksum(w.account),
    network: `eip155:${deps.chain.chainId(profile)}`,
  };
}

/** The intents' families of relayed withdrawals (an open one counts against what is left). */
const RELAY_START = "x402-payer-relay-withdraw-start";

/** POST /api/x402/payer/withdraw/start: a signed `InitiateWithdrawal`, on a vault with a delay. */
export async function relayPayerWithdrawalStart(deps: Deps, input: PayerWithdrawalStartInput) {
  const profile = x402Profile(deps);
  if ((await deps.chain.gateway.withdrawalDelay(profile)) === 0n) {
    throw new DomainError("x402_withdraw_no_delay");
  }
  const w: SignedWithdrawal = { kind: "start", ...input.authorization, signature: input.signature };
  const sent = await relaySigned(deps, w, RELAY_START, async () => {
    const free = await startableNow(deps, profile, w.account, w.value);
    if (relayWithdrawalTooSmall(w.value, free)) {
      throw new DomainError("x402_relay_withdraw_minimum");
    }
  });
  return { ...sent, ...await startedView(deps, profile, w.account) };
}

/**
 * The vault's refusal of a withdrawal above what is withdrawable (a race with the account's own
 * calls): by name from a wallet, or as the inner revert data of an agent account's
 * `CallFailed(vault, reason)`.
 */
export const NOT_WITHDRAWABLE = new RegExp(
  `NotWithdrawable|${toFunctionSelector("NotWithdrawable(uint256,uint256)")}`,
  "i",
);

/** POST /api/x402/payer/withdraw: a signed `Withdraw` of what the account can take now. */
export async function relayPayerWithdraw(deps: Deps, input: PayerSignedWithdrawInput) {
  const profile = x402Profile(deps);
  const w: SignedWithdrawal = {
    kind: "withdraw",
    ...input.authorization,
    signature: input.signature,
  };
  const exceeds = (can: bigint) =>
    new DomainError("x402_withdraw_exceeds", { withdrawable: usdc(can > 0n ? can : 0n) });
  let sent;
  try {
    sent = await relaySigned(deps, w, RELAY_WITHDRAW, async () => {
      const can = await withdrawableNow(deps, profile, w.account, [
        relayWithdrawFamily(w.account),
      ]);
      if (can < w.value) throw exceeds(can);
      if (relayWithdrawalTooSmall(w.value, can)) {
        throw new DomainError("x402_relay_withdraw_minimum");
      }
    });
  } catch (e) {
    // Taken by the account's own call between our check and the node's estimate.
    if (
      e instanceof DomainError && e.code === "chain_reverted" &&
      NOT_WITHDRAWABLE.test(e.details.hint ?? "")
    ) throw exceeds((await deps.chain.gateway.balance(profile, w.account)).withdrawable);
    throw e;
  }
  return {
    ...sent,
    recipient: checksum(w.to),
    gateway: await gatewayView(deps, profile, w.account),
  };
}
