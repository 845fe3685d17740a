/**
 * The merchant row as other modules see it (keys, payments, the auth middleware): types live
 * here, not in the repo, so no module imports another module's repo.
 */
export type WalletProvider = "MANAGED" | "EXTENSION_WALLET" | "LINK_WALLET" | "HOSTED_WALLET";

export interface MerchantRow {
  id: string;
  email: string;
  businessName: string;
  passwordHash: string;
  walletProvider: WalletProvider;
  walletAddress: string | null;
  managedWalletId: string | null;
  verifiedAt: Date | null;
  verificationCodeHash: string | null;
  verificationExpiresAt: Date | null;
  verificationAttempts: number;
  createdAt: Date;
  updatedAt: Date;
}
