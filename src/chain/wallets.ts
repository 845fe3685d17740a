/**
 * Managed wallets: keys generated here, sealed (keystore.ts) before they touch the database,
 * opened only to sign inside the chain module. Only the id and address ever leave it.
 */
import type { LocalAccount } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import type { Db } from "../db/client.ts";
import { KeystoreError, openPrivateKey, sealPrivateKey } from "./keystore.ts";
import * as repo from "./wallets.repo.ts";
import type { ManagedWallet, SealedWalletRow, WalletPurpose } from "./wallets.repo.ts";

export type { ManagedWallet, WalletPurpose } from "./wallets.repo.ts";

export async function createWallet(
  sql: Db,
  masterKey: string,
  purpose: WalletPurpose,
): Promise<ManagedWallet> {
  const key = generatePrivateKey();
  const address = privateKeyToAccount(key).address.toLowerCase() as `0x${string}`;
  const sealed = await sealPrivateKey(masterKey, key, address);
  return await repo.insertWallet(sql, { address, purpose, sealed });
}

export async function findWallet(sql: Db, id: string): Promise<ManagedWallet | null> {
  return isUuid(id) ? await repo.findById(sql, id) : null;
}

export async function findWalletByAddress(
  sql: Db,
  address: string,
): Promise<ManagedWallet | null> {
  return await repo.findByAddress(sql, address.toLowerCase());
}

/** The signing account of a managed wallet; the key lives only in this object's closure. */
export async function walletAccount(
  sql: Db,
  masterKey: string,
  id: string,
): Promise<LocalAccount> {
  const row = isUuid(id) ? await repo.findSealed(sql, id) : null;
  if (!row) throw new Error(`unknown managed wallet ${id}`);
  return privateKeyToAccount(await openRow(masterKey, row));
}

/**
 * Whether `masterKey` opens the wallet keys this database holds: true, false (a wrong key: every
 * withdrawal and payout would fail with a 500), or null when it holds none yet.
 */
export async function masterKeyOpens(sql: Db, masterKey: string): Promise<boolean | null> {
  const row = await repo.anySealed(sql);
  if (!row) return null;
  try {
    await openRow(masterKey, row);
    return true;
  } catch (e) {
    if (e instanceof KeystoreError) return false;
    throw e;
  }
}

/** A wallet row's private key, opened with the master key (keystore.ts; aad: its address). */
async function openRow(masterKey: string, row: SealedWalletRow): Promise<`0x${string}`> {
  return await openPrivateKey(masterKey, {
    version: 1,
    keyCiphertext: row.keyCiphertext,
    keyIv: row.keyIv,
    dekCiphertext: row.dekCiphertext,
    dekIv: row.dekIv,
  }, row.address);
}

function isUuid(s: string): boolean {
  return /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(s);
}
