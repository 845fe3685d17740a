/** SQL for managed wallets: addresses and their sealed keys (sealed before they get here). */
import type { Db } from "../db/client.ts";
import type { SealedKey } from "./keystore.ts";

export type WalletPurpose = "merchant" | "consumer" | "agent" | "operator" | "test";

export interface ManagedWallet {
  id: string;
  address: `0x${string}`;
  purpose: WalletPurpose;
  createdAt: Date;
}

export interface SealedWalletRow extends ManagedWallet {
  keyVersion: number;
  keyCiphertext: Uint8Array;
  keyIv: Uint8Array;
  dekCiphertext: Uint8Array;
  dekIv: Uint8Array;
}

export async function insertWallet(
  sql: Db,
  w: { address: string; purpose: WalletPurpose; sealed: SealedKey },
): Promise<ManagedWallet> {
  const [row] = await sql<ManagedWallet[]>`
    insert into wallets (address, purpose, key_version, key_ciphertext, key_iv, dek_ciphertext, dek_iv)
    values (${w.address}, ${w.purpose}, ${w.sealed.version}, ${w.sealed.keyCiphertext}, ${w.sealed.keyIv},
            ${w.sealed.dekCiphertext}, ${w.sealed.dekIv})
    returning id, address, purpose, created_at`;
  return row;
}

export async function findById(sql: Db, id: string): Promise<ManagedWallet | null> {
  const [row] = await sql<ManagedWallet[]>`
    select id, address, purpose, created_at from wallets where id = ${id}`;
  return row ?? null;
}

/** `address` in lower case, as stored. */
export async function findByAddress(sql: Db, address: string): Promise<ManagedWallet | null> {
  const [row] = await sql<ManagedWallet[]>`
    select id, address, purpose, created_at from wallets where address = ${address}`;
  return row ?? null;
}

/** Any one sealed wallet (the oldest): what a master key is tried on. */
export async function anySealed(sql: Db): Promise<SealedWalletRow | null> {
  const [row] = await sql<SealedWalletRow[]>`
    select * from wallets order by created_at, id limit 1`;
  return row ?? null;
}

export async function findSealed(sql: Db, id: string): Promise<SealedWalletRow | null> {
  const [row] = await sql<SealedWalletRow[]>`select * from wallets where id = ${id}`;
  return row ?? null;
}
