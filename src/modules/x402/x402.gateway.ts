/**
 * Gateway balances: deposits from the merchant's managed wallets and agents' smart accounts, a
 * seller's balances, and the seller's withdrawal (the other payers' withdrawal is in
 * x402.payers.ts). Every amount is checked against the chain before anything is signed.
 */
import { createHash } from "node:crypto";
import type { Deps } from "../../deps.ts";
import { DomainError } from "../../errors.ts";
import { checksum, lower } from "../../chain/address.ts";
import type { ProfileName } from "../../chain/profiles.ts";
import { formatUsdcFixed as usdc } from "../../money.ts";
import type { MerchantRow } from "../merchants/merchants.types.ts";
import { controlledWallet } from "../wallets/wallets.service.ts";
import { x402Profile } from "./x402.context.ts";
import { payerClaim, relayWithdrawFamily, withdrawableNow } from "./x402.claims.ts";
import { withClaim } from "../../db/claims.ts";
import { whileWithdrawing } from "./x402.batched.mirror.ts";
import { pendingOf, pendingUnits } from "./x402.batched.views.ts";
import { usdcClaim } from "../wallets/wallets.service.ts";
import * as bridge from "../bridge/bridge.service.ts";
import { isSupportedSource } from "../bridge/bridge.rules.ts";
import { SOURCE_CHAINS, type SourceChainName } from "../../chain/profiles.ts";
import type { Address, MerchantAgent, X402AgentPort } from "./x402.types.ts";
import { nowSeconds, relayTermsRefusal, relayWindowOpen } from "./x402.rules.ts";
import type { PayerDepositInput } from "./x402.schemas.ts";

/** The chain id withdrawals settle on today (the spec's `settleTestnet`). */
export const SOURCE_CHAIN = "settleTestnet";
/** How long a deposit's EIP-3009 authorization stays valid. */
const DEPOSIT_WINDOW_SECONDS = 3600n;

export async function gatewayView(deps: Deps, profile: ProfileName, address: Address) {
  return gatewayFields(await deps.chain.gateway.balance(profile, address));
}

export function gatewayFields(
  b: { available: bigint; withdrawing: bigint; withdrawable: bigint },
) {
  return {
    total: usdc(b.available + b.withdrawing),
    available: usdc(b.available),
    withdrawing: usdc(b.withdrawing),
    withdrawable: usdc(b.withdrawable),
  };
}

/**
 * The intent of a money-moving request: derived from its Idempotency-Key and content when it has
 * one, so a retry after a 408 (which the idempotency layer does not store) finds the first
 * transaction instead of sending a second.
 */
export function requestIntent(
  kind: string,
  walletId: string,
  requestKey: string | undefined,
  parts: unknown[],
): string {
  if (requestKey === undefined) return `${kind}:${walletId}:${crypto.randomUUID()}`;
  const digest = createHash("sha256").update([requestKey, ...parts.map(String)].join("\n"))
    .digest("hex");
  return `${kind}:${walletId}:${digest}`;
}

/**
 * Moves USDC from one of the merchant's managed wallets into its gateway balance, or from one of
 * its agents' smart accounts into the account's (`agentId`, or `fromSCA` = the account).
 */
