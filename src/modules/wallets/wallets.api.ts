/**
 * /api/wallets and /api/merchant/withdraw: the merchant's session, or its merchant or secret key
 * as `x-api-key` or `Authorization: Bearer`. Publishable keys and keys limited by scopes are
 * refused (403): these routes reach the merchant's money. The credential's environment (a key's
 * prefix, a session's mode) is the only chain whose balances are shown and moved.
 */
import { z } from "zod";
import { errors } from "../../http/contract.ts";
import { defineRoute, type RouteAuth } from "../../http/route.ts";
import * as service from "./wallets.service.ts";
import {
  createWalletBody,
  usdc6,
  wallet,
  walletIdParams,
  walletWithBalances,
  WITHDRAW_HINTS,
  withdrawBody,
  withdrawResponse,
} from "./wallets.schemas.ts";

/** No limited key carries this scope, so only full-access keys pass. */
const WALLETS_SCOPE = "wallets";

const credentials = (write: boolean): RouteAuth => ({
  accept: ["cookie", "apiKey", "bearer"],
  keyKinds: ["merchant", "secret"],
  scope: WALLETS_SCOPE,
  write,
});
const ok = z.literal(true);
const tag = "Wallets";

export const walletsRoutes = [
  defineRoute({
    method: "post",
    path: "/api/wallets",
    summary: "Create a managed wallet",
    tag,
    auth: credentials(true),
    idempotent: true,
    body: createWalletBody,
    bodyExample: { label: "Refunds" },
    responses: {
      201: {
        description: "The new wallet",
        schema: z.object({ success: ok, wallet }),
      },
      ...errors([400, 401, 403, 409, 429]),
    },
    handler: async (x) => ({
      wallet: await service.createWallet(x.deps, x.merchant, x.body),
    }),
    fuzz: { sample: { label: "fuzz" }, as: "key" },
  }),
  defineRoute({
    method: "get",
    path: "/api/wallets",
    summary: "The merchant's managed wallets with their USDC on the credential's chain",
    tag,
    auth: credentials(false),
    responses: {
      200: {
        description: "Oldest first",
        schema: z.object({ success: ok, wallets: z.array(walletWithBalances) }),
      },
      ...errors([401, 403, 429]),
    },
    handler: async (x) => ({
      wallets: await service.listWallets(x.deps, x.merchant, [x.profile]),
    }),
  }),
  defineRoute({
    method: "get",
    path: "/api/wallets/:id",
    summary: "One of the merchant's wallets",
    tag,
    auth: credentials(false),
    params: walletIdParams,
    responses: {
      200: {
        description: "The wallet",
        schema: z.object({ success: ok, wallet: walletWithBalances }),
      },
      ...errors([401, 403, 404, 429]),
    },
    handler: async (x) => ({
      wallet: await service.getWallet(x.deps, x.merchant, x.params.id, [x.profile]),
    }),
    fuzz: { as: "key" },
  }),
  defineRoute({
    method: "post",
    path: "/api/merchant/withdraw",
    summary: "Send USDC out of a managed wallet on the credential's chain",
    tag,
    auth: credentials(true),
    idempotent: true,
    body: withdrawBody,
    hints: WITHDRAW_HINTS,
    bodyExample: {
      amount: "25.00",
      destinationAddress: "0x5B38Da6a701c568545dCfcB03FcB875f56beddC4",
    },
    responses: {
      200: { description: "Mined", schema: withdrawResponse },
      400: {
        description:
          "Malformed input; the payout wallet is external; or the balance is too low (then `balance`)",
        schema: z.object({
          success: z.literal(false),
          error: z.string(),
          hint: z.string().optional(),
          balance: usdc6.optional(),
        }),
      },
      ...errors([401, 403, 404, 408, 409, 429, 500, 502]),
    },
    handler: async (x) =>
      await service.withdraw(x.deps, x.merchant, x.profile, x.body, x.idempotencyKey),
    // The merchant's wallets hold nothing: a well-formed request is refused for balance.
    fuzz: {
      sample: { amount: "0.000001", destinationAddress: "$dead" },
      as: "key",
      extra: ["balance"],
    },
  }),
];
