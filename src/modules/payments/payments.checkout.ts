/**
 * The payer's side of hosted checkout: what the page shows, what the payer signs, the gasless
 * relay, and for the fallback the router call to send and a payer-reported transaction to watch.
 */
import { jsonSafe } from "../../codec.ts";
import type { Deps } from "../../deps.ts";
import { DomainError } from "../../errors.ts";
import { checksum, isAddress, lower } from "../../chain/address.ts";
import { displayUsdc, formatUsdc } from "../../money.ts";
import * as repo from "./payments.repo.ts";
import { effectiveStatus, type PaymentRow, REFERENCE_PATTERN } from "./payments.rules.ts";
import { checkoutUrl } from "./payments.service.ts";
import type { ProfileName } from "../../chain/index.ts";
import { checkSubmittedQueue } from "./payments.queues.ts";
import type { RelayInput } from "./payments.schemas.ts";

/** Permits are valid this long after they are prepared. */
const PERMIT_TTL_SECONDS = 30 * 60;

export async function loadPayment(deps: Deps, reference: string): Promise<PaymentRow | null> {
  if (!REFERENCE_PATTERN.test(reference)) return null;
  return await repo.findByReference(deps.sql, reference);
}

/** What the hosted page shows. */
export function checkoutView(deps: Deps, p: PaymentRow) {
  const profile = deps.chain.profileOf(p.chainId);
  const rt = deps.chain.runtime(profile);
  const now = deps.clock.now();
  return {
    reference: p.reference,
    merchantName: p.merchantName ?? "",
    amount: displayUsdc(p.amount, { grouped: false }),
    currency: p.currency,
    description: p.description,
    status: effectiveStatus(p, now),
    payable: p.status === "PENDING" && p.expiresAt > now,
    expiresAt: p.expiresAt.toISOString(),
    secondsLeft: Math.max(0, Math.floor((p.expiresAt.getTime() - now.getTime()) / 1000)),
    payer: p.payer ? checksum(p.payer) : null,
    chainTxHash: p.chainTxHash,
    explorerUrl: p.chainTxHash ? deps.chain.explorerTxUrl(profile, p.chainTxHash) : null,
    settledAfterExpiry: p.settledAfterExpiry,
    failureReason: p.failureReason,
    url: checkoutUrl(deps, p.reference),
    devFaucet: devFaucetAvailable(deps, profile),
    // Payments on the testnet chain (the bridge's destination) can be paid from a source chain.
    crossChain: profile === "testnet" && p.status === "PENDING" && p.expiresAt > now
      ? {
        reference: p.reference,
        amount: formatUsdc(p.amount, { decimals: "fixed" }),
        payTo: checksum(p.payTo),
        devFaucet: deps.config.APP_ENV !== "production",
      }
      : null,
    chain: {
      profile,
      name: rt.profile.label,
      chainId: rt.chainId,
      chainIdHex: `0x${rt.chainId.toString(16)}`,
      rpcUrl: `${deps.config.BASE_URL}/rpc/${profile}`,
      explorerUrl: rt.profile.explorerUrl,
    },
  };
}

/** "Get test USDC" on the page: development and test only, and only on a local node. */
export function devFaucetAvailable(deps: Deps, profile: ProfileName): boolean {
  return deps.config.APP_ENV !== "production" && deps.chain.isLocal(profile);
}

/** Test USDC gives this much (or the payment's amount, if more). */
const DEV_FAUCET_USDC = 100_000_000n;

/** The page's "Get test USDC": mints to the connected wallet on the payment's local chain. */
export async function devFaucet(deps: Deps, reference: string, addressRaw: unknown) {
  const p = await loadPayment(deps, reference);
  if (!p) throw new DomainError("payment_not_found");
  const profile = deps.chain.profileOf(p.chainId);
  if (!devFaucetAvailable(deps, profile)) throw new DomainError("dev_faucet_unavailable");
  const to = payerAddress(addressRaw);
  const amount = p.amount > DEV_FAUCET_USDC ? p.amount : DEV_FAUCET_USDC;
  const { mint } = await deps.chain.faucet(profile, to, amount);
  return {
    amount: formatUsdc(amount),
    usdcBalance: formatUsdc(await deps.chain.usdcBalance(profile, to)),
    txHash: mint.txHash,
  };
}

async function payable(deps: Deps, reference: string): Promise<PaymentRow> {
  const p = await loadPayment(deps, reference);
  if (!p) throw new DomainError("payment_not_found");
  if (p.status !== "PENDING" || p.expiresAt <= deps.clock.now()) {
    throw new DomainError("payment_not_payable", {
      paymentStatus: effectiveStatus(p, deps.clock.now()),
    });
  }
  // Paid from another chain already (its transfer settles it when minted): a same-chain payment
  // now would pay the merchant twice (an outside audit: both went through).
  if (await repo.bridgeUnderWay(deps.sql, p.reference)) {
    throw new DomainError("payment_bridge_under_way");
  }
  return p;
}

