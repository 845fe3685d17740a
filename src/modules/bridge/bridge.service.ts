/**
 * Bridging USDC (CCTP v2): starting transfers (inbound from a consumer's wallet, cross-chain
 * checkout, outbound for x402 withdrawals), the chain descriptors, the status view and the
 * bridge form's data. The steps that move a transfer are in bridge.steps.ts.
 */
import { createHmac } from "node:crypto";
import { isUniqueViolation } from "../../db/client.ts";
import type { Deps } from "../../deps.ts";
import { DomainError } from "../../errors.ts";
import { PROFILE_DEFS, SOURCE_CHAINS, type SourceChainName } from "../../chain/profiles.ts";
import { checksum, lower } from "../../chain/address.ts";
import { formatUsdc } from "../../money.ts";
import { sessionAccount } from "../consumers/consumers.service.ts";
import { loadPayment, paidOnChainUnderWay } from "../payments/payments.checkout.ts";
import * as repo from "./bridge.repo.ts";
import { burnQueue } from "./bridge.queues.ts";
import {
  DESTINATION_CHAIN,
  DESTINATION_PROFILE,
  newReference,
  profileOf,
  type TransferSpeed,
} from "./bridge.rules.ts";
import { quote } from "./bridge.attestation.ts";
import { withClaim } from "../../db/claims.ts";
import type { ProfileName } from "../../chain/profiles.ts";
import { usdcClaim } from "../wallets/wallets.service.ts";

type ConsumerRow = Awaited<ReturnType<typeof sessionAccount>>;

/** The consumer behind the cookie; any failure is the spec's "Sign in required" text. */
export async function signedIn(
  deps: Deps,
  token: string | undefined,
): Promise<ConsumerRow> {
  try {
    return await sessionAccount(deps, token);
  } catch (e) {
    if (e instanceof DomainError) throw new DomainError("bridge_sign_in_required");
    throw e;
  }
}

export { profileOf };

export function descriptors() {
  return {
    sourceChains: SOURCE_CHAINS.map((id) => ({
      id,
      label: PROFILE_DEFS[id].label,
      testnet: PROFILE_DEFS[id].testnet,
      circleBlockchain: PROFILE_DEFS[id].circleBlockchain!,
    })),
    destinationChains: [{
      id: DESTINATION_CHAIN,
      label: PROFILE_DEFS.testnet.label,
      testnet: true,
    }],
  };
}

export interface TransferRequest {
  fromChain: SourceChainName;
  amount: bigint;
  recipient: `0x${string}`;
  /** Default `standard`. */
  transferSpeed?: TransferSpeed;
}

/**
 * The reference of a consumer's transfer requested with an Idempotency-Key: derived from the
 * consumer, the key and the request, so a retry that runs again (its first run's process died
 * before the answer was stored) finds the first transfer instead of burning a second time. Keyed
 * with the server secret: a reference is enough to read a transfer's status, and keys may be
 * guessable (an order id).
 */
export function requestReference(
  deps: Deps,
  consumerId: string,
  requestKey: string,
  input: TransferRequest & { paymentReference?: string },
): string {
  const parts = [
    consumerId,
    requestKey,
    input.fromChain,
    input.amount,
    lower(input.recipient),
    input.transferSpeed ?? "standard",
    input.paymentReference ?? "",
  ];
  const mac = createHmac("sha256", deps.config.JWT_SECRET!)
    .update(`bridge-transfer\n${parts.join("\n")}`).digest("hex");
  return `bridge_${mac.slice(0, 24)}`;
}

/** The consumer's own transfer of that reference, if its request already made one. */
async function earlier(deps: Deps, account: ConsumerRow, reference: string | undefined) {
  if (reference === undefined) return null;
  const row = await repo.find(deps.sql, reference);
  return row && row.consumerId === account.id ? row : null;
}

/**
 * Starts an inbound transfer from the consumer's own managed wallet on `fromChain` (started on
 * first use) to `recipient` on the testnet chain: quotes the fee, checks the wallet's balance
 * there, less the burns of its transfers not yet burned, covers this burn, and records the
 * transfer and enqueues its burn in one transaction, both under the wallet's USDC claim. A plain
 * transfer burns `amount` (the recipient gets it less the fee); a checkout burns the payment's
 * amount plus the fee (`opts.paymentReference`: the merchant gets the whole amount).
 */
