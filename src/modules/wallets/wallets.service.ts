/**
 * Merchant wallets: the managed wallets a merchant controls (the payout wallet among them), their
 * USDC per chain, and withdrawals out of them. Every lookup is scoped by merchant: another
 * merchant's wallet id is simply not found. A wallet's address is the same on every chain; what
 * it holds is per chain, and the API shows and moves only the credential's chain's.
 */
import { sha256 } from "../../codec.ts";
import { decodeFunctionData, erc20Abi } from "viem";
import type { Deps } from "../../deps.ts";
import { withClaim } from "../../db/claims.ts";
import type { Db } from "../../db/client.ts";
import { DomainError } from "../../errors.ts";
import { checksum, lower } from "../../chain/address.ts";
import type { ProfileName } from "../../chain/profiles.ts";
import { formatUsdc } from "../../money.ts";
import type { MerchantRow } from "../merchants/merchants.types.ts";
import * as repo from "./wallets.repo.ts";
import type { MerchantWalletRow } from "./wallets.types.ts";

export type { MerchantWalletRow } from "./wallets.types.ts";

/**
 * A new managed wallet for the merchant. `tx` lets verification register it in the transaction
 * that marks the merchant verified (the sealed key itself is written by the chain module first).
 */
export async function createManagedWallet(
  deps: Pick<Deps, "chain" | "sql" | "clock">,
  merchantId: string,
  opts: { label?: string | null; tx?: Db } = {},
): Promise<MerchantWalletRow> {
  // Within the caller's transaction when it has one (verify holds the merchant's row lock).
  const w = await deps.chain.createWallet("merchant", { db: opts.tx });
  return await repo.insert(opts.tx ?? deps.sql, {
    walletId: w.id,
    merchantId,
    address: w.address,
    label: opts.label ?? null,
    now: deps.clock.now(),
  });
}

export function walletView(m: MerchantRow, w: MerchantWalletRow) {
  return {
    id: w.walletId,
    address: checksum(w.address),
    label: w.label,
    payout: m.walletProvider === "MANAGED" && m.managedWalletId === w.walletId,
    createdAt: w.createdAt.toISOString(),
  };
}

export type WalletView = ReturnType<typeof walletView>;
export type Balances = Record<string, string | null>;

export async function createWallet(deps: Deps, m: MerchantRow, input: { label?: string }) {
  return walletView(m, await createManagedWallet(deps, m.id, { label: input.label }));
}

/**
 * The merchant's wallets with their USDC on `profiles` (the API: the credential's chain only; the
 * dashboard: every configured chain).
 */
export async function listWallets(deps: Deps, m: MerchantRow, profiles?: ProfileName[]) {
  const rows = await repo.listForMerchant(deps.sql, m.id);
  return await Promise.all(
    rows.map(async (w) => ({
      ...walletView(m, w),
      balances: await balances(deps, w.address, profiles),
    })),
  );
}

/** The merchant's managed wallets, ids and addresses only (no chain reads). */
export async function walletAddresses(deps: Pick<Deps, "sql">, merchantId: string) {
  const rows = await repo.listForMerchant(deps.sql, merchantId);
  return rows.map((w) => ({ id: w.walletId, address: w.address.toLowerCase() }));
}

export async function getWallet(
  deps: Deps,
  m: MerchantRow,
  id: string,
  profiles?: ProfileName[],
) {
  const w = await find(deps, m.id, id);
  return { ...walletView(m, w), balances: await balances(deps, w.address, profiles) };
}

/** The merchant's wallet, or wallet_not_found (also for another merchant's id). */
async function find(deps: Deps, merchantId: string, id: string): Promise<MerchantWalletRow> {
  const w = UUID.test(id) ? await repo.findForMerchant(deps.sql, merchantId, id) : null;
  if (!w) throw new DomainError("wallet_not_found");
  return w;
}

