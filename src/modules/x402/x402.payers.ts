/**
 * The merchant's own payers: its managed wallets and its agents' smart accounts, whose keys (an
 * agent's: its owner wallet's) the service holds. For them the service signs gateway payment
 * proofs (POST /api/x402/proofs), reads their balances and withdraws their gateway balance: what
 * a buyer holding its own key does on the contract itself. Only the merchant's own wallets and
 * agents; another merchant's answer 404 as if they did not exist.
 */
import { toHex } from "viem";
import type { Deps } from "../../deps.ts";
import { DomainError } from "../../errors.ts";
import { checksum, lower } from "../../chain/address.ts";
import { formatUsdcFixed as usdc } from "../../money.ts";
import type { MerchantRow } from "../merchants/merchants.types.ts";
import { controlledWallet } from "../wallets/wallets.service.ts";
import { getListing } from "./x402.listings.ts";
import { encodeGatewayProof, nowSeconds } from "./x402.rules.ts";
import { type X402Deps, x402Profile } from "./x402.context.ts";
import { gatewayView, requestIntent, SOURCE_CHAIN } from "./x402.gateway.ts";
import { payerClaim, withdrawableNow } from "./x402.claims.ts";
import { withClaim } from "../../db/claims.ts";
import { whileWithdrawing } from "./x402.batched.mirror.ts";
import { pendingOf } from "./x402.batched.views.ts";
import { NOT_WITHDRAWABLE, startWithdrawal } from "./x402.withdrawals.ts";
import type { Address, MerchantAgent, X402AgentPort } from "./x402.types.ts";

/** Deps with the agent port when the app has one (the agents module plugs it in). */
export type PayerDeps = Deps & { agents?: X402AgentPort };

export type Payer =
  | { kind: "wallet"; walletId: string; address: Address }
  | { kind: "agent"; agent: MerchantAgent; address: Address };

export type PayerRef = { walletId?: string; agentId?: string };

/**
 * The merchant's wallet or agent a request names. Not the merchant's: 404 (the same answer as
 * for one that does not exist). The merchant's external payout address given as walletId: 400,
 * the service has no key to act with.
 */
export async function resolvePayer(deps: PayerDeps, m: MerchantRow, ref: PayerRef): Promise<Payer> {
  if (ref.walletId !== undefined) {
    const w = await controlledWallet(deps, m.id, { walletId: ref.walletId });
    if (w) return { kind: "wallet", walletId: w.walletId, address: lower(w.address) };
    if (
      m.walletProvider !== "MANAGED" && m.walletAddress &&
      lower(ref.walletId) === lower(m.walletAddress)
    ) {
      throw new DomainError("x402_payer_external");
    }
    throw new DomainError("x402_payer_wallet_not_found");
  }
  const agent = ref.agentId === undefined
    ? null
    : await deps.agents?.merchantAgent?.(m.id, { agentId: ref.agentId }) ?? null;
  if (!agent) throw new DomainError("x402_payer_agent_not_found");
  return { kind: "agent", agent, address: agent.account };
}

function payerFields(p: Payer) {
  return p.kind === "wallet" ? { walletId: p.walletId } : { agentId: p.agent.agentId };
}

/**
 * POST /api/x402/proofs: a fresh gateway proof from the payer for exactly the listing's price to
 * its seller, valid from now (our clock) for `validForSeconds`, with a random nonce; for an
 * agent, the owner signs for the smart account (ERC-1271) and also makes the X-Agent-Signature.
 * Signs only: nothing is sent on chain, and the proof spends nothing until it is paid with.
 */
const VALID_AFTER_MARGIN_S = 10n;

export async function signProof(
  deps: X402Deps,
  m: MerchantRow,
  input: PayerRef & { slug: string; validForSeconds: number },
) {
  const profile = x402Profile(deps);
  const listing = await getListing(deps, input.slug);
  const payer = await resolvePayer(deps, m, input);
  const now = nowSeconds(deps.clock.now());
  // A few seconds back: the vault refuses a settlement mined in a block stamped before
  // validAfter, and a chain's clock may trail ours a little. The 5-minute window of /pay runs
  // from validAfter, so the proof stays usable for validForSeconds less this margin at most.
  const validAfter = now - VALID_AFTER_MARGIN_S;
  const authorization = {
    from: payer.address,
    to: lower(listing.seller),
    value: listing.price,
    validAfter,
    validBefore: now + BigInt(input.validForSeconds),
    nonce: toHex(crypto.getRandomValues(new Uint8Array(32))),
  };
  const signerWalletId = payer.kind === "wallet" ? payer.walletId : payer.agent.ownerWalletId;
  const [signature, agentSignature, balance] = await Promise.all([
    deps.chain.gateway.signAuthorization(profile, { signerWalletId, authorization }),
    payer.kind === "agent"
      ? deps.chain.agents.signPayment(profile, {
        ownerWalletId: payer.agent.ownerWalletId,
        tokenId: payer.agent.tokenId,
        timestamp: authorization.validAfter,
        nonce: authorization.nonce,
      })
      : Promise.resolve(null),
    deps.chain.gateway.balance(profile, payer.address),
  ]);
  const proof = encodeGatewayProof({
    chainId: deps.chain.chainId(profile),
    signature,
    authorization,
  });
  return {
    proof,
    headers: {
      "X-402-Payment-Proof": proof,
      ...(payer.kind === "agent"
        ? { "X-Agent-ID": payer.agent.agentId, "X-Agent-Signature": agentSignature! }
        : {}),
    },
    payer: checksum(payer.address),
    payTo: checksum(authorization.to),
    amount: usdc(authorization.value),
    amountUnits: authorization.value.toString(),
    nonce: authorization.nonce,
    validAfter: Number(authorization.validAfter),
    validBefore: Number(authorization.validBefore),
    gatewayBalance: usdc(balance.available),
    ...(payer.kind === "agent" ? { agentId: payer.agent.agentId } : {}),
  };
}