export async function startTransfer(
  deps: Deps,
  account: ConsumerRow,
  input: TransferRequest,
  opts: { paymentReference?: string; reference?: string } = {},
): Promise<repo.BridgeRow> {
  if (account.walletType !== "MANAGED" || !account.managedWalletId) {
    throw new DomainError("bridge_external_wallet");
  }
  const first = await earlier(deps, account, opts.reference);
  if (first) return first;
  if (!deps.chain.has(DESTINATION_PROFILE)) throw new DomainError("chain_not_configured");
  // Minted to the token or one of our vaults, the USDC would be stranded there.
  if (deps.chain.isServiceContract(DESTINATION_PROFILE, input.recipient)) {
    throw new DomainError("bridge_recipient_contract");
  }
  await deps.chain.ensure(input.fromChain);
  const speed = input.transferSpeed ?? "standard";
  const q = await quote(deps, {
    from: input.fromChain,
    to: DESTINATION_PROFILE,
    amount: input.amount,
    speed,
    covers: opts.paymentReference ? "net" : "gross",
  });
  const source = account.walletAddress as `0x${string}`;
  const now = deps.clock.now();
  // Under the wallet's USDC claim (its burns take it too): the balance less what its accepted
  // transfers will still burn must cover this burn, and concurrent requests take turns, so
  // nothing is accepted that the wallet cannot burn.
  return await withClaim(deps.sql, usdcClaim(deps, input.fromChain, source), async () => {
    const again = await earlier(deps, account, opts.reference);
    if (again) return again;
    await ensureCovered(deps, input.fromChain, source, q.burnAmount, {
      hint: q.burnAmount !== input.amount
        ? `This payment burns ${usdc(q.burnAmount)} USDC: ${
          usdc(input.amount)
        } for the merchant and ${usdc(q.maxFee)} for the bridge fee.`
        : undefined,
    });
    return await insertTransfer(deps, account, input, opts, { q, speed, source, now });
  });
}

/**
 * Refuses (`bridge_insufficient_balance`, 400 with `balance`: what is left to bridge) a burn of
 * `amount` from `wallet` on `chain` that its balance, less the burns of its transfers accepted
 * and not yet burned, cannot cover. Called under the wallet's USDC claim.
 */
async function ensureCovered(
  deps: Deps,
  chain: ProfileName,
  wallet: `0x${string}`,
  amount: bigint,
  opts: { hint?: string } = {},
): Promise<void> {
  const [balance, pending] = await Promise.all([
    deps.chain.usdcBalance(chain, wallet),
    repo.pendingBurns(deps.sql, chain, wallet),
  ]);
  const free = balance - pending;
  if (free >= amount) return;
  const committed = pending > 0n
    ? `${usdc(pending)} USDC of the wallet's ${
      usdc(balance)
    } is already committed to transfers not yet burned.`
    : undefined;
  const hint = [opts.hint, committed].filter(Boolean).join(" ");
  throw new DomainError("bridge_insufficient_balance", {
    balance: usdc(free > 0n ? free : 0n),
    ...(hint ? { hint } : {}),
  });
}

const usdc = (u: bigint) => formatUsdc(u, { decimals: "fixed" });

async function insertTransfer(
  deps: Deps,
  account: ConsumerRow,
  input: TransferRequest,
  opts: { paymentReference?: string; reference?: string },
  f: {
    q: { burnAmount: bigint; maxFee: bigint };
    speed: TransferSpeed;
    source: `0x${string}`;
    now: Date;
  },
): Promise<repo.BridgeRow> {
  const { q, speed, source, now } = f;
  return await deps.sql.begin(async (tx) => {
    const row = await repo.insert(tx, {
      reference: opts.reference ?? newReference(),
      direction: "inbound",
      consumerId: account.id,
      walletId: account.managedWalletId,
      fromChain: input.fromChain,
      toChain: DESTINATION_CHAIN,
      sourceDomain: deps.chain.profileConfig(input.fromChain).cctpDomain!,
      destinationDomain: deps.chain.profileConfig(DESTINATION_PROFILE).cctpDomain!,
      amount: input.amount,
      sender: lower(source),
      recipient: lower(input.recipient),
      paymentReference: opts.paymentReference ?? null,
      transferSpeed: speed,
      burnAmount: q.burnAmount,
      maxFee: q.maxFee,
      now,
    });
    await deps.queue.send(burnQueue, { reference: row.reference }, { tx });
    return row;
  }).catch((e) => {
    if (isUniqueViolation(e) && opts.paymentReference) {
      throw new DomainError("bridge_payment_not_bridgeable", {
        hint: "A transfer for this payment is already under way.",
      });
    }
    throw e;
  });
}

/**
 * Cross-chain checkout: pays a PENDING payment on the testnet chain from the consumer's wallet
 * on `fromChain`. The request must name exactly the payment's amount and payee; the burn
 * carries the payment reference in its hook data and the mint step settles the payment.
 */