/**
 * "A wallet the merchant controls" (spec): one of its managed wallets, by id or by address; null
 * for anything else (another merchant's wallet, an external address, a malformed value).
 */
export async function controlledWallet(
  deps: Pick<Deps, "sql">,
  merchantId: string,
  by: { walletId?: string; address?: string },
): Promise<MerchantWalletRow | null> {
  if (by.walletId !== undefined) {
    return UUID.test(by.walletId)
      ? await repo.findForMerchant(deps.sql, merchantId, by.walletId)
      : null;
  }
  if (by.address !== undefined && /^0x[0-9a-fA-F]{40}$/.test(by.address)) {
    return await repo.findForMerchantByAddress(deps.sql, merchantId, by.address);
  }
  return null;
}

/** USDC (6 places) on `profiles` (default every configured chain); null where unreadable now. */
async function balances(
  deps: Deps,
  address: `0x${string}`,
  profiles?: ProfileName[],
): Promise<Balances> {
  const entries = await Promise.all(
    (profiles ?? deps.chain.profiles()).filter((p) => deps.chain.has(p)).map(async (p) => {
      try {
        return [p, formatUsdc(await deps.chain.usdcBalance(p, address), { decimals: "fixed" })];
      } catch (e) {
        deps.log.warn("balance unavailable", { profile: p, error: e });
        return [p, null];
      }
    }),
  );
  return Object.fromEntries(entries);
}

/** Test USDC one faucet press mints (the dashboard's development button). */
export const FAUCET_AMOUNT = 100n * 1_000_000n;

/** Chains the dashboard's faucet may mint on: local nodes, outside production only. */
export function faucetProfiles(deps: Deps): ProfileName[] {
  if (deps.config.isProduction) return [];
  return deps.chain.profiles().filter((p) => deps.chain.isLocal(p));
}

/** Mints test USDC into one of the merchant's wallets on a local chain (development only). */
export async function faucet(deps: Deps, m: MerchantRow, walletId: string, profile: string) {
  const w = await find(deps, m.id, walletId);
  const allowed = faucetProfiles(deps).find((p) => p === profile);
  if (!allowed) throw new DomainError("dev_faucet_unavailable");
  const row = await deps.chain.mintUsdc({ profile: allowed, to: w.address, amount: FAUCET_AMOUNT });
  return { txHash: row.txHash, amount: formatUsdc(FAUCET_AMOUNT, { decimals: "fixed" }) };
}

export interface WithdrawInput {
  amount: bigint;
  destinationAddress: string;
  walletId?: string;
}

/**
 * Moves USDC out of one of the merchant's managed wallets on `profile`'s chain and waits for the
 * receipt. Without `walletId` the source is the payout wallet, which must be managed. With a
 * request key (the Idempotency-Key) the transfer's intent is derived from it and the request, so
 * a retry after a timeout finds the first transfer instead of sending a second.
 *
 * Under the wallet's claim (no connection held while waiting or sending): the balance on chain
 * less the wallet's withdrawals still in flight (a dead process's, signed or broadcast) must
 * cover the amount, else 400 with `balance` before anything is signed; a concurrent withdrawal
 * waits and then sees what the first left.
 */