/** GET /api/x402/gateway/balance: the payer's on-chain USDC and gateway balances. */
export async function payerBalance(deps: PayerDeps, m: MerchantRow, ref: PayerRef) {
  const profile = x402Profile(deps);
  const payer = await resolvePayer(deps, m, ref);
  const [wallet, gateway, pending] = await Promise.all([
    deps.chain.usdcBalance(profile, payer.address),
    gatewayView(deps, profile, payer.address),
    pendingOf(deps.sql, deps.chain.chainId(profile), payer.address),
  ]);
  return {
    address: checksum(payer.address),
    ...payerFields(payer),
    wallet: { balance: usdc(wallet) },
    gateway,
    pending,
  };
}

/**
 * POST /api/x402/gateway/withdraw: pays out of the payer's gateway balance, at most what is
 * withdrawable, to `destinationAddress` (default the payer itself). A wallet calls the vault
 * itself; an agent's account calls it through `execute`, sent by its owner wallet. The seller
 * withdrawal's rules and texts; with an Idempotency-Key a retry finds the first transaction.
 */
export async function withdrawPayer(
  deps: PayerDeps,
  m: MerchantRow,
  input: PayerRef & { amount: bigint; destinationAddress?: string },
  requestKey?: string,
) {
  const profile = x402Profile(deps);
  const payer = await resolvePayer(deps, m, input);
  const recipient = lower(input.destinationAddress ?? payer.address);
  // Not into the token or one of our vaults (the gateway vault included): stranded there.
  if (deps.chain.isServiceContract(profile, recipient)) {
    throw new DomainError("withdraw_destination_contract");
  }
  const sender = payer.kind === "wallet" ? payer.walletId : payer.agent.ownerWalletId;
  const intentKey = requestIntent("x402-payer-withdraw", sender, requestKey, [
    m.id,
    payer.address,
    input.amount,
    recipient,
  ]);
  const exceeds = (can: bigint) =>
    new DomainError("x402_withdraw_exceeds", { withdrawable: usdc(can > 0n ? can : 0n) });
  // Under the payer's claim until the withdrawal is mined: two withdrawals never count on the
  // same balance; the check holds no connection while it waits. Paid calls of this payer
  // (reserved on its mirror row) are refused meanwhile (x402.batched.mirror.ts), and those
  // reserved before are counted by the check (PENDING, their upstream already called).
  const claim = payerClaim(deps.chain.chainId(profile), payer.address);
  const tx = await withClaim(
    deps.sql,
    claim,
    () =>
      whileWithdrawing(deps, profile, payer.address, intentKey, async (fence) => {
        const earlier = requestKey === undefined
          ? null
          : await deps.chain.intent(profile, intentKey);
        if (!earlier || earlier.status === "failed") {
          const can = await withdrawableNow(deps, profile, payer.address, [
            `x402-payer-withdraw:${sender}:`,
            ...(payer.kind === "wallet" ? [`x402-withdraw:${sender}:`] : []),
          ]);
          if (can < input.amount) throw exceeds(can);
        }
        fence();
        try {
          return payer.kind === "wallet"
            ? await deps.chain.gateway.withdraw(profile, {
              from: { walletId: payer.walletId },
              amount: input.amount,
              to: recipient,
              intentKey,
            })
            : await deps.chain.gateway.withdrawFromAccount(profile, {
              ownerWalletId: payer.agent.ownerWalletId,
              account: payer.address,
              amount: input.amount,
              to: recipient,
              intentKey,
            });
        } catch (e) {
          // Spent on the contract directly (the key's holder is the service, but the chain is open)
          // between our check and the node's estimate.
          if (
            e instanceof DomainError && e.code === "chain_reverted" &&
            NOT_WITHDRAWABLE.test(e.details.hint ?? "")
          ) {
            throw exceeds((await deps.chain.gateway.balance(profile, payer.address)).withdrawable);
          }
          throw e;
        }
      }),
  );
  return {
    txHash: tx.txHash,
    amount: usdc(input.amount),
    sourceChain: SOURCE_CHAIN,
    destinationChain: SOURCE_CHAIN,
    recipient: checksum(recipient),
    status: "confirmed" as const,
    explorerUrl: deps.chain.explorerTxUrl(profile, tx.txHash),
    payer: checksum(payer.address),
    ...payerFields(payer),
    gateway: await gatewayView(deps, profile, payer.address),
  };
}

/**
 * POST /api/x402/gateway/withdraw/start: one of the merchant's payers starts withdrawing `amount`
 * of its gateway balance on a vault with a delay (x402.withdrawals.ts); a wallet calls the vault
 * itself, an agent's account through `execute`, sent by its owner wallet.
 */
export async function startPayerWithdrawal(
  deps: PayerDeps,
  m: MerchantRow,
  input: PayerRef & { amount: bigint },
  requestKey?: string,
) {
  const payer = await resolvePayer(deps, m, input);
  const sender = payer.kind === "wallet" ? payer.walletId : payer.agent.ownerWalletId;
  const started = await startWithdrawal(deps, {
    address: payer.address,
    from: { walletId: sender },
    account: payer.kind === "agent" ? payer.address : undefined,
    intentKey: requestIntent("x402-payer-withdraw-start", sender, requestKey, [
      m.id,
      payer.address,
      input.amount,
    ]),
  }, input.amount);
  return { ...started, payer: checksum(payer.address), ...payerFields(payer) };
}
