/** Wallet-first consumer sessions: a managed wallet made for you, or your own wallet's address. */
import type { Deps } from "../../deps.ts";
import { DomainError } from "../../errors.ts";
import { CONSUMER_SESSION_SECONDS, signToken, verifyToken } from "../../http/session-token.ts";
import { checksum, isAddress, lower } from "../../chain/address.ts";
import { formatUsdc } from "../../money.ts";
import * as repo from "./consumers.repo.ts";

export async function startSession(deps: Deps, walletAddress: unknown) {
  const now = deps.clock.now();
  let account: repo.ConsumerRow;
  // Only an omitted field makes a managed wallet; "" or null is an invalid address, not "none".
  if (walletAddress === undefined) {
    const w = await deps.chain.createWallet("consumer");
    account = await repo.insertManaged(deps.sql, {
      walletAddress: w.address,
      managedWalletId: w.id,
      now,
    });
  } else {
    if (!isAddress(walletAddress)) throw new DomainError("consumer_address_invalid");
    account = await repo.upsertExternal(deps.sql, lower(walletAddress), now);
  }
  return { account, token: await sessionToken(deps, account.id, now) };
}

/**
 * A new session token for an account a session was started for: the cookie of an idempotent
 * replay of `POST /api/consumer/session` (the stored answer keeps no token). Null when the
 * account is gone.
 */
export async function resumeSession(deps: Deps, accountId: string): Promise<string | null> {
  const account = await repo.findById(deps.sql, accountId);
  return account ? await sessionToken(deps, account.id, deps.clock.now()) : null;
}

function sessionToken(deps: Deps, accountId: string, now: Date): Promise<string> {
  return signToken(deps.config, "consumer", { sub: accountId }, now, CONSUMER_SESSION_SECONDS);
}

/** The account a consumer_token names; throws the spec's texts otherwise. */
export async function sessionAccount(
  deps: Deps,
  token: string | undefined,
): Promise<repo.ConsumerRow> {
  if (!token) throw new DomainError("consumer_session_missing");
  const claims = await verifyToken(deps.config, "consumer", token, deps.clock.now());
  const account = claims ? await repo.findById(deps.sql, claims.sub) : null;
  if (!account) throw new DomainError("consumer_session_invalid");
  return account;
}

/**
 * Whose Idempotency-Keys a consumer session's request uses: its account, from the token alone
 * (no read: a session whose account is gone is refused by the route itself). Undefined without a
 * valid token (the client's address then, as for any caller the route will refuse).
 */
export async function consumerKeyScope(
  deps: Deps,
  token: string | undefined,
): Promise<string | undefined> {
  if (!token) return undefined;
  const claims = await verifyToken(deps.config, "consumer", token, deps.clock.now());
  return claims ? `consumer:${claims.sub}` : undefined;
}

export function publicAccount(a: repo.ConsumerRow) {
  return {
    id: a.id,
    walletAddress: checksum(a.walletAddress),
    walletType: a.walletType,
    lastSeenAt: a.lastSeenAt.toISOString(),
  };
}

export async function balances(deps: Deps, a: repo.ConsumerRow) {
  const address = a.walletAddress as `0x${string}`;
  const out = [];
  for (const profile of deps.chain.profiles()) {
    const units = await deps.chain.usdcBalance(profile, address);
    out.push({
      chain: profile,
      chainId: deps.chain.chainId(profile),
      currency: "USDC",
      balance: formatUsdc(units, { decimals: "fixed" }),
    });
  }
  // A managed wallet can bridge from the source chains: their balances too, but only of the
  // chains already running (or reachable by a configured RPC): asking never starts a node.
  if (a.walletType !== "MANAGED") return out;
  for (const profile of deps.chain.readableSources()) {
    try {
      const units = await deps.chain.sourceUsdcBalance(profile, address);
      out.push({
        chain: profile,
        chainId: deps.chain.profileConfig(profile).chainId,
        currency: "USDC",
        balance: formatUsdc(units, { decimals: "fixed" }),
      });
    } catch (e) {
      // A source chain's RPC being down does not fail the settlement balances.
      deps.log.warn("source chain balance unavailable", { chain: profile, error: String(e) });
    }
  }
  return out;
}

export async function activity(deps: Deps, a: repo.ConsumerRow, limit = 50) {
  const address = a.walletAddress as `0x${string}`;
  const all = [];
  for (const profile of deps.chain.profiles()) {
    for (const t of await deps.chain.usdcTransfers(profile, address, { limit })) {
      all.push({
        chain: profile,
        direction: t.direction,
        counterparty: checksum(t.direction === "in" ? t.from : t.to),
        amount: formatUsdc(t.amount, { decimals: "fixed" }),
        currency: "USDC",
        txHash: t.txHash,
        blockNumber: Number(t.blockNumber),
        timestamp: t.timestamp?.toISOString() ?? null,
        explorerUrl: deps.chain.explorerTxUrl(profile, t.txHash),
      });
    }
  }
  all.sort((x, y) => (y.timestamp ?? "").localeCompare(x.timestamp ?? ""));
  return all.slice(0, limit);
}