export async function deposit(
  deps: Deps & { agents?: X402AgentPort },
  m: MerchantRow,
  input: { walletId?: string; fromSCA?: string; agentId?: string; amount: bigint },
  requestKey?: string,
) {
  const profile = x402Profile(deps);
  const w = input.agentId === undefined
    ? await controlledWallet(deps, m.id, { walletId: input.walletId, address: input.fromSCA })
    : null;
  const agent = w ? null : await depositAgent(deps, m, input);
  if (!w && !agent) throw new DomainError("x402_deposit_not_controlled");
  const source = w ? lower(w.address) : agent!.account;
  // An agent's deposit is sent by its owner wallet: the intent is that wallet's.
  const sender = w ? w.walletId : agent!.ownerWalletId;
  const intentKey = w
    ? requestIntent("x402-deposit", sender, requestKey, [m.id, input.amount])
    : requestIntent("x402-deposit-agent", sender, requestKey, [m.id, source, input.amount]);
  // Under the source's USDC claim (merchant withdrawals take it too): the balance checked is the
  // one the deposit spends. The intent is recorded before broadcast and derived from the
  // Idempotency-Key, so a crash leaves a deposit the chain's recovery finishes and a retry finds.
  const tx = await withClaim(deps.sql, usdcClaim(deps, profile, source), async () => {
    const earlier = requestKey === undefined ? null : await deps.chain.intent(profile, intentKey);
    if (!earlier || earlier.status === "failed") {
      const balance = await deps.chain.usdcBalance(profile, source);
      if (balance < input.amount) {
        throw new DomainError("x402_deposit_insufficient", { balance: usdc(balance) });
      }
    }
    const now = BigInt(Math.floor(deps.clock.now().getTime() / 1000));
    return w
      ? await deps.chain.gateway.depositFromWallet(profile, {
        walletId: w.walletId,
        amount: input.amount,
        validBefore: now + DEPOSIT_WINDOW_SECONDS,
        intentKey,
      })
      : await deps.chain.gateway.depositFromAccount(profile, {
        ownerWalletId: sender,
        account: source,
        amount: input.amount,
        intentKey,
      });
  });
  return {
    txHash: tx.txHash,
    explorerUrl: deps.chain.explorerTxUrl(profile, tx.txHash),
    amount: usdc(input.amount),
    walletId: sender,
    walletAddress: checksum(source),
    ...(agent ? { agentId: agent.agentId } : {}),
    gateway: await gatewayView(deps, profile, source),
  };
}

/** The merchant's agent a deposit names: `agentId`, or `fromSCA` equal to its smart account. */
async function depositAgent(
  deps: { agents?: X402AgentPort },
  m: MerchantRow,
  input: { fromSCA?: string; agentId?: string },
): Promise<MerchantAgent | null> {
  const port = deps.agents?.merchantAgent?.bind(deps.agents);
  if (!port) return null;
  if (input.agentId !== undefined) return await port(m.id, { agentId: input.agentId });
  if (input.fromSCA !== undefined) return await port(m.id, { account: lower(input.fromSCA) });
  return null;
}

/** The seller's on-chain USDC and gateway balances (default: the merchant's payout address). */
export async function sellerBalance(deps: Deps, m: MerchantRow, sellerAddress?: string) {
  const profile = x402Profile(deps);
  const address = sellerAddress ?? m.walletAddress;
  if (!address) throw new DomainError("payout_wallet_missing");
  const a = lower(address);
  const [wallet, gateway, pending] = await Promise.all([
    deps.chain.usdcBalance(profile, a),
    gatewayView(deps, profile, a),
    pendingOf(deps.sql, deps.chain.chainId(profile), a),
  ]);
  return { sellerAddress: checksum(a), wallet: { balance: usdc(wallet) }, gateway, pending };
}

/**
 * GET /api/x402/payer/balance: any payer's gateway balance, for outside payers (an EOA whose key
 * we never see, paying with Circle's client): what is settled on the vault, what paid calls
 * accepted and not yet settled have promised, what its next paid call can count on
 * (`spendable`: available less those promises) and what a signed withdrawal takes now
 * (`withdrawal.maxAmount`: withdrawable less those promises and its withdrawals in flight); and the USDC its wallet holds (what it can still
 * deposit, through POST /api/x402/payer/deposit when it has no gas). Public: the balance is on
 * chain for anyone to read, and each pending charge is on chain within one settlement interval.
 */
export async function payerView(deps: Deps, address: string) {
  const profile = x402Profile(deps);
  const a = lower(address);
  const [b, pending, wallet, delay, at, now] = await Promise.all([
    deps.chain.gateway.balance(profile, a),
    pendingUnits(deps.sql, deps.chain.chainId(profile), a),
    deps.chain.usdcBalance(profile, a),
    deps.chain.gateway.withdrawalDelay(profile),
    deps.chain.gateway.withdrawableAt(profile, a),
    withdrawableNow(deps, profile, a, [relayWithdrawFamily(a)]),
  ]);
  const spendable = b.available - pending.outgoing;
  return {
    address: checksum(a),
    network: `eip155:${deps.chain.chainId(profile)}`,
    wallet: { balance: usdc(wallet) },
    gateway: gatewayFields(b),
    pending: { incoming: usdc(pending.incoming), outgoing: usdc(pending.outgoing) },
    spendable: usdc(spendable > 0n ? spendable : 0n),
    withdrawal: {
      maxAmount: usdc(now > 0n ? now : 0n),
      delaySeconds: Number(delay),
      withdrawableAt: at > 0n && b.withdrawing > 0n
        ? new Date(Number(at) * 1000).toISOString()
        : null,
    },
  };
}

