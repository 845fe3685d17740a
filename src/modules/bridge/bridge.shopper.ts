/**
 * Cross-chain checkout from the shopper's own wallet on a source chain (the hosted page's "Pay
 * from another chain"; the quote is in bridge.checkout.ts): the one-signature
 * path (the shopper's EIP-3009 authorization, burned by our relayer through CheckoutBurner) and
 * the wallet path (the shopper's wallet sends approve + depositForBurnWithHook and reports the
 * hash). Either way a transfer row with the payment's hook data goes through the same steps as
 * every other transfer: burn (or read back) → attest → mint → the payment settles.
 */
import { isUniqueViolation } from "../../db/client.ts";
import type { Deps } from "../../deps.ts";
import { DomainError } from "../../errors.ts";
import { burnNonce, fromBytes32, hookText, type SourceChainName } from "../../chain/index.ts";
import { lower } from "../../chain/address.ts";
import type { PaymentRow } from "../payments/payments.rules.ts";
import * as repo from "./bridge.repo.ts";
import { attestQueue, burnQueue } from "./bridge.queues.ts";
import {
  DESTINATION_CHAIN,
  DESTINATION_PROFILE,
  finalityOf,
  newReference,
} from "./bridge.rules.ts";
import type { ShopperRelayInput } from "./bridge.schemas.ts";
import { burnFor, payable, target, unixSeconds, usdc } from "./bridge.checkout.ts";

const ZERO32 = `0x${"00".repeat(32)}`;

/**
 * The one-signature path: checks the shopper's authorization against the payment and the chain
 * (every refusal before anything is written or sent), records the transfer with it and
 * enqueues the burn, which our relayer sends (bridge.steps.ts). The same authorization again
 * answers its transfer.
 */
export async function relayShopperBurn(deps: Deps, reference: string, input: ShopperRelayInput) {
  const { p, source } = await target(deps, reference, input.sourceChain);
  const ops = deps.chain.cctp.checkout;
  const a = input.authorization;
  const same = await findSameAuthorization(deps, p.reference, a.from, a.nonce);
  if (same) return { transfer: same, created: false };
  if (!(await ops.oneSignature(source))) throw new DomainError("bridge_signature_unavailable");
  const speed = input.transferSpeed ?? "standard";
  const burn = burnFor(deps, p, { burnAmount: a.value, maxFee: input.maxFee }, speed);
  if (a.to !== lower(ops.burner(source)!)) throw new DomainError("authorization_payee_mismatch");
  if (input.maxFee >= a.value || a.value - input.maxFee < p.amount) {
    throw new DomainError("authorization_amount_mismatch", {
      hint: `The burn must leave ${usdc(p.amount)} USDC after a maxFee below it.`,
    });
  }
  if (a.nonce !== burnNonce(burn).toLowerCase()) {
    throw new DomainError("authorization_reference_mismatch");
  }
  const window = { from: a.from, validAfter: a.validAfter, validBefore: a.validBefore };
  if (!(await ops.authorizedBy(source, burn, window, input.signature))) {
    throw new DomainError("authorization_signature_invalid");
  }
  // Someone may have submitted this very signed burn already (anyone may): then it is burned,
  // exactly as signed, and must be recorded so its mint reaches the payee.
  const elsewhere = (await ops.authorizationUsed(source, a.from, a.nonce))
    ? (await ops.burnedBy(source, a.from, a.nonce, p.createdAt)) ?? "cancelled"
    : null;
  if (elsewhere === "cancelled") throw new DomainError("bridge_authorization_used");
  if (!elsewhere) await relayable(deps, p, { source, input });
  const open = await repo.openForPayment(deps.sql, p.reference);
  const mine = open.find((t) =>
    t.payerAuthorization?.from === a.from && t.payerAuthorization.nonce === a.nonce
  );
  // A concurrent relay of this same authorization recorded it a moment ago.
  if (mine) return { transfer: mine, created: false };
  if (open.length) throw underWay();
  const row = await deps.sql.begin(async (tx) => {
    const row = await repo.insert(tx, {
      ...common(deps, p, source),
      sender: a.from,
      transferSpeed: speed,
      burnAmount: a.value,
      maxFee: input.maxFee,
      burnMode: "payer_authorization",
      payerAuthorization: {
        from: a.from,
        validAfter: a.validAfter.toString(),
        validBefore: a.validBefore.toString(),
        nonce: a.nonce,
        signature: input.signature,
      },
    });
    await deps.queue.send(burnQueue, { reference: row.reference }, { tx });
    return row;
  }).catch(async (e) => {
    if (!isUniqueViolation(e)) throw e;
    // A concurrent relay of the same authorization won: answer its transfer.
    const won = await findSameAuthorization(deps, p.reference, a.from, a.nonce);
    if (won) return null;
    throw underWay();
  });
  if (!row) {
    return {
      transfer: (await findSameAuthorization(deps, p.reference, a.from, a.nonce))!,
      created: false,
    };
  }
  return { transfer: row, created: true };
}

