/**
 * Cross-chain checkout from the shopper's own wallet, the common part: the payment and source
 * chain a request names, the burn a payment needs (its amount plus the CCTP fee, minted to its
 * payee, the reference as hook data), and the quote the page shows before the shopper confirms.
 * The relay and the report are in bridge.shopper.ts.
 */
import { jsonSafe } from "../../codec.ts";
import type { Deps } from "../../deps.ts";
import { DomainError } from "../../errors.ts";
import type { CheckoutBurn, SourceChainName } from "../../chain/index.ts";
import { checksum, isAddress, lower } from "../../chain/address.ts";
import { formatUsdc } from "../../money.ts";
import { loadPayment, paidOnChainUnderWay } from "../payments/payments.checkout.ts";
import type { PaymentRow } from "../payments/payments.rules.ts";
import { quote } from "./bridge.attestation.ts";
import {
  DESTINATION_CHAIN,
  DESTINATION_PROFILE,
  finalityOf,
  isSupportedSource,
  paymentHookData,
  type TransferSpeed,
} from "./bridge.rules.ts";

/** Authorizations are asked for this long (or until the payment expires, if sooner). */
const AUTHORIZATION_TTL_SECONDS = 30n * 60n;

export const usdc = (units: bigint) => formatUsdc(units, { decimals: "fixed" });
export const unixSeconds = (d: Date) => BigInt(Math.floor(d.getTime() / 1000));

/** A payment on the bridge's destination chain, and the source chain, started. */
export async function target(deps: Deps, reference: string, sourceChain: string) {
  const p = await loadPayment(deps, reference);
  if (!p) throw new DomainError("payment_not_found");
  if (!isSupportedSource(sourceChain)) {
    throw new DomainError("bridge_source_unsupported", { chain: sourceChain.slice(0, 64) });
  }
  if (
    !deps.chain.has(DESTINATION_PROFILE) || p.chainId !== deps.chain.chainId(DESTINATION_PROFILE)
  ) {
    throw new DomainError("bridge_payment_not_bridgeable", {
      hint: "Only payments on Settle_Testnet can be paid from another chain.",
    });
  }
  const rt = await deps.chain.ensure(sourceChain);
  if (
    !rt.contracts.TokenMessengerV2 ||
    !deps.chain.runtime(DESTINATION_PROFILE).contracts.TokenMessengerV2
  ) {
    throw new DomainError("bridge_payment_not_bridgeable", {
      hint: `Bridging from ${rt.profile.label} is not available on this service.`,
    });
  }
  return { p, source: sourceChain as SourceChainName };
}

/**
 * Before anything is burned for a payment: it is still payable, and not being paid on its own
 * chain already (its relay sent, or a wallet's transaction reported): a burn now would pay the
 * merchant twice (an outside audit: both went through).
 */
export async function payable(deps: Deps, p: PaymentRow) {
  if (p.status !== "PENDING" || p.expiresAt <= deps.clock.now()) {
    throw new DomainError("payment_not_payable", { paymentStatus: p.status });
  }
  if (await paidOnChainUnderWay(deps, p)) throw new DomainError("payment_paid_by_other");
}

/** The burn a payment needs: its amount plus the quoted fee, minted to its payee. */
export function burnFor(
  deps: Deps,
  p: PaymentRow,
  q: { burnAmount: bigint; maxFee: bigint },
  speed: TransferSpeed,
): CheckoutBurn {
  return {
    amount: q.burnAmount,
    destinationDomain: deps.chain.profileConfig(DESTINATION_PROFILE).cctpDomain!,
    mintRecipient: lower(p.payTo),
    maxFee: q.maxFee,
    minFinalityThreshold: finalityOf(speed),
    hookData: paymentHookData(p.reference),
  };
}

/**
 * What the page shows before the shopper confirms: the fee, the burn, the shopper's balance on
 * the source chain, and how they can pay: `signature` (one EIP-3009 signature, relayed by us:
 * our CheckoutBurner is on that chain and its USDC has EIP-3009) or `wallet` (approve + burn
 * from their wallet, which needs gas there). The wallet calls are always given (the fallback).
 */
export async function shopperQuote(
  deps: Deps,
  reference: string,
  input: { sourceChain: string; payer?: string; transferSpeed?: TransferSpeed },
) {
  const { p, source } = await target(deps, reference, input.sourceChain);
  await payable(deps, p);
  const speed = input.transferSpeed ?? "standard";
  const q = await quote(deps, {
    from: source,
    to: DESTINATION_PROFILE,
    amount: p.amount,
    speed,
    covers: "net",
  });
  const burn = burnFor(deps, p, q, speed);
  const ops = deps.chain.cctp.checkout;
  const oneSignature = await ops.oneSignature(source);
  const payer = input.payer === undefined
    ? null
    : isAddress(input.payer)
    ? lower(input.payer)
    : null;
  if (input.payer !== undefined && !payer) throw new DomainError("payer_address_invalid");
  let shopper = null;
  let authorization = null;
  let needsApproval = true;
  if (payer) {
    const [balance, allowance] = await Promise.all([
      deps.chain.usdcBalance(source, payer),
      ops.allowance(source, payer),
    ]);
    needsApproval = allowance < burn.amount;
    shopper = {
      address: checksum(payer),
      usdcBalance: usdc(balance),
      sufficient: balance >= burn.amount,
    };
    if (oneSignature) {
      const deadline = unixSeconds(deps.clock.now()) + AUTHORIZATION_TTL_SECONDS;
      const expiry = unixSeconds(p.expiresAt);
      authorization = jsonSafe(ops.authorization(source, burn, {
        from: payer,
        validAfter: 0n,
        validBefore: deadline < expiry ? deadline : expiry,
      }));
    }
  }
  const calls = ops.walletCalls(source, burn);
  return {
    sourceChain: { id: source, ...deps.chain.walletChain(source, deps.config.BASE_URL) },
    destinationChain: DESTINATION_CHAIN,
    amount: usdc(p.amount),
    burnAmount: usdc(burn.amount),
    fee: usdc(burn.amount - p.amount),
    maxFee: burn.maxFee.toString(),
    transferSpeed: speed,
    mode: oneSignature ? "signature" as const : "wallet" as const,
    payer: shopper,
    authorization,
    wallet: { needsApproval, approve: calls.approve, burn: calls.burn },
  };
}

/** Development: test USDC (and gas) for the connected wallet on a local source chain. */
export async function shopperFaucet(
  deps: Deps,
  reference: string,
  input: { sourceChain: string; address: unknown },
) {
  const { source } = await target(deps, reference, input.sourceChain);
  if (!isAddress(input.address)) throw new DomainError("payer_address_invalid");
  if (!deps.chain.isLocal(source)) throw new DomainError("dev_faucet_unavailable");
  const to = lower(input.address);
  const amount = 100_000_000n;
  await deps.chain.faucet(source, to, amount);
  return { amount: usdc(amount), usdcBalance: usdc(await deps.chain.usdcBalance(source, to)) };
}
