/**
 * Merchant accounts: signup, verify, login, the payout wallet and wallet linking; the response
 * bodies and the routes. Each request field's issues carry its catalog text.
 */
import { z } from "zod";
import { M } from "../../http/messages.ts";
import { isAddress } from "../../chain/address.ts";
import { EMAIL_MAX_LENGTH, PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH } from "./merchants.rules.ts";

export const WALLET_PROVIDERS = [
  "MANAGED",
  "EXTENSION_WALLET",
  "LINK_WALLET",
  "HOSTED_WALLET",
] as const;
export const EXTERNAL_WALLET_KINDS = ["EXTENSION_WALLET", "LINK_WALLET", "HOSTED_WALLET"] as const;

export const signupBody = z.object({
  email: z.string({ error: M.signupEmail }).trim().max(EMAIL_MAX_LENGTH, M.signupEmail)
    .email(M.signupEmail),
  businessName: z.string({ error: M.signupBusinessName }).trim().min(1, M.signupBusinessName)
    .max(120, M.signupBusinessName),
  password: z.string({ error: M.signupPassword }).min(PASSWORD_MIN_LENGTH, M.signupPassword)
    .max(PASSWORD_MAX_LENGTH, M.signupPassword),
  walletProvider: z.enum(WALLET_PROVIDERS, { error: M.signupWalletProvider }).default("MANAGED"),
});

export const verifyBody = z.object({
  email: z.string({ error: M.verifyFields }).trim().min(1, M.verifyFields),
  code: z.string({ error: M.verifyFields }).trim().min(1, M.verifyFields).max(32, M.verifyFields),
});

// No upper bounds here: an over-long email or password is a wrong credential (login answers
// 401 without hashing it), not a missing one.
export const loginBody = z.object({
  email: z.string({ error: M.loginFields }).trim().min(1, M.loginFields),
  password: z.string({ error: M.loginFields }).min(1, M.loginFields),
});

/** Only MANAGED can be set here; an external wallet is linked through wallet/connect. */
export const walletPatchBody = z.object({
  walletProvider: z.literal("MANAGED", { error: M.walletPatchExternal }),
});

export const connectQuery = z.object({
  address: z.string({ error: M.connectAddressMissing }).min(1, M.connectAddressMissing)
    .refine(isAddress, M.connectAddressInvalid),
});

/** Every field first (one text for any missing one), then the kind. */
export const connectBody = z.object({
  address: z.string({ error: M.connectFields }).min(1, M.connectFields),
  message: z.string({ error: M.connectFields }).min(1, M.connectFields),
  signature: z.string({ error: M.connectFields }).min(1, M.connectFields),
  walletKind: z.string({ error: M.connectFields }).min(1, M.connectFields)
    .pipe(z.enum(EXTERNAL_WALLET_KINDS, { error: M.connectKind })),
});

export const iso = z.string().describe("ISO 8601 timestamp");
const address = z.string().describe("EVM address, EIP-55 checksummed");

export const publicMerchant = z.object({
  id: z.string(),
  email: z.string(),
  businessName: z.string(),
  walletProvider: z.enum(WALLET_PROVIDERS),
  walletAddress: address.nullable(),
  createdAt: iso,
}).meta({ id: "Merchant" });

export const walletView = z.object({
  walletProvider: z.enum(WALLET_PROVIDERS),
  walletAddress: address.nullable(),
});
