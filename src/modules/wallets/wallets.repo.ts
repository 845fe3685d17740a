/** SQL for merchant_wallets: which managed wallets a merchant controls. */
import type { Db } from "../../db/client.ts";
import type { MerchantWalletRow } from "./wallets.types.ts";

export async function insert(
  sql: Db,
  w: { walletId: string; merchantId: string; address: string; label: string | null; now: Date },
): Promise<MerchantWalletRow> {
  const [row] = await sql<MerchantWalletRow[]>`
    insert into merchant_wallets (wallet_id, merchant_id, address, label, created_at)
    values (${w.walletId}, ${w.merchantId}, ${w.address}, ${w.label}, ${w.now})
    returning wallet_id, merchant_id, address, label, created_at`;
  return row;
}

/** Oldest first: the first wallet is the one made at verification. */
export async function listForMerchant(sql: Db, merchantId: string): Promise<MerchantWalletRow[]> {
  return await sql<MerchantWalletRow[]>`
    select wallet_id, merchant_id, address, label, created_at from merchant_wallets where merchant_id = ${merchantId}
    order by seq`;
}

export async function findForMerchant(
  sql: Db,
  merchantId: string,
  walletId: string,
): Promise<MerchantWalletRow | null> {
  const [row] = await sql<MerchantWalletRow[]>`
    select wallet_id, merchant_id, address, label, created_at from merchant_wallets where merchant_id = ${merchantId} and wallet_id = ${walletId}`;
  return row ?? null;
}

export async function findForMerchantByAddress(
  sql: Db,
  merchantId: string,
  address: string,
): Promise<MerchantWalletRow | null> {
  const [row] = await sql<MerchantWalletRow[]>`
    select wallet_id, merchant_id, address, label, created_at from merchant_wallets
    where merchant_id = ${merchantId} and address = ${address.toLowerCase()}`;
  return row ?? null;
}