export async function payFromChain(
  deps: Deps,
  account: ConsumerRow,
  paymentReference: string,
  input: TransferRequest,
  opts: { reference?: string } = {},
): Promise<repo.BridgeRow> {
  // A retry of a request that made its transfer answers it, whatever the payment's state now.
  const first = await earlier(deps, account, opts.reference);
  if (first) return first;
  const p = await loadPayment(deps, paymentReference);
  if (!p) throw new DomainError("payment_not_found");
  if (
    !deps.chain.has(DESTINATION_PROFILE) || p.chainId !== deps.chain.chainId(DESTINATION_PROFILE)
  ) {
    throw new DomainError("bridge_payment_not_bridgeable", {
      hint: "Only payments on Settle_Testnet can be paid from another chain.",
    });
  }
  if (p.status !== "PENDING" || p.expiresAt <= deps.clock.now()) {
    throw new DomainError("payment_not_payable", { paymentStatus: p.status });
  }
  if (p.amount !== input.amount || lower(p.payTo) !== lower(input.recipient)) {
    throw new DomainError("bridge_payment_not_bridgeable", {
      hint: `amount must be ${formatUsdc(p.amount, { decimals: "fixed" })} and recipient ${
        checksum(p.payTo)
      }: the payment's amount and payee.`,
    });
  }
  // Being paid on its own chain already: a burn now would pay the merchant twice.
  if (await paidOnChainUnderWay(deps, p)) throw new DomainError("payment_paid_by_other");
  // A burn the shopper's own wallet made may be under way (not covered by the unique index).
  if ((await repo.openForPayment(deps.sql, p.reference)).length) {
    throw new DomainError("bridge_payment_not_bridgeable", {
      hint: "A transfer for this payment is already under way.",
    });
  }
  return await startTransfer(deps, account, input, {
    paymentReference: p.reference,
    reference: opts.reference,
  });
}

/**
 * An outbound transfer (settlement chain → a source chain): `walletId`'s USDC on the testnet
 * chain is burned and minted to `recipient` on `toChain` by the same steps, standard speed, the
 * fee (the testnet messenger's minimum) out of `amount`. Used by x402 seller withdrawals to
 * another destinationChain; the wallet's balance there, less its transfers not yet burned, must
 * cover `amount` (400 `bridge_insufficient_balance` otherwise). A caller that may retry (an
 * Idempotency-Key) passes a `reference` derived from its request: the retry finds the first
 * transfer instead of burning again.
 */
export async function startOutbound(
  deps: Deps,
  input: {
    walletId: string;
    sender: `0x${string}`;
    amount: bigint;
    toChain: SourceChainName;
    recipient: `0x${string}`;
    reference?: string;
    /** The caller holds the wallet's `outboundClaim`. */
    claimed?: boolean;
  },
): Promise<repo.BridgeRow> {
  if (!deps.chain.has(DESTINATION_PROFILE)) throw new DomainError("chain_not_configured");
  await deps.chain.ensure(input.toChain);
  const existing = input.reference ? await repo.find(deps.sql, input.reference) : null;
  if (existing) return existing;
  const q = await quoteOutbound(deps, input);
  // As for an inbound transfer: checked and recorded under the wallet's USDC claim (which the
  // caller may hold already: `input.claimed`), so its burn is covered when it comes.
  const record = async () => {
    const again = input.reference ? await repo.find(deps.sql, input.reference) : null;
    if (again) return again;
    await ensureCovered(deps, DESTINATION_PROFILE, input.sender, q.burnAmount);
    return await recordOutbound(deps, input, q);
  };
  return input.claimed
    ? await record()
    : await withClaim(deps.sql, outboundClaim(deps, input.sender), record);
}

/** The USDC claim of a wallet's outbound transfers (its balance on the settlement chain). */
export function outboundClaim(deps: Pick<Deps, "chain">, sender: `0x${string}`): string {
  return usdcClaim(deps, DESTINATION_PROFILE, sender);
}

/**
 * Refuses, before anything moves, when the wallet's balance on the settlement chain does not
 * cover its outbound transfers not yet burned plus `amount` (an x402 withdrawal passes 0: what
 * it withdraws arrives in the wallet before its transfer is recorded). Under its outboundClaim.
 */
export async function ensureOutboundCovered(
  deps: Deps,
  sender: `0x${string}`,
  amount: bigint,
): Promise<void> {
  await ensureCovered(deps, DESTINATION_PROFILE, sender, amount);
}

async function recordOutbound(
  deps: Deps,
  input: Parameters<typeof startOutbound>[1],
  q: { burnAmount: bigint; maxFee: bigint },
): Promise<repo.BridgeRow> {
  return await deps.sql.begin(async (tx) => {
    const row = await repo.insertIfAbsent(tx, {
      reference: input.reference ?? newReference(),
      direction: "outbound",
      consumerId: null,
      walletId: input.walletId,
      fromChain: DESTINATION_CHAIN,
      toChain: input.toChain,
      sourceDomain: deps.chain.profileConfig(DESTINATION_PROFILE).cctpDomain!,
      destinationDomain: deps.chain.profileConfig(input.toChain).cctpDomain!,
      amount: input.amount,
      sender: lower(input.sender),
      recipient: lower(input.recipient),
      paymentReference: null,
      transferSpeed: "standard",
      burnAmount: q.burnAmount,
      maxFee: q.maxFee,
      now: deps.clock.now(),
    });
    if (!row) return (await repo.find(tx, input.reference!))!;
    await deps.queue.send(burnQueue, { reference: row.reference }, { tx });
    return row;
  });
}