/**
 * Whether this payment is being paid on its own chain already (its gasless relay sent, or a
 * wallet's router transaction reported and seen: a router call for this very reference, in the
 * pool or mined, not reverted; a hash anyone reported that is not one holds nothing back): the
 * bridge then starts no transfer for it.
 */
export async function paidOnChainUnderWay(deps: Deps, p: PaymentRow): Promise<boolean> {
  if (p.submittedTxHash) {
    const seen = await deps.chain.checkout.inspect(
      deps.chain.profileOf(p.chainId),
      p.submittedTxHash as `0x${string}`,
    ).catch(() => null);
    if (seen?.reference === p.reference && seen.status !== "reverted") return true;
  }
  const relayed = await deps.chain.transaction(
    deps.chain.profileOf(p.chainId),
    relayIntent(p.reference),
  );
  return relayed !== null && relayed.status !== "reverted";
}

function payerAddress(raw: unknown): `0x${string}` {
  if (!isAddress(raw)) throw new DomainError("payer_address_invalid");
  return lower(raw);
}

const unixSeconds = (d: Date) => BigInt(Math.floor(d.getTime() / 1000));

/** The order the router settles for a payment (what the service signs). */
function orderOf(p: PaymentRow) {
  return {
    reference: p.reference,
    payTo: p.payTo as `0x${string}`,
    amount: p.amount,
    validBefore: unixSeconds(p.expiresAt),
  };
}

/**
 * What the payer signs, and whether their balance covers the amount: the EIP-3009
 * authorization the service relays (gasless, valid until the permit TTL or the payment's
 * expiry, whichever is first), and the permit for the fallback where the payer sends the
 * router transaction.
 */
export async function payData(deps: Deps, reference: string, payerRaw: unknown) {
  const p = await payable(deps, reference);
  const payer = payerAddress(payerRaw);
  const profile = deps.chain.profileOf(p.chainId);
  const deadline = unixSeconds(deps.clock.now()) + BigInt(PERMIT_TTL_SECONDS);
  const expiry = unixSeconds(p.expiresAt);
  const authorization = deps.chain.checkout.authorization(profile, orderOf(p), {
    from: payer,
    validAfter: 0n,
    validBefore: deadline < expiry ? deadline : expiry,
  });
  const [balance, typed] = await Promise.all([
    deps.chain.usdcBalance(profile, payer),
    deps.chain.checkout.permit(profile, { owner: payer, value: p.amount, deadline }),
  ]);
  return {
    view: checkoutView(deps, p),
    payer: {
      address: checksum(payer),
      usdcBalance: formatUsdc(balance),
      sufficient: balance >= p.amount,
    },
    // Numbers as strings: JSON has no bigint, and wallets accept decimal strings.
    authorization: jsonSafe(authorization),
    permit: jsonSafe(typed),
  };
}

/**
 * Gasless checkout: relays the payer's EIP-3009 authorization from the operator. Every field is
 * checked against the payment first (a refusal signs and broadcasts nothing); the intent key is
 * the reference, so concurrent or repeated relays give one transaction.
 */
/** The intent of a payment's gasless relay: one per payment, whoever signed it. */
const relayIntent = (reference: string) => `checkout-relay:${reference}`;

export async function relayPayment(deps: Deps, reference: string, input: RelayInput) {
  const p = await payable(deps, reference);
  const profile = deps.chain.profileOf(p.chainId);
  const order = orderOf(p);
  const a = input.authorization;
  const expected = deps.chain.checkout.authorization(profile, order, {
    from: a.from,
    validAfter: a.validAfter,
    validBefore: a.validBefore,
  }).message;
  if (a.to !== lower(expected.to)) throw new DomainError("authorization_payee_mismatch");
  if (a.value !== p.amount) throw new DomainError("authorization_amount_mismatch");
  if (a.nonce !== expected.nonce.toLowerCase()) {
    throw new DomainError("authorization_reference_mismatch");
  }
  const now = unixSeconds(deps.clock.now());
  if (a.validBefore <= now) throw new DomainError("authorization_expired");
  if (a.validBefore > order.validBefore || a.validAfter > now) {
    throw new DomainError("authorization_window_invalid");
  }
  const auth = { from: a.from, validAfter: a.validAfter, validBefore: a.validBefore };
  if (!(await deps.chain.checkout.authorizedBy(profile, order, auth, input.signature))) {
    throw new DomainError("authorization_signature_invalid");
  }
  const intentKey = relayIntent(p.reference);
  // A repeated relay of a payment already relayed answers its transaction, balance or not; the
  // same payment relayed for another wallet (a second tab, a second shopper) is that wallet's:
  // this one is told so, not handed the other's transaction as its own (an outside audit).
  const relayed = await deps.chain.transaction(profile, intentKey);
  if (relayed) {
    if (deps.chain.checkout.relayedPayer(relayed.data) !== a.from) {
      throw new DomainError("payment_paid_by_other");
    }
  } else if ((await deps.chain.usdcBalance(profile, a.from)) < p.amount) {
    throw new DomainError("payer_balance_insufficient");
  }
  const tx = await deps.chain.checkout.relay(profile, {
    order,
    auth,
    signature: input.signature,
    intentKey,
  });
  // Two wallets at once: the relay that lost the race gets the winner's transaction.
  if (deps.chain.checkout.relayedPayer(tx.data) !== a.from) {
    throw new DomainError("payment_paid_by_other");
  }
  await watchSubmitted(deps, p.id, tx.txHash);
  return {
    txHash: tx.txHash,
    explorerUrl: deps.chain.explorerTxUrl(profile, tx.txHash),
    status: p.status,
  };
}

