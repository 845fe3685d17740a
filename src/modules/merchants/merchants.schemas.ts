/** Request schemas for merchant accounts; each failure carries its catalog text. */
import { z } from "zod";
import { EMAIL_MAX_LENGTH, PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH } from "./merchants.rules.ts";

export const WALLET_PROVIDERS = [
  "MANAGED",
  "EXTENSION_WALLET",
  "LINK_WALLET",
  "HOSTED_WALLET",
] as const;
export const EXTERNAL_WALLET_KINDS = ["EXTENSION_WALLET", "LINK_WALLET", "HOSTED_WALLET"] as const;

export const signupBody = z.object({
  email: z.string().trim().max(EMAIL_MAX_LENGTH).email(),
  businessName: z.string().trim().min(1).max(120),
  password: z.string().min(PASSWORD_MIN_LENGTH).max(PASSWORD_MAX_LENGTH),
  walletProvider: z.enum(WALLET_PROVIDERS).default("MANAGED"),
});

export const verifyBody = z.object({
  email: z.string().trim().min(1),
  code: z.string().trim().min(1).max(32),
});

// No upper bounds here: an over-long email or password is a wrong credential (login answers
// 401 without hashing it), not a missing one.
export const loginBody = z.object({
  email: z.string().trim().min(1),
  password: z.string().min(1),
});

export const walletPatchBody = z.object({ walletProvider: z.string() });

export const connectQuery = z.object({ address: z.string().optional() });

export const connectBody = z.object({
  address: z.string().min(1),
  message: z.string().min(1),
  signature: z.string().min(1),
  walletKind: z.string().min(1),
});
