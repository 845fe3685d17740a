/**
 * Merchant accounts: signup, verify, login, the payout wallet and wallet linking; the response
 * bodies and the routes. Each request field's issues carry its catalog text.
 */
import { z } from "zod";
import { M } from "../../http/messages.ts";
import { bareErrorBody, errors, type RouteDoc } from "../../http/contract.ts";
import { isAddress } from "../../chain/address.ts";
import { PAYMENT_STATUSES, paymentRecord } from "../payments/payments.schemas.ts";
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

const iso = z.string().describe("ISO 8601 timestamp");
const address = z.string().describe("EVM address, EIP-55 checksummed");

export const publicMerchant = z.object({
  id: z.string(),
  email: z.string(),
  businessName: z.string(),
  walletProvider: z.enum(WALLET_PROVIDERS),
  walletAddress: address.nullable(),
  createdAt: iso,
}).meta({ id: "Merchant" });

const walletView = z.object({
  walletProvider: z.enum(WALLET_PROVIDERS),
  walletAddress: address.nullable(),
});

const ok = z.literal(true);
const session = ["merchantCookie"] as const;
const tag = "Merchant";

export const merchantsRoutes: RouteDoc[] = [
  {
    method: "post",
    path: "/api/merchant/signup",
    summary: "Create an account; a verification code is mailed",
    tag,
    auth: [],
    idempotent: true,
    body: signupBody,
    bodyExample: {
      email: "owner@shop.example.com",
      businessName: "Test Shop",
      password: "correct horse battery",
      walletProvider: "MANAGED",
    },
    responses: {
      201: {
        description: "Code sent",
        schema: z.object({ success: ok, message: z.string(), email: z.string() }),
        example: { success: true, message: M.codeSent, email: "owner@shop.example.com" },
      },
      ...errors([400, 409, 429]),
    },
  },
  {
    method: "post",
    path: "/api/merchant/verify",
    summary: "Verify the emailed code; returns the merchant key once",
    tag,
    auth: [],
    idempotent: true,
    body: verifyBody,
    bodyExample: { email: "owner@shop.example.com", code: "A1B2C3" },
    responses: {
      200: {
        description: "Verified",
        schema: z.object({
          success: ok,
          message: z.string(),
          merchant: publicMerchant,
          apiKey: z.string(),
          warning: z.string(),
        }),
      },
      ...errors([400, 404, 409, 429, 500]),
    },
  },
  {
    method: "post",
    path: "/api/merchant/login",
    summary: "Sign in; sets the merchant_token cookie (7 days)",
    tag,
    auth: [],
    body: loginBody,
    bodyExample: { email: "owner@shop.example.com", password: "correct horse battery" },
    responses: {
      200: {
        description: "Signed in",
        schema: z.object({ success: ok, merchant: publicMerchant }),
      },
      ...errors([400, 401, 403, 429]),
    },
  },
  {
    method: "get",
    path: "/api/merchant/me",
    summary: "Profile, stats and the 20 newest payments",
    tag,
    auth: [...session],
    responses: {
      200: {
        description: "The profile",
        schema: z.object({
          success: ok,
          merchant: publicMerchant.extend({ apiKeyHint: z.string().nullable() }),
          stats: z.object({
            totalPayments: z.number(),
            successfulPayments: z.number(),
            totalVolume: z.number(),
            successRate: z.number(),
          }),
          recentPayments: z.array(z.object({
            reference: z.string(),
            amount: z.number(),
            currency: z.string(),
            status: z.enum(PAYMENT_STATUSES),
            timestamp: iso,
            checkoutUrl: z.string(),
          })),
        }),
      },
      ...errors([401, 404, 429]),
    },
  },
  {
    method: "delete",
    path: "/api/merchant/me",
    summary: "Sign out; clears the cookie",
    tag,
    auth: [...session],
    responses: {
      200: {
        description: "Signed out",
        schema: z.object({ success: ok, message: z.string() }),
      },
      ...errors([401, 429]),
    },
  },
  {
    method: "get",
    path: "/api/merchant/dashboard",
    summary: "The merchant's payments on the key's chain (no success field)",
    tag,
    auth: ["apiKey"],
    responses: {
      200: {
        description: "Business name, the key echoed, full payment records",
        schema: z.object({
          businessName: z.string(),
          apiKey: z.string(),
          payments: z.array(paymentRecord),
        }),
      },
      ...errors([401, 403, 404, 429], bareErrorBody),
    },
  },
  {
    method: "get",
    path: "/api/merchant/wallet",
    summary: "The payout wallet",
    tag,
    auth: [...session],
    responses: {
      200: {
        description: "The wallet",
        schema: z.object({
          success: ok,
          wallet: walletView.extend({ managedWalletId: z.string().nullable() }),
        }),
      },
      ...errors([401, 429]),
    },
  },
  {
    method: "patch",
    path: "/api/merchant/wallet",
    summary: "Provision a new managed payout wallet",
    tag,
    auth: [...session],
    body: walletPatchBody,
    bodyExample: { walletProvider: "MANAGED" },
    responses: {
      200: {
        description: "The new wallet",
        schema: z.object({ success: ok, message: z.string(), wallet: walletView }),
      },
      ...errors([400, 401, 409, 429, 500]),
    },
  },
  {
    method: "get",
    path: "/api/merchant/wallet/connect",
    summary: "Step one of linking a wallet: the SIWE message to sign",
    tag,
    auth: ["merchantCookie", "apiKey"],
    query: connectQuery,
    responses: {
      200: {
        description: "The message; sets the wallet_connect_nonce cookie (5 minutes)",
        schema: z.object({ success: ok, message: z.string() }),
      },
      ...errors([400, 401, 403, 429]),
    },
  },
  {
    method: "post",
    path: "/api/merchant/wallet/connect",
    summary: "Step two: the signed message links the wallet",
    tag,
    auth: ["merchantCookie", "apiKey"],
    body: connectBody,
    bodyExample: {
      address: "0x5B38Da6a701c568545dCfcB03FcB875f56beddC4",
      message: "shop.example.com wants you to sign in …",
      signature: "0x…",
      walletKind: "EXTENSION_WALLET",
    },
    responses: {
      200: {
        description: "The linked wallet",
        schema: z.object({ success: ok, wallet: walletView }),
      },
      ...errors([400, 401, 403, 429]),
    },
  },
];