/** The router call that settles the payment with the payer's permit signature. */
export async function payCall(deps: Deps, reference: string, body: Record<string, unknown>) {
  const p = await payable(deps, reference);
  const payer = payerAddress(body.payer);
  const signature = body.signature;
  const deadline = body.deadline;
  if (typeof signature !== "string" || !/^0x[0-9a-fA-F]{130}$/.test(signature)) {
    throw new DomainError("permit_signature_invalid");
  }
  if (typeof deadline !== "string" || !/^\d{1,12}$/.test(deadline)) {
    throw new DomainError("permit_signature_invalid");
  }
  const profile = deps.chain.profileOf(p.chainId);
  // A gasless payment relayed for a wallet is on its way: a second wallet's own transaction
  // would revert, its gas spent for nothing.
  const relayed = await deps.chain.transaction(profile, relayIntent(p.reference));
  if (relayed && deps.chain.checkout.relayedPayer(relayed.data) !== payer) {
    throw new DomainError("payment_paid_by_other");
  }
  const signed = await deps.chain.checkout.order(profile, orderOf(p));
  return {
    to: deps.chain.checkout.routerAddress(profile),
    data: deps.chain.checkout.calldata(signed, BigInt(deadline), signature as `0x${string}`),
    chainIdHex: `0x${deps.chain.chainId(profile).toString(16)}`,
  };
}

/** The payer's wallet sent the router transaction: watch it so a revert is not left unseen. */
export async function reportSubmitted(deps: Deps, reference: string, txHash: unknown) {
  if (typeof txHash !== "string" || !/^0x[0-9a-fA-F]{64}$/.test(txHash)) {
    throw new DomainError("tx_hash_invalid");
  }
  const p = await loadPayment(deps, reference);
  if (!p) throw new DomainError("payment_not_found");
  await watchSubmitted(deps, p.id, txHash);
  return { status: p.status };
}

async function watchSubmitted(deps: Deps, paymentId: string, txHash: string) {
  await deps.sql.begin(async (tx) => {
    if (await repo.recordSubmitted(tx, paymentId, txHash.toLowerCase(), deps.clock.now())) {
      await deps.queue.send(checkSubmittedQueue, { paymentId, attempt: 0 }, {
        tx,
        startAfter: 2000,
      });
    }
  });
}

/**
 * A reported router call for this very reference that reverted is recorded as the attempt's
 * failure, shown on the page; the payment stays PENDING and payable. DESIGN §9 had it FAILED, but
 * the reference is public and anyone can make such a call revert, so that let a stranger end
 * any checkout (docs/decisions.md). Returns whether to look again later (not mined yet).
 */
export async function checkSubmitted(deps: Deps, paymentId: string): Promise<"again" | "done"> {
  const p = await repo.findById(deps.sql, paymentId);
  if (!p || p.status !== "PENDING" || !p.submittedTxHash) return "done";
  const profile = deps.chain.profileOf(p.chainId);
  const seen = await deps.chain.checkout.inspect(profile, p.submittedTxHash as `0x${string}`);
  if (seen.status === null) return "again";
  if (seen.status === "reverted" && seen.reference === p.reference) {
    await repo.recordRevertedAttempt(
      deps.sql,
      p.id,
      revertedAttemptReason(p.submittedTxHash),
      deps.clock.now(),
    );
  }
  return "done";
}

/** What the page and the dashboard say of a reported transaction that reverted. */
export function revertedAttemptReason(txHash: string): string {
  return `A transaction for this payment reverted (${txHash.slice(0, 10)}…${
    txHash.slice(-8)
  }): nothing was paid.`;
}
