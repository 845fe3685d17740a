/**
 * Managed wallets: keys generated here, sealed (keystore.ts) before they touch the database,
 * opened only to sign inside the chain module. Only the id and address ever leave it.
 */
import type { LocalAccount } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import type { Db } from "../db/client.ts";
import { openPrivateKey, sealPrivateKey } from "./keystore.ts";

export type WalletPurpose = "merchant" | "consumer" | "agent" | "operator" | "test";

export interface ManagedWallet {
  id: string;
  address: `0x${string}`;
  purpose: WalletPurpose;
  createdAt: Date;
}

interface WalletRow extends ManagedWallet {
  keyVersion: number;
  keyCiphertext: Uint8Array;
  keyIv: Uint8Array;
  dekCiphertext: Uint8Array;
  dekIv: Uint8Array;
}

export async function createWallet(
  sql: Db,
  masterKey: string,
  purpose: WalletPurpose,
): Promise<ManagedWallet> {
  const key = generatePrivateKey();
  const address = privateKeyToAccount(key).address.toLowerCase() as `0x${string}`;
  const sealed = await sealPrivateKey(masterKey, key, address);
  const [row] = await sql<ManagedWallet[]>`
    insert into wallets (address, purpose, key_version, key_ciphertext, key_iv, dek_ciphertext, dek_iv)
    values (${address}, ${purpose}, ${sealed.version}, ${sealed.keyCiphertext}, ${sealed.keyIv},
            ${sealed.dekCiphertext}, ${sealed.dekIv})
    returning id, address, purpose, created_at`;
  return row;
}

export async function findWallet(sql: Db, id: string): Promise<ManagedWallet | null> {
  if (!isUuid(id)) return null;
  const [row] = await sql<ManagedWallet[]>`
    select id, address, purpose, created_at from wallets where id = ${id}`;
  return row ?? null;
}

export async function findWalletByAddress(
  sql: Db,
  address: string,
): Promise<ManagedWallet | null> {
  const [row] = await sql<ManagedWallet[]>`
    select id, address, purpose, created_at from wallets where address = ${address.toLowerCase()}`;
  return row ?? null;
}

/** The signing account of a managed wallet; the key lives only in this object's closure. */
export async function walletAccount(
  sql: Db,
  masterKey: string,
  id: string,
): Promise<LocalAccount> {
  const [row] = isUuid(id) ? await sql<WalletRow[]>`select * from wallets where id = ${id}` : [];
  if (!row) throw new Error(`unknown managed wallet ${id}`);
  const key = await openPrivateKey(masterKey, {
    version: 1,
    keyCiphertext: row.keyCiphertext,
    keyIv: row.keyIv,
    dekCiphertext: row.dekCiphertext,
    dekIv: row.dekIv,
  }, row.address);
  return privateKeyToAccount(key);
}

function isUuid(s: string): boolean {
  return /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(s);
}