/**
 * POST /api/x402/payer/deposit: an outside payer's deposit into its gateway balance, which it
 * signed (an EIP-3009 `ReceiveWithAuthorization` of USDC to the vault) and one of our relayers
 * sends, so a wallet holding USDC and no gas can pay with the batched option. Public, like the
 * payer's balance: the signature is the only credential, and it can only move the signer's USDC
 * into the signer's own balance. Refused before anything is sent where the chain would revert
 * (terms, signature, a used nonce, too little USDC), so the relayer pays gas only for deposits.
 * Once per signed deposit: a retry, or a copy sent at the same time, answers its transaction.
 */
export async function relayPayerDeposit(deps: Deps, input: PayerDepositInput) {
  const profile = x402Profile(deps);
  const a = input.authorization;
  const vault = deps.chain.contract(profile, "GatewayVault");
  const d = { ...a, signature: input.signature };
  const refused = relayTermsRefusal(a, vault);
  if (refused) throw new DomainError(refused);
  if (!(await deps.chain.gateway.signedDepositValid(profile, d))) {
    throw new DomainError("x402_relay_signature");
  }
  const digest = createHash("sha256").update(input.signature).digest("hex");
  const intentKey = `x402-payer-deposit:${a.from}:${a.nonce}:${digest}`;
  // Under the payer's USDC claim: the balance checked is the one the deposit spends, and copies
  // of one deposit take turns (the first sends; the rest find its transaction).
  const tx = await withClaim(deps.sql, usdcClaim(deps, profile, a.from), async () => {
    const earlier = await deps.chain.intent(profile, intentKey);
    if (!earlier || earlier.status === "failed") {
      if (!relayWindowOpen(a, nowSeconds(deps.clock.now()))) {
        throw new DomainError("x402_relay_window");
      }
      const [used, balance] = await Promise.all([
        deps.chain.gateway.nonceUsed(profile, "usdc", a.from, a.nonce),
        deps.chain.usdcBalance(profile, a.from),
      ]);
      if (used) throw new DomainError("x402_relay_used");
      if (balance < a.value) {
        throw new DomainError("x402_deposit_insufficient", { balance: usdc(balance) });
      }
    }
    return await deps.chain.gateway.relaySignedDeposit(profile, d, intentKey);
  });
  return {
    txHash: tx.txHash,
    explorerUrl: deps.chain.explorerTxUrl(profile, tx.txHash),
    amount: usdc(a.value),
    payer: checksum(a.from),
    network: `eip155:${deps.chain.chainId(profile)}`,
    gateway: await gatewayView(deps, profile, a.from),
  };
}

/**
 * Where a withdrawal goes: the settlement chain itself, or a bridge source chain through the
 * CCTP messenger (burn on the settlement chain, mint there).
 */
export function withdrawalRoute(
  destinationChain: string,
): { kind: "same-chain" } | { kind: "bridge"; chain: SourceChainName } {
  if (destinationChain === SOURCE_CHAIN) return { kind: "same-chain" };
  if (isSupportedSource(destinationChain)) return { kind: "bridge", chain: destinationChain };
  throw new DomainError("x402_destination_unsupported", {
    hint: `Supported: ${SOURCE_CHAIN}, ${SOURCE_CHAINS.join(", ")}.`,
  });
}

