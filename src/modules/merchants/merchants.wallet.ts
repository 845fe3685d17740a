/**
 * The payout wallet: a service-managed wallet, or an external wallet linked by signing a
 * Sign-In with Ethereum message. The challenge is stored (hash of the exact message, address,
 * expiry) and consumed on first use, whatever the outcome.
 */
import { sha256 } from "../../codec.ts";
import type { Deps } from "../../deps.ts";
import { DomainError } from "../../errors.ts";
import { M } from "../../http/messages.ts";
import { WALLET_NONCE_SECONDS } from "../../http/session-token.ts";
import { checksum, isAddress, lower } from "../../chain/address.ts";
import * as repo from "./merchants.repo.ts";
import type { MerchantRow, WalletProvider } from "./merchants.types.ts";
import { displayAddress } from "./merchants.service.ts";
import { EXTERNAL_WALLET_KINDS } from "./merchants.schemas.ts";
import { createManagedWallet } from "../wallets/wallets.service.ts";

export function walletView(m: MerchantRow) {
  return {
    walletProvider: m.walletProvider,
    walletAddress: displayAddress(m.walletAddress),
    managedWalletId: m.walletProvider === "MANAGED" ? m.managedWalletId : null,
  };
}

/** A brand-new managed wallet; allowed only when the payout wallet is not already managed. */
export async function switchToManaged(deps: Deps, m: MerchantRow, walletProvider: string) {
  if (walletProvider !== "MANAGED") throw new DomainError("wallet_provider_not_managed");
  // On the merchant's row lock, the check, the new wallet and the switch in one transaction
  // (a managed wallet is a keystore row, no chain work): of concurrent switches one makes a
  // wallet, the others find it and are refused, and none leaves a wallet behind.
  const updated = await deps.sql.begin(async (tx) => {
    // The session's merchant (merchants are never deleted).
    const current = (await repo.findById(tx, m.id, { forUpdate: true }))!;
    if (current.walletProvider === "MANAGED" && current.managedWalletId) {
      throw new DomainError("wallet_already_managed");
    }
    let wallet;
    try {
      wallet = await createManagedWallet(deps, m.id, { tx });
    } catch (e) {
      deps.log.error("managed wallet provisioning failed", { merchantId: m.id, error: e });
      throw new DomainError("wallet_setup_failed", {}, { cause: e });
    }
    return await repo.setPayoutWallet(tx, m.id, {
      walletProvider: "MANAGED",
      walletAddress: wallet.address,
      managedWalletId: wallet.walletId,
      now: deps.clock.now(),
    });
  });
  return {
    message: M.walletManagedCreated,
    wallet: {
      walletProvider: "MANAGED" as const,
      walletAddress: displayAddress(updated.walletAddress),
    },
  };
}

export async function linkChallenge(deps: Deps, m: MerchantRow, address: string | undefined) {
  if (!address) throw new DomainError("wallet_address_missing");
  if (!isAddress(address)) throw new DomainError("wallet_address_invalid");
  const now = deps.clock.now();
  const expiresAt = new Date(now.getTime() + WALLET_NONCE_SECONDS * 1000);
  const nonce = deps.chain.siwe.nonce();
  const base = new URL(deps.config.BASE_URL);
  const message = deps.chain.siwe.message({
    domain: base.host,
    uri: deps.config.BASE_URL,
    address: checksum(address),
    chainId: deps.chain.chainId(deps.chain.payoutProfile()),
    nonce,
    issuedAt: now,
    expirationTime: expiresAt,
    statement: "Link this wallet as the payout wallet of your merchant account.",
  });
  await repo.insertChallenge(deps.sql, {
    nonce,
    merchantId: m.id,
    address: lower(address),
    messageHash: sha256(message),
    issuedAt: now,
    expiresAt,
  });
  return { message, nonce };
}

export async function linkWallet(
  deps: Deps,
  m: MerchantRow,
  nonce: string | undefined,
  body: { address?: unknown; message?: unknown; signature?: unknown; walletKind?: unknown },
) {
  const { address, message, signature, walletKind } = body;
  if (
    typeof address !== "string" || !address || typeof message !== "string" || !message ||
    typeof signature !== "string" || !signature || typeof walletKind !== "string" || !walletKind
  ) {
    throw new DomainError("wallet_link_fields_missing");
  }
  if (!(EXTERNAL_WALLET_KINDS as readonly string[]).includes(walletKind)) {
    throw new DomainError("wallet_kind_invalid");
  }
  const now = deps.clock.now();
  const challenge = nonce ? await repo.consumeChallenge(deps.sql, nonce, m.id, now) : null;
  if (!challenge) throw new DomainError("wallet_challenge_missing");
  const matches = isAddress(address) && lower(address) === challenge.address &&
    sha256(message) === challenge.messageHash;
  const valid = matches && await deps.chain.siwe.verify(deps.chain.payoutProfile(), {
    message,
    signature,
    domain: new URL(deps.config.BASE_URL).host,
    nonce: challenge.nonce,
    address: checksum(address),
    time: now,
  });
  if (!valid) throw new DomainError("wallet_signature_invalid");
  const updated = await repo.setPayoutWallet(deps.sql, m.id, {
    walletProvider: walletKind as WalletProvider,
    walletAddress: lower(address),
    managedWalletId: null,
    now,
  });
  return {
    wallet: {
      walletProvider: updated.walletProvider,
      walletAddress: displayAddress(updated.walletAddress),
    },
  };
}
