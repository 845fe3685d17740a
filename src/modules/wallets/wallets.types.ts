/** A merchant's managed wallet as other modules see it (types here, not in the repo). */
export interface MerchantWalletRow {
  walletId: string;
  merchantId: string;
  /** Lower case, as stored. */
  address: `0x${string}`;
  label: string | null;
  createdAt: Date;
}