/** Pays out of the merchant's payout wallet's gateway balance, at most what is withdrawable. */
export async function withdraw(
  deps: Deps,
  m: MerchantRow,
  input: { amount: bigint; destinationChain: string; destinationAddress?: string },
  requestKey?: string,
) {
  const route = withdrawalRoute(input.destinationChain);
  const profile = x402Profile(deps);
  if (m.walletProvider !== "MANAGED" || !m.managedWalletId || !m.walletAddress) {
    throw new DomainError("withdraw_external_wallet");
  }
  const seller = lower(m.walletAddress);
  const recipient = lower(input.destinationAddress ?? seller);
  if (route.kind === "bridge") {
    // Bridged out of the testnet chain only (the messenger's source); start the other end now.
    if (profile !== "testnet") throw new DomainError("x402_destination_unsupported");
    await deps.chain.ensure(route.chain);
    // The bridge fee must leave something to mint: refused before anything is withdrawn.
    await bridge.quoteOutbound(deps, { amount: input.amount, toChain: route.chain });
  }
  // Not into the token or one of our vaults on the chain it arrives on (stranded there).
  if (deps.chain.isServiceContract(route.kind === "bridge" ? route.chain : profile, recipient)) {
    throw new DomainError("withdraw_destination_contract");
  }
  const intentKey = requestIntent("x402-withdraw", m.managedWalletId, requestKey, [
    m.id,
    input.amount,
    input.destinationChain,
    recipient,
  ]);
  const exceeds = (can: bigint) =>
    new DomainError("x402_withdraw_exceeds", { withdrawable: usdc(can > 0n ? can : 0n) });
  const walletId = m.managedWalletId;
  // Under the payer's claim until the withdrawal is mined, as the payer withdrawal does: two
  // withdrawals never count on the same balance (a second one is a 400, not a revert). Paid calls
  // of this wallet are refused meanwhile, and those reserved before are counted
  // (x402.batched.mirror.ts).
  const claim = payerClaim(deps.chain.chainId(profile), seller);
  const withdrawn = () =>
    withClaim(
      deps.sql,
      claim,
      () =>
        whileWithdrawing(deps, profile, seller, intentKey, async (fence) => {
          const earlier = requestKey === undefined
            ? null
            : await deps.chain.intent(profile, intentKey);
          if (!earlier || earlier.status === "failed") {
            const can = await withdrawableNow(deps, profile, seller, [
              `x402-withdraw:${walletId}:`,
              `x402-payer-withdraw:${walletId}:`,
            ]);
            if (can < input.amount) throw exceeds(can);
          }
          fence();
          try {
            return await deps.chain.gateway.withdraw(profile, {
              from: { walletId },
              amount: input.amount,
              // Cross-chain: to the seller's own wallet first, which then burns it
              // through the messenger.
              to: route.kind === "bridge" ? seller : recipient,
              intentKey,
            });
          } catch (e) {
            // Spent on the contract directly between our check and the node's estimate.
            if (
              e instanceof DomainError && e.code === "chain_reverted" &&
              /NotWithdrawable/.test(e.details.hint ?? "")
            ) {
              throw exceeds((await deps.chain.gateway.balance(profile, seller)).withdrawable);
            }
            throw e;
          }
        }),
    );
  // Cross-chain, under the wallet's USDC claim (its burns and withdrawals take it too) from
  // before the gateway withdrawal until the transfer is recorded: the transfers it has yet to
  // burn must be covered before anything is withdrawn, and this one then is, by what arrives.
  const { tx, bridged } = route.kind === "bridge"
    ? await withClaim(deps.sql, bridge.outboundClaim(deps, seller), async () => {
      await bridge.ensureOutboundCovered(deps, seller, 0n);
      const tx = await withdrawn();
      const bridged = await bridge.startOutbound(deps, {
        walletId,
        sender: seller,
        amount: input.amount,
        toChain: route.chain,
        recipient,
        // One bridge transfer per withdrawal intent: a retried request finds the first one.
        reference: `bridge_${createHash("sha256").update(intentKey).digest("hex").slice(0, 24)}`,
        claimed: true,
      });
      return { tx, bridged };
    })
    : { tx: await withdrawn(), bridged: null };
  return {
    txHash: tx.txHash,
    amount: usdc(input.amount),
    sourceChain: SOURCE_CHAIN,
    destinationChain: input.destinationChain,
    recipient: checksum(recipient),
    status: "confirmed" as const,
    explorerUrl: deps.chain.explorerTxUrl(profile, tx.txHash),
    // Cross-chain: the gateway withdrawal is confirmed; the burn and mint follow (status path).
    ...(bridged
      ? {
        bridge: {
          reference: bridged.reference,
          status: bridged.status,
          statusUrl: bridge.statusPath(bridged.reference),
        },
      }
      : {}),
  };
}
