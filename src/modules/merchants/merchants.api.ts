/** /api/merchant/*: thin handlers (validate → service → respond), declared once each. */
import { z } from "zod";
import { getCookie } from "hono/cookie";
import { bareErrorBody, errors } from "../../http/contract.ts";
import { defineRoute, type RouteAuth } from "../../http/route.ts";
import { M } from "../../http/messages.ts";
import {
  clearCookie,
  MERCHANT_COOKIE,
  MERCHANT_SESSION_SECONDS,
  setSessionCookie,
  WALLET_NONCE_COOKIE,
  WALLET_NONCE_SECONDS,
} from "../../http/session-token.ts";
import { PAYMENT_STATUSES, paymentRecord } from "../payments/payments.schemas.ts";
import {
  connectBody,
  connectQuery,
  iso,
  loginBody,
  publicMerchant,
  signupBody,
  verifyBody,
  walletPatchBody,
  walletView,
} from "./merchants.schemas.ts";
import * as service from "./merchants.service.ts";
import * as wallet from "./merchants.wallet.ts";

const CONNECT_PATH = "/api/merchant/wallet/connect";

const open: RouteAuth = { accept: [] };
const session: RouteAuth = { accept: ["cookie"] };
const connect: RouteAuth = {
  accept: ["cookie", "apiKey"],
  keyKinds: ["merchant"],
  messages: { missing: M.connectAuth, invalidSession: M.connectAuth },
};
/** The spec's dashboard endpoint: `x-api-key` only, `{ error }` bodies, an unknown key is 404. */
const dashboard: RouteAuth = {
  accept: ["apiKey"],
  keyKinds: ["merchant", "secret"],
  bare: true,
  invalidKeyStatus: 404,
  messages: { missing: M.dashboardUnauthorized, invalidKey: M.dashboardNotFound },
};
const ok = z.literal(true);
const tag = "Merchant";

export const merchantsRoutes = [
  defineRoute({
    method: "post",
    path: "/api/merchant/signup",
    summary: "Create an account; a verification code is mailed",
    tag,
    auth: open,
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
    handler: async (x) => ({
      message: M.codeSent,
      email: (await service.signup(x.deps, x.body)).email,
    }),
    fuzz: {
      sample: {
        email: "fuzz@example.com",
        businessName: "Fuzz",
        password: "correct horse battery",
        walletProvider: "EXTENSION_WALLET",
      },
    },
  }),
  defineRoute({
    method: "post",
    path: "/api/merchant/verify",
    summary: "Verify the emailed code; returns the merchant key once",
    tag,
    auth: open,
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
    handler: async (x) => {
      const r = await service.verify(x.deps, x.body);
      return {
        message: M.verified,
        merchant: service.publicMerchant(r.merchant),
        apiKey: r.apiKey,
        warning: M.keyWarning,
      };
    },
    fuzz: { sample: { email: "$email", code: "ABC123" } },
  }),
  defineRoute({
    method: "post",
    path: "/api/merchant/login",
    summary: "Sign in; sets the merchant_token cookie (7 days)",
    tag,
    auth: open,
    body: loginBody,
    bodyExample: { email: "owner@shop.example.com", password: "correct horse battery" },
    responses: {
      200: {
        description: "Signed in",
        schema: z.object({ success: ok, merchant: publicMerchant }),
      },
      ...errors([400, 401, 403, 429]),
    },
    handler: async ({ c, deps, body }) => {
      const r = await service.login(deps, body);
      setSessionCookie(c, deps.config, MERCHANT_COOKIE, r.token, MERCHANT_SESSION_SECONDS);
      return { merchant: service.publicMerchant(r.merchant) };
    },
    fuzz: { sample: { email: "$email", password: "wrong password" } },
  }),
  defineRoute({
    method: "get",
    path: "/api/merchant/me",
    summary: "Profile, stats and the 20 newest payments",
    tag,
    auth: session,
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
    handler: async (x) => await service.profile(x.deps, x.merchant, x.profile),
  }),
  defineRoute({
    method: "delete",
    path: "/api/merchant/me",
    summary: "Sign out; clears the cookie",
    tag,
    auth: session,
    responses: {
      200: {
        description: "Signed out",
        schema: z.object({ success: ok, message: z.string() }),
      },
      ...errors([401, 429]),
    },
    handler: async ({ c, deps }) => {
      await service.logout(deps, c.get("auth").sessionId!);
      clearCookie(c, deps.config, MERCHANT_COOKIE);
      return { message: M.loggedOut };
    },
  }),
  defineRoute({
    method: "get",
    path: "/api/merchant/dashboard",
    summary: "The merchant's payments on the key's chain (no success field)",
    tag,
    auth: dashboard,
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
    handler: async (x) => {
      const key = x.c.get("auth").key!;
      return {
        businessName: x.merchant.businessName,
        apiKey: key.raw,
        payments: await service.dashboardPayments(x.deps, x.merchant.id, key.profile),
      };
    },
    // Any query parameter is fuzzed (the route takes none).
    fuzz: { params: true },
  }),
  defineRoute({
    method: "get",
    path: "/api/merchant/wallet",
    summary: "The payout wallet",
    tag,
    auth: session,
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
    handler: (x) => ({ wallet: wallet.walletView(x.merchant) }),
  }),
  defineRoute({
    method: "patch",
    path: "/api/merchant/wallet",
    summary: "Provision a new managed payout wallet",
    tag,
    auth: session,
    body: walletPatchBody,
    bodyExample: { walletProvider: "MANAGED" },
    responses: {
      200: {
        description: "The new wallet",
        schema: z.object({ success: ok, message: z.string(), wallet: walletView }),
      },
      ...errors([400, 401, 409, 429, 500]),
    },
    handler: async (x) => await wallet.switchToManaged(x.deps, x.merchant, x.body.walletProvider),
    fuzz: { sample: { walletProvider: "MANAGED" } },
  }),
  defineRoute({
    method: "get",
    path: "/api/merchant/wallet/connect",
    summary: "Step one of linking a wallet: the SIWE message to sign",
    tag,
    auth: connect,
    query: connectQuery,
    responses: {
      200: {
        description: "The message; sets the wallet_connect_nonce cookie (5 minutes)",
        schema: z.object({ success: ok, message: z.string() }),
      },
      ...errors([400, 401, 403, 429]),
    },
    handler: async ({ c, deps, merchant, query }) => {
      const r = await wallet.linkChallenge(deps, merchant, query.address);
      setSessionCookie(
        c,
        deps.config,
        WALLET_NONCE_COOKIE,
        r.nonce,
        WALLET_NONCE_SECONDS,
        CONNECT_PATH,
      );
      return { message: r.message };
    },
    fuzz: { as: "cookie" },
  }),
  defineRoute({
    method: "post",
    path: "/api/merchant/wallet/connect",
    summary: "Step two: the signed message links the wallet",
    tag,
    auth: connect,
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
    // The nonce cookie is spent by any well-formed JSON body, valid or not.
    checks: [async ({ c, deps, json, locals }) => {
      await json();
      locals.nonce = getCookie(c, WALLET_NONCE_COOKIE);
      clearCookie(c, deps.config, WALLET_NONCE_COOKIE, CONNECT_PATH);
    }],
    handler: async (x) =>
      await wallet.linkWallet(x.deps, x.merchant, x.locals.nonce as string | undefined, x.body),
    fuzz: {
      as: "cookie",
      sample: { address: "$wallet", message: "m", signature: "0x00", walletKind: "LINK_WALLET" },
    },
  }),
];