/** An outbound transfer's fee quote; throws `bridge_amount_below_fee` when nothing would arrive. */
export async function quoteOutbound(
  deps: Deps,
  input: { amount: bigint; toChain: SourceChainName },
) {
  return await quote(deps, {
    from: DESTINATION_PROFILE,
    to: input.toChain,
    amount: input.amount,
    speed: "standard",
    covers: "gross",
  });
}

/** The status path of a transfer (what responses point callers to). */
export const statusPath = (reference: string) => `/api/cctp/transfer/status?reference=${reference}`;

export async function findTransfer(deps: Deps, reference: string): Promise<repo.BridgeRow> {
  const t = await repo.find(deps.sql, reference);
  if (!t) throw new DomainError("bridge_not_found");
  return t;
}

// ---- pages ------------------------------------------------------------------------------------

/** The bridge form's data (consumer page; checkout adds its payment). */
export function formView(
  deps: Deps,
  payment?: { reference: string; amount: string; payTo: string },
) {
  return {
    sources: SOURCE_CHAINS.map((id) => ({ id, label: PROFILE_DEFS[id].label })),
    devFaucet: deps.config.APP_ENV !== "production",
    payment,
  };
}

/** The consumer wallet's USDC on a source chain (started on first use). */
export async function sourceBalance(deps: Deps, account: ConsumerRow, chain: SourceChainName) {
  await deps.chain.ensure(chain);
  const units = await deps.chain.usdcBalance(chain, account.walletAddress as `0x${string}`);
  return {
    walletAddress: checksum(account.walletAddress),
    balance: formatUsdc(units, { decimals: "fixed" }),
  };
}

/** Development: 100 test USDC on a local source chain for the consumer's managed wallet. */
export async function devFaucet(deps: Deps, account: ConsumerRow, chain: SourceChainName) {
  if (account.walletType !== "MANAGED") throw new DomainError("bridge_external_wallet");
  await deps.chain.ensure(chain);
  if (!deps.chain.isLocal(chain)) throw new DomainError("dev_faucet_unavailable");
  const amount = 100_000_000n;
  await deps.chain.mintUsdc({ profile: chain, to: account.walletAddress as `0x${string}`, amount });
  return { amount: formatUsdc(amount, { decimals: "fixed" }) };
}

// ---- views ----------------------------------------------------------------------------------

export function transferView(deps: Deps, t: repo.BridgeRow) {
  const link = (chainId: string, hash: string | null) =>
    hash ? deps.chain.explorerTxUrl(profileOf(chainId), hash) : null;
  const iso = (d: Date | null) => d?.toISOString() ?? null;
  return {
    reference: t.reference,
    status: t.status,
    direction: t.direction,
    amount: formatUsdc(t.amount, { decimals: "fixed" }),
    currency: "USDC" as const,
    fromChain: t.fromChain,
    toChain: t.toChain,
    sender: checksum(t.sender),
    recipient: checksum(t.recipient),
    paymentReference: t.paymentReference,
    burnTxHash: t.burnTxHash,
    burnExplorerUrl: link(t.fromChain, t.burnTxHash),
    mintTxHash: t.mintTxHash,
    mintExplorerUrl: link(t.toChain, t.mintTxHash),
    mintedAmount: t.mintedAmount === null
      ? null
      : formatUsdc(t.mintedAmount, { decimals: "fixed" }),
    transferSpeed: t.transferSpeed,
    burnMode: t.burnMode,
    burnAmount: formatUsdc(repo.burnAmountOf(t), { decimals: "fixed" }),
    maxFee: formatUsdc(t.maxFee, { decimals: "fixed" }),
    fee: t.feeCollected === null ? null : formatUsdc(t.feeCollected, { decimals: "fixed" }),
    finalityThresholdExecuted: t.finalityExecuted,
    attestation: {
      attempts: t.attestationAttempts,
      state: t.attestationState,
      nextPollAt: t.status === "burned" ? iso(t.nextAttestationAt) : null,
    },
    error: t.error,
    createdAt: t.createdAt.toISOString(),
    burnedAt: iso(t.burnedAt),
    attestedAt: iso(t.attestedAt),
    mintedAt: iso(t.mintedAt),
    failedAt: iso(t.failedAt),
    updatedAt: t.updatedAt.toISOString(),
  };
}