export async function withdraw(
  deps: Deps,
  m: MerchantRow,
  profile: ProfileName,
  input: WithdrawInput,
  requestKey?: string,
) {
  const source = await withdrawSource(deps, m, input.walletId);
  if (!deps.chain.has(profile)) throw new DomainError("chain_not_configured");
  const to = lower(input.destinationAddress);
  // The token or one of our vaults: nothing would ever take the USDC out again (an audit sent
  // 0.5 USDC into the escrow vault, where no escrow accounts for it).
  if (deps.chain.isServiceContract(profile, to)) {
    throw new DomainError("withdraw_destination_contract");
  }
  const family = `withdraw:${source.walletId}:`;
  const intentKey = requestKey === undefined
    ? `${family}${crypto.randomUUID()}`
    : `${family}${sha256([m.id, requestKey, profile, input.amount, to].join("\n"))}`;
  const row = await withClaim(deps.sql, usdcClaim(deps, profile, source.address), async () => {
    const earlier = requestKey === undefined ? null : await deps.chain.intent(profile, intentKey);
    if (!earlier || earlier.status === "failed") {
      const can = await spendable(deps, profile, source);
      if (can < input.amount) throw insufficient(can);
    }
    try {
      return await deps.chain.transferUsdc({
        profile,
        from: { walletId: source.walletId },
        to,
        amount: input.amount,
        intentKey,
      });
    } catch (e) {
      // Spent on chain outside the service between our check and the node's estimate.
      if (
        e instanceof DomainError && e.code === "chain_reverted" &&
        /ERC20InsufficientBalance/.test(e.details.hint ?? "")
      ) {
        throw insufficient(await deps.chain.usdcBalance(profile, source.address));
      }
      throw e;
    }
  });
  return {
    txHash: row.txHash,
    explorerUrl: deps.chain.explorerTxUrl(profile, row.txHash),
    amount: formatUsdc(input.amount, { decimals: "fixed" }),
    recipient: checksum(to),
    status: "confirmed" as const,
    walletId: source.walletId,
    chain: profile,
  };
}

/**
 * What a withdrawal would do, checked as `withdraw` checks it, nothing signed (the dashboard's
 * review step): the source wallet, and a balance (less its withdrawals in flight) that covers
 * the amount, else the same 400 with `balance`.
 */
export async function previewWithdraw(
  deps: Deps,
  m: MerchantRow,
  profile: ProfileName,
  input: WithdrawInput,
) {
  const source = await withdrawSource(deps, m, input.walletId);
  if (!deps.chain.has(profile)) throw new DomainError("chain_not_configured");
  const can = await spendable(deps, profile, source);
  if (can < input.amount) throw insufficient(can);
  return {
    source: checksum(source.address),
    label: source.label,
    balance: formatUsdc(can, { decimals: "fixed" }),
  };
}

/** What a withdrawal from `source` may move: its USDC less its withdrawals still in flight. */
async function spendable(
  deps: Deps,
  profile: ProfileName,
  source: { walletId: string; address: `0x${string}` },
): Promise<bigint> {
  const [balance, inFlight] = await Promise.all([
    deps.chain.usdcBalance(profile, source.address),
    transfersInFlight(deps, profile, `withdraw:${source.walletId}:`),
  ]);
  return balance - inFlight;
}

/**
 * The claim under which a managed wallet's USDC is spent by this service's checked actions
 * (withdrawals, gateway deposits): one per wallet and chain.
 */
export function usdcClaim(deps: Pick<Deps, "chain">, profile: ProfileName, address: string) {
  return `usdc:${deps.chain.chainId(profile)}:${lower(address)}`;
}

/** USDC the wallet's withdrawal transfers still in flight will move (`family`: their intents). */
async function transfersInFlight(deps: Deps, profile: ProfileName, family: string) {
  let total = 0n;
  for (const tx of await deps.chain.openIntents(profile, family)) {
    try {
      const call = decodeFunctionData({ abi: erc20Abi, data: tx.data as `0x${string}` });
      if (call.functionName === "transfer") total += call.args[1];
    } catch { /* not a transfer: nothing to count */ }
  }
  return total;
}

async function withdrawSource(deps: Deps, m: MerchantRow, walletId: string | undefined) {
  if (walletId !== undefined) return await find(deps, m.id, walletId);
  if (m.walletProvider !== "MANAGED" || !m.managedWalletId) {
    throw new DomainError("withdraw_external_wallet");
  }
  return await find(deps, m.id, m.managedWalletId);
}

function insufficient(balance: bigint): DomainError {
  return new DomainError("withdraw_insufficient_balance", {
    balance: formatUsdc(balance > 0n ? balance : 0n, { decimals: "fixed" }),
  });
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