/** What must hold before our relayer sends a shopper's authorization. */
async function relayable(
  deps: Deps,
  p: PaymentRow,
  { source, input }: { source: SourceChainName; input: ShopperRelayInput },
) {
  const a = input.authorization;
  await payable(deps, p);
  const now = unixSeconds(deps.clock.now());
  if (a.validBefore <= now) throw new DomainError("authorization_expired");
  if (a.validBefore > unixSeconds(p.expiresAt) || a.validAfter > now) {
    throw new DomainError("authorization_window_invalid");
  }
  // The messenger's minimum for this burn now (Circle's fee switch): a maxFee under it reverts.
  const floor = await deps.chain.cctp.minFee(source, a.value);
  if (floor > input.maxFee) {
    throw new DomainError("bridge_fee_changed", {
      hint: `The bridge fee is now ${usdc(floor)} USDC.`,
    });
  }
  if ((await deps.chain.usdcBalance(source, a.from)) < a.value) {
    throw new DomainError("payer_balance_insufficient");
  }
}

/**
 * The wallet path: the page reports the burn the shopper's wallet sent. It is read back from
 * the chain and must be exactly one DepositForBurn of the configured messenger burning the
 * source USDC, with this payment's reference as hook data, minting to its payee on Settle
 * Testnet (any caller), and leaving at least the amount after its maxFee. Recorded `burned` and
 * attested from there. A burn once recorded is not recorded again (the same report answers its
 * transfer). Recorded even when the payment is no longer payable: the USDC is already burned,
 * and its mint must reach the payee (the payment settles late, or as unmatched).
 */
export async function reportShopperBurn(
  deps: Deps,
  reference: string,
  input: { sourceChain: string; txHash: `0x${string}` },
) {
  const { p, source } = await target(deps, reference, input.sourceChain);
  const known = await repo.findByBurn(deps.sql, source, input.txHash);
  if (known) return { transfer: sameBurn(known, p), created: false };
  const found = await deps.chain.cctp.checkout.read(source, input.txHash);
  if (found === "not_found") throw new DomainError("bridge_burn_not_found");
  if (found === "reverted") throw new DomainError("bridge_burn_reverted");
  if (found.length !== 1) throw new DomainError("bridge_burn_invalid");
  const b = found[0];
  if (lower(b.burnToken) !== lower(deps.chain.contract(source, "TestUSDC"))) {
    throw new DomainError("bridge_burn_invalid");
  }
  // A one-signature burn is recorded by its relay request, never by a report.
  const burner = deps.chain.cctp.checkout.burner(source);
  if (burner && lower(b.depositor) === lower(burner)) throw new DomainError("bridge_burn_used");
  if (hookText(b.hookData) !== p.reference) throw new DomainError("bridge_burn_wrong_payment");
  if (
    b.destinationDomain !== deps.chain.profileConfig(DESTINATION_PROFILE).cctpDomain ||
    lower(fromBytes32(b.mintRecipient)) !== lower(p.payTo) || b.destinationCaller !== ZERO32
  ) {
    throw new DomainError("bridge_burn_wrong_recipient");
  }
  if (b.maxFee >= b.amount || b.amount - b.maxFee < p.amount) {
    throw new DomainError("bridge_burn_amount", {
      hint: `This payment needs ${usdc(p.amount)} USDC after the fee.`,
    });
  }
  const row = await deps.sql.begin(async (tx) => {
    const row = await repo.insertReportedBurn(tx, {
      ...common(deps, p, source),
      sender: lower(b.depositor),
      transferSpeed: b.minFinalityThreshold <= finalityOf("fast") ? "fast" : "standard",
      burnAmount: b.amount,
      maxFee: b.maxFee,
      burnTxHash: input.txHash,
    });
    if (row) await deps.queue.send(attestQueue, { reference: row.reference }, { tx });
    return row;
  });
  if (row) return { transfer: row, created: true };
  // A concurrent report of the same burn recorded it first.
  return {
    transfer: sameBurn((await repo.findByBurn(deps.sql, source, input.txHash))!, p),
    created: false,
  };
}

function common(deps: Deps, p: PaymentRow, source: SourceChainName) {
  return {
    reference: newReference(),
    direction: "inbound" as const,
    consumerId: null,
    walletId: null,
    fromChain: source,
    toChain: DESTINATION_CHAIN,
    sourceDomain: deps.chain.profileConfig(source).cctpDomain!,
    destinationDomain: deps.chain.profileConfig(DESTINATION_PROFILE).cctpDomain!,
    amount: p.amount,
    recipient: lower(p.payTo),
    paymentReference: p.reference,
    now: deps.clock.now(),
  };
}

/** A burn recorded before: the same report answers it; anything else has used it. */
function sameBurn(t: repo.BridgeRow, p: PaymentRow): repo.BridgeRow {
  if (t.burnMode !== "payer_wallet" || t.paymentReference !== p.reference) {
    throw new DomainError("bridge_burn_used");
  }
  return t;
}

async function findSameAuthorization(
  deps: Deps,
  paymentReference: string,
  from: string,
  nonce: string,
): Promise<repo.BridgeRow | null> {
  return await repo.findByAuthorization(deps.sql, paymentReference, from, nonce);
}

const underWay = () =>
  new DomainError("bridge_payment_not_bridgeable", {
    hint: "A transfer for this payment is already under way.",
  });
