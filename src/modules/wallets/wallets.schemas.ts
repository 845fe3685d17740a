/**
 * Merchant wallets and withdrawals: request bodies (each field's issues carry its catalog text),
 * response bodies and the routes.
 */
import { z } from "zod";
import { M } from "../../http/messages.ts";
import { isAddress } from "../../chain/address.ts";
import { usdcAmount } from "../../money.ts";

const ZERO_ADDRESS = /^0x0{40}$/i;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A blank label is no label (as for API keys). */
export const createWalletBody = z.object({
  label: z.string({ error: M.walletLabel }).trim().max(100, M.walletLabel).optional()
    .transform((v) => (v ? v : undefined)),
});

export const walletIdParams = z.object({ id: z.string().describe("The wallet's UUID") });

export const withdrawBody = z.object({
  amount: usdcAmount(M.withdrawAmount),
  destinationAddress: z.string({ error: M.withdrawDestination })
    .refine((a) => isAddress(a) && !ZERO_ADDRESS.test(a), M.withdrawDestination)
    .describe("EVM address that receives the USDC"),
  walletId: z.string({ error: M.withdrawWalletId }).regex(UUID, M.withdrawWalletId).optional()
    .describe("One of your wallets (GET /api/wallets); default the payout wallet"),
});

export const WITHDRAW_HINTS: Record<string, string> = { amount: M.withdrawAmountHint };

const iso = z.string().describe("ISO 8601 timestamp");
export const usdc6 = z.string().describe("USDC with 6 decimal places");

export const wallet = z.object({
  id: z.string().describe("UUID: the wallet id other endpoints take"),
  address: z.string().describe("EVM address, EIP-55 checksummed"),
  label: z.string().nullable(),
  payout: z.boolean().describe("Whether payouts go to this wallet"),
  createdAt: iso,
}).meta({ id: "MerchantWallet" });

export const walletWithBalances = wallet.extend({
  balances: z.record(z.string(), usdc6.nullable()).describe(
    "USDC on the credential's chain only, keyed by its profile (a test key: `testnet`; a live " +
      "key or a live-mode session: `production`); null when that chain cannot be read now",
  ),
}).meta({ id: "MerchantWalletWithBalances" });

export const withdrawResponse = z.object({
  success: z.literal(true),
  txHash: z.string(),
  explorerUrl: z.string(),
  amount: usdc6,
  recipient: z.string(),
  status: z.literal("confirmed"),
  walletId: z.string(),
  chain: z.string().describe(
    "The chain of the credential's environment (a key's prefix; a session's mode)",
  ),
});
