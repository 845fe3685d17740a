/**
 * /api/x402/*: listings (merchant key to create, public to browse), pay (the proof is the only
 * credential), verify, gateway deposit, seller balance and withdraw (bearer merchant key), and
 * the merchant's own payers (managed wallets and agents): proofs, balance, withdraw. `xOf` gives
 * a request's deps with the module's agent port and settler (x402.module.ts).
 */
import { z } from "zod";
import type { Deps } from "../../deps.ts";
import { errors } from "../../http/contract.ts";
import { type ApiRoute, defineRoute, reply, type RouteAuth } from "../../http/route.ts";
import type { ScopeOf } from "../../http/idempotency.ts";
import { M } from "../../http/messages.ts";
import * as service from "./x402.service.ts";
import * as gateway from "./x402.gateway.ts";
import * as payers from "./x402.payers.ts";
import * as withdrawals from "./x402.withdrawals.ts";
import type { X402Deps } from "./x402.context.ts";
import {
  balanceError,
  createListingBody,
  decimal,
  depositBody,
  gatewayBalances,
  listingRecord,
  listingsQuery,
  ok,
  payBody,
  payerAddressQuery,
  payerBalanceQuery,
  payerDepositBody,
  payerSignedWithdrawBody,
  payerWithdrawalStartBody,
  payerWithdrawBody,
  payerWithdrawStartBody,
  paymentRequirementsSchema,
  pendingBalances,
  PROOF_DOC,
  proofBody,
  sellerBalanceQuery,
  sellerWithdrawStartBody,
  verifyBody,
  withdrawalStarted,
  withdrawBody,
} from "./x402.schemas.ts";

/**
 * x402 works on one chain whatever the credential's environment (its listings and balances are
 * the merchant's, shared by test and live keys), so its Idempotency-Keys are the merchant's:
 * per environment, a retry under the other key found another environment's record, and one key
 * made three withdrawals from the one balance (an outside audit, 2026-12-01).
 */
const merchantWide: ScopeOf = (c) => {
  const merchant = c.get("auth")?.merchant;
  return Promise.resolve(merchant ? `x402:${merchant.id}` : undefined);
};

const merchant = (accept: ("bearer" | "apiKey")[], write: boolean): RouteAuth => ({
  accept,
  keyKinds: ["merchant", "secret"],
  scope: "x402",
  write,
});
const anyone: RouteAuth = { accept: [] };
/**
 * POST /api/x402/pay: a paid call is its own rate limit, and so is the 402 offer to a call
 * without a proof; refused proofs and failures count per client address.
 */
const payer: RouteAuth = { accept: [], countAnswered: true };
const tag = "x402";
const DEAD = "$dead";
const NO_WALLET = "00000000-0000-0000-0000-000000000000";

export function x402ApiRoutes(xOf: (deps: Deps) => X402Deps): ApiRoute[] {
  return [
    defineRoute({
      method: "post",
      path: "/api/x402/listings",
      summary: "Offer an upstream API for pay-per-call; the payee is your payout wallet",
      tag,
      auth: merchant(["bearer", "apiKey"], true),
      idempotent: true,
      idempotencyScope: merchantWide,
      body: createListingBody("any"),
      bodyFor: (deps) => createListingBody(deps.config.WEBHOOK_TARGETS),
      bodyExample: {
        slug: "weather",
        upstreamUrl: "https://api.example.com/weather",
        price: "0.01",
        methods: ["GET"],
        description: "Current weather",
      },
      responses: {
        201: {
          description: "Listed",
          schema: z.object({ success: ok, listing: listingRecord }),
        },
        ...errors([400, 401, 403, 409, 429, 500]),
      },
      handler: async (x) => ({
        listing: service.listingView(await service.createListing(x.deps, x.merchant, x.body)),
      }),
      fuzz: {
        sample: {
          slug: "fuzz-listing",
          upstreamUrl: "https://example.com/api",
          price: "0.01",
          methods: ["GET"],
          description: "fuzz",
        },
        as: "bearer",
        runsDivisor: 3,
      },
    }),
    defineRoute({
      method: "get",
      path: "/api/x402/listings",
      summary: "The marketplace: every listing, newest first (public)",
      tag,
      auth: anyone,
      query: listingsQuery,
      // The field named before a generic text (`limit: Too big…`).
      queryErrors: {},
      responses: {
        200: {
          description: "Listings",
          schema: z.object({ success: ok, listings: z.array(listingRecord) }),
        },
        ...errors([400, 429]),
      },
      handler: async (x) => ({
        listings: (await service.listListings(x.deps, { limit: x.query.limit }))
          .map(service.listingView),
      }),
    }),
    defineRoute({
      method: "post",
      path: "/api/x402/pay",
      summary: "Pay for one call of a listing and get the upstream's answer. " + PROOF_DOC,
      tag,
      auth: payer,
      body: payBody,
      bodyExample: {
        slug: "weather",
        method: "GET",
        params: { city: "Lisbon" },
        paymentProof: "eyJ4…",
      },
      responses: {
        200: {
          description: "Paid and forwarded: the upstream body unchanged in `data`",
          schema: z.object({
            success: ok,
            data: z.unknown(),
            settlement: z.object({ txHash: z.string(), amount: decimal, listingSlug: z.string() }),
          }),
        },
        400: {
          description: "Malformed input, or no (enough) gateway balance (with walletBalance and " +
            "gatewayBalance)",
          schema: balanceError,
        },
        402: {
          description: "No proof: what to pay in `payment`",
          schema: z.object({
            success: z.literal(false),
            error: z.string(),
            payment: paymentRequirementsSchema,
          }),
        },
        403: {
          description: "Invalid, expired, mismatched or already used proof",
          schema: balanceError,
        },
        404: { description: "Unknown listing", schema: balanceError },
        408: { description: "Settlement not confirmed in time", schema: balanceError },
        429: { description: "Rate limited", schema: balanceError },
        500: {
          description: "Upstream failure (`Upstream API returned 503`); nothing was charged",
          schema: balanceError,
        },
        502: { description: "Settlement reverted", schema: balanceError },
      },
      handler: async ({ c, deps, body }) => {
        const headerAgent = c.req.header("x-agent-id")?.trim();
        const r = await service.pay(xOf(deps), {
          slug: body.slug,
          method: body.method,
          proof: body.paymentProof ?? (c.req.header("x-402-payment-proof")?.trim() || undefined),
          params: body.params,
          agentId: body.agentId ?? (headerAgent || undefined),
          agentSignature: c.req.header("x-agent-signature")?.trim() || undefined,
        });
        // An offer (no proof) or a paid call: not counted; a refused proof throws, and counts.
        c.set("uncounted", true);
        if (!r.paid) {
          return reply(402, {
            success: false,
            error: M.x402PaymentRequired,
            payment: r.requirements,
          });
        }
        return { data: r.data, settlement: r.settlement };
      },
      fuzz: {
        sample: { slug: "no-such-listing", method: "GET", paymentProof: "e30=", params: {} },
        extra: ["payment", "walletBalance", "gatewayBalance"],
        hintObject: true,
      },
    }),
    defineRoute({
      method: "post",
      path: "/api/x402/verify",
      summary: "Verify a proof without calling the upstream (see docs/decisions.md for `valid`)",
      tag,
      auth: merchant(["bearer"], false),
      body: verifyBody,
      bodyExample: { proof: "eyJ4…" },
      responses: {
        200: {
          description: "Invalid proofs answer valid false, 0.000000, the zero address, 0",
          schema: z.object({
            success: ok,
            valid: z.boolean(),
            settled: z.boolean().describe("Already settled by this service"),
            amount: decimal,
            payer: z.string(),
            timestamp: z.number().describe("Unix seconds: the proof's validAfter"),
          }),
        },
        ...errors([400, 401, 403, 429, 500]),
      },
      handler: async (x) => await service.verifyForMerchant(x.deps, x.merchant, x.body.proof),
      fuzz: { sample: { proof: "e30=" } },
    }),
    defineRoute({
      method: "post",
      path: "/api/x402/gateway/deposit",
      summary: "Deposit USDC from one of your managed wallets, or an agent's smart account, " +
        "into its gateway balance",
      tag,
      auth: merchant(["bearer", "apiKey"], true),
      idempotent: true,
      idempotencyScope: merchantWide,
      body: depositBody,
      bodyExample: { walletId: "3f1c…", amount: "5.00" },
      responses: {
        200: {
          description: "Deposited on chain",
          schema: z.object({
            success: ok,
            txHash: z.string(),
            explorerUrl: z.string(),
            amount: decimal,
            walletId: z.string().describe("The wallet (for an agent: its owner wallet)"),
            walletAddress: z.string().describe("Who deposited: the wallet or the smart account"),
            agentId: z.string().optional(),
            gateway: gatewayBalances,
          }),
        },
        400: { description: "Malformed input or wallet balance too low", schema: balanceError },
        403: { description: "Not a wallet or agent you control", schema: balanceError },
        ...errors([401, 408, 409, 429, 500, 502], balanceError),
      },
      handler: async (x) =>
        await gateway.deposit(xOf(x.deps), x.merchant, x.body, x.idempotencyKey),
      // Wallets and agents the merchant does not have.
      fuzz: {
        extra: ["balance"],
        bodyVariants: [
          { as: "bearer", sample: { walletId: NO_WALLET, amount: "1" } },
          { as: "key", sample: { agentId: "8004:5042002:1", amount: "1" }, runsDivisor: 3 },
        ],
      },
    }),
    // Signs only (nothing is sent), so no Idempotency-Key: a retry gets a fresh proof, and no
    // proof (a bearer credential) is kept in the idempotency table.
    defineRoute({
      method: "post",
      path: "/api/x402/proofs",
      summary: "Sign a payment proof for a listing from one of your managed wallets or agents " +
        "(nothing is sent on chain)",
      tag,
      auth: merchant(["bearer", "apiKey"], true),
      body: proofBody,
      bodyExample: { slug: "weather", agentId: "8004:5042002:7", validForSeconds: 120 },
      responses: {
        201: {
          description: "A fresh proof for exactly the listing's price to its seller; send " +
            "`headers` with POST /api/x402/pay",
          schema: z.object({
            success: ok,
            proof: z.string().describe("The X-402-Payment-Proof value"),
            headers: z.object({
              "X-402-Payment-Proof": z.string(),
              "X-Agent-ID": z.string().optional(),
              "X-Agent-Signature": z.string().optional(),
            }),
            payer: z.string().describe("The wallet, or the agent's smart account"),
            payTo: z.string(),
            amount: decimal,
            amountUnits: z.string().describe("Base units (USDC has 6 decimals)"),
            nonce: z.string(),
            validAfter: z.number().describe("Unix seconds: the proof's timestamp"),
            validBefore: z.number(),
            gatewayBalance: decimal.describe("The payer's available gateway balance"),
            agentId: z.string().optional(),
          }),
        },
        400: {
          description: "Malformed input, or your external payout wallet",
          schema: balanceError,
        },
        404: { description: "Unknown listing, or not your wallet or agent", schema: balanceError },
        ...errors([401, 403, 429, 500], balanceError),
      },
      handler: async (x) => await payers.signProof(xOf(x.deps), x.merchant, x.body),
      // Unknown listings, wallets and agents the merchant does not have.
      fuzz: {
        bodyVariants: [
          {
            as: "bearer",
            sample: { slug: "no-such-listing", walletId: NO_WALLET, validForSeconds: 60 },
          },
          {
            as: "key",
            sample: { slug: "no-such-listing", agentId: "8004:5042002:1" },
            runsDivisor: 3,
          },
        ],
      },
    }),
    defineRoute({
      method: "get",
      path: "/api/x402/gateway/balance",
      summary: "One of your managed wallets' or agents' USDC and gateway balances",
      tag,
      auth: merchant(["bearer", "apiKey"], false),
      query: payerBalanceQuery,
      queryErrors: { message: (issues) => issues[0]?.message ?? M.x402PayerSource },
      responses: {
        200: {
          description: "Balances",
          schema: z.object({
            success: ok,
            address: z.string().describe("The wallet, or the agent's smart account"),
            walletId: z.string().optional(),
            agentId: z.string().optional(),
            wallet: z.object({ balance: decimal }),
            gateway: gatewayBalances,
            pending: pendingBalances,
          }),
        },
        404: { description: "Not your wallet or agent", schema: balanceError },
        ...errors([400, 401, 403, 429, 500], balanceError),
      },
      handler: async (x) => await payers.payerBalance(xOf(x.deps), x.merchant, x.query),
      fuzz: {
        variants: [{ as: "key", keys: ["walletId"] }, {
          as: "bearer",
          keys: ["agentId", "walletId"],
        }],
      },
    }),
    defineRoute({
      method: "post",
      path: "/api/x402/gateway/withdraw",
      summary: "Withdraw from one of your managed wallets' or agents' gateway balance " +
        "(irreversible)",
      tag,
      auth: merchant(["bearer", "apiKey"], true),
      idempotent: true,
      idempotencyScope: merchantWide,
      body: payerWithdrawBody,
      bodyExample: { agentId: "8004:5042002:7", amount: "1.50" },
      responses: {
        200: {
          description: "Confirmed on chain",
          schema: z.object({
            success: ok,
            txHash: z.string(),
            amount: decimal,
            sourceChain: z.literal("settleTestnet"),
            destinationChain: z.literal("settleTestnet"),
            recipient: z.string(),
            status: z.literal("confirmed"),
            explorerUrl: z.string(),
            payer: z.string().describe("The wallet, or the agent's smart account"),
            walletId: z.string().optional(),
            agentId: z.string().optional(),
            gateway: gatewayBalances.describe(
              "The payer's gateway balances after the withdrawal",
            ),
          }),
        },
        400: {
          description: "Malformed input, more than withdrawable (with `withdrawable`), or your " +
            "external payout wallet",
          schema: balanceError,
        },
        404: { description: "Not your wallet or agent", schema: balanceError },
        ...errors([401, 403, 408, 409, 429, 500, 502], balanceError),
      },
      handler: async (x) =>
        await payers.withdrawPayer(xOf(x.deps), x.merchant, x.body, x.idempotencyKey),
      fuzz: {
        sample: { agentId: "1", amount: "1", destinationAddress: DEAD },
        extra: ["withdrawable"],
      },
    }),
    defineRoute({
      method: "post",
      path: "/api/x402/gateway/withdraw/start",
      summary: "Start withdrawing from one of your managed wallets' or agents' gateway balance " +
        "on a vault with a withdrawal delay (then POST /api/x402/gateway/withdraw once it matures)",
      tag,
      auth: merchant(["bearer", "apiKey"], true),
      idempotent: true,
      idempotencyScope: merchantWide,
      body: payerWithdrawStartBody,
      bodyExample: { walletId: "3f1c…", amount: "1.50" },
      responses: {
        200: {
          description: "Started on chain: withdrawable at `withdrawableAt`",
          schema: z.object({
            ...withdrawalStarted,
            payer: z.string().describe("The wallet, or the agent's smart account"),
            walletId: z.string().optional(),
            agentId: z.string().optional(),
          }),
        },
        400: {
          description: "Malformed input, a vault with no delay, more than available less " +
            "unsettled paid calls (with `balance`), or your external payout wallet",
          schema: balanceError,
        },
        404: { description: "Not your wallet or agent", schema: balanceError },
        ...errors([401, 403, 408, 409, 429, 500, 502], balanceError),
      },
      handler: async (x) =>
        await payers.startPayerWithdrawal(xOf(x.deps), x.merchant, x.body, x.idempotencyKey),
      fuzz: {
        sample: { walletId: NO_WALLET, amount: "1" },
        as: "bearer",
        extra: ["balance"],
      },
    }),
    defineRoute({
      method: "get",
      path: "/api/x402/payer/balance",
      summary: "Any payer's gateway balance: settled, promised to paid calls not yet settled, " +
        "and spendable (no credentials: outside payers have no key here)",
      tag,
      auth: anyone,
      query: payerAddressQuery,
      queryErrors: { message: M.x402PayerAddress },
      responses: {
        200: {
          description: "Balances",
          schema: z.object({
            success: ok,
            address: z.string(),
            network: z.string().describe("eip155:<chain id> of the vault"),
            wallet: z.object({ balance: decimal }).describe("USDC the address holds: depositable"),
            gateway: gatewayBalances,
            pending: pendingBalances,
            spendable: decimal.describe(
              "gateway.available less pending.outgoing: what the next paid call can count on",
            ),
            withdrawal: z.object({
              maxAmount: decimal.describe(
                "What POST /api/x402/payer/withdraw accepts now: gateway.withdrawable less " +
                  "pending.outgoing and withdrawals in flight",
              ),
              delaySeconds: z.number().describe(
                "The vault's withdrawal delay (0: available is withdrawable at once)",
              ),
              withdrawableAt: z.string().nullable().describe(
                "ISO 8601: when what is withdrawing matures (null: nothing is)",
              ),
            }),
          }),
        },
        ...errors([400, 429, 500]),
      },
      handler: async (x) => await gateway.payerView(x.deps, x.query.address),
      fuzz: {},
    }),
    defineRoute({
      method: "post",
      path: "/api/x402/payer/deposit",
      summary: "Relay a payer's signed deposit into its own gateway balance: an EIP-3009 " +
        "ReceiveWithAuthorization of USDC to the vault (no credentials, and no gas needed)",
      tag,
      auth: anyone,
      body: payerDepositBody,
      bodyExample: {
        authorization: {
          from: "0xBuyer",
          to: "0xGatewayVault",
          value: "5000000",
          validAfter: "0",
          validBefore: "1767229200",
          nonce: "0x<64 hex>",
        },
        signature: "0x<130 hex>",
      },
      responses: {
        200: {
          description: "Deposited on chain (a retry of the same signed deposit: its transaction)",
          schema: z.object({
            success: ok,
            txHash: z.string(),
            explorerUrl: z.string(),
            amount: decimal,
            payer: z.string(),
            network: z.string().describe("eip155:<chain id> of the vault"),
            gateway: gatewayBalances.describe("The payer's gateway balances after the deposit"),
          }),
        },
        400: {
          description: "Malformed, not to the vault, under 1 USDC, outside its window, not " +
            "signed by `from`, or more than `from` holds (with `balance`); nothing is sent",
          schema: balanceError,
        },
        409: {
          description: "The authorization was already used or cancelled; or a smart account " +
            "signed it and the chain's USDC takes only a key's signature (before FiatToken v2.2)",
          schema: balanceError,
        },
        ...errors([408, 429, 500, 502], balanceError),
      },
      handler: async (x) => await gateway.relayPayerDeposit(x.deps, x.body),
      fuzz: {
        sample: {
          authorization: {
            from: DEAD,
            to: DEAD,
            value: "1000000",
            validAfter: "0",
            validBefore: "99999999999",
            nonce: `0x${"11".repeat(32)}`,
          },
          signature: `0x${"22".repeat(65)}`,
        },
        extra: ["balance"],
      },
    }),
    defineRoute({
      method: "post",
      path: "/api/x402/payer/withdraw/start",
      summary: "Relay a payer's signed start of a withdrawal on a vault with a delay: its " +
        "InitiateWithdrawal under the vault's domain (no credentials, and no gas needed)",
      tag,
      auth: anyone,
      body: payerWithdrawalStartBody,
      bodyExample: {
        authorization: {
          account: "0xBuyer",
          value: "5000000",
          validBefore: "1767229200",
          nonce: "0x<64 hex>",
        },
        signature: "0x<130 hex>",
      },
      responses: {
        200: {
          description: "Started on chain: withdrawable at `withdrawableAt` (a retry of the " +
            "same signed start: its transaction)",
          schema: z.object({
            ...withdrawalStarted,
            payer: z.string(),
            network: z.string().describe("eip155:<chain id> of the vault"),
          }),
        },
        400: {
          description: "Malformed, a vault with no delay, expiring within 60 s, not signed by " +
            "`account`, under 1 USDC (unless all it can start), or more than available less " +
            "its paid calls not yet settled (with `balance`); nothing is sent",
          schema: balanceError,
        },
        409: {
          description: "The authorization was already used, or the vault predates signed " +
            "withdrawals",
          schema: balanceError,
        },
        ...errors([408, 429, 500, 502], balanceError),
      },
      handler: async (x) => await withdrawals.relayPayerWithdrawalStart(x.deps, x.body),
      fuzz: {
        sample: {
          authorization: {
            account: DEAD,
            value: "1000000",
            validBefore: "99999999999",
            nonce: `0x${"11".repeat(32)}`,
          },
          signature: `0x${"22".repeat(65)}`,
        },
        extra: ["balance"],
      },
    }),
    defineRoute({
      method: "post",
      path: "/api/x402/payer/withdraw",
      summary: "Relay a payer's signed withdrawal of its gateway balance: its Withdraw under " +
        "the vault's domain, paid to `to` (no credentials, and no gas needed)",
      tag,
      auth: anyone,
      body: payerSignedWithdrawBody,
      bodyExample: {
        authorization: {
          account: "0xBuyer",
          to: "0xBuyer",
          value: "5000000",
          validBefore: "1767229200",
          nonce: "0x<64 hex>",
        },
        signature: "0x<130 hex>",
      },
      responses: {
        200: {
          description: "Withdrawn on chain (a retry of the same signed withdrawal: its " +
            "transaction)",
          schema: z.object({
            success: ok,
            txHash: z.string(),
            explorerUrl: z.string(),
            amount: decimal,
            payer: z.string(),
            recipient: z.string(),
            network: z.string().describe("eip155:<chain id> of the vault"),
            gateway: gatewayBalances.describe("The payer's gateway balances after it"),
          }),
        },
        400: {
          description: "Malformed, expiring within 60 s, not signed by `account`, under 1 USDC " +
            "(unless all it can take), or more than withdrawable less its paid calls not yet " +
            "settled (with `withdrawable`); nothing is sent",
          schema: balanceError,
        },
        409: {
          description: "The authorization was already used, or the vault predates signed " +
            "withdrawals",
          schema: balanceError,
        },
        ...errors([408, 429, 500, 502], balanceError),
      },
      handler: async (x) => await withdrawals.relayPayerWithdraw(x.deps, x.body),
      fuzz: {
        sample: {
          authorization: {
            account: DEAD,
            to: DEAD,
            value: "1000000",
            validBefore: "99999999999",
            nonce: `0x${"11".repeat(32)}`,
          },
          signature: `0x${"22".repeat(65)}`,
        },
        extra: ["withdrawable"],
      },
    }),
    defineRoute({
      method: "get",
      path: "/api/x402/seller/balance",
      summary: "A seller's USDC and gateway balances (default: your payout address)",
      tag,
      auth: merchant(["bearer"], false),
      query: sellerBalanceQuery,
      queryErrors: { message: M.x402SellerAddress },
      responses: {
        200: {
          description: "Balances",
          schema: z.object({
            success: ok,
            sellerAddress: z.string(),
            wallet: z.object({ balance: decimal }),
            gateway: gatewayBalances,
            pending: pendingBalances,
          }),
        },
        ...errors([400, 401, 403, 429, 500]),
      },
      handler: async (x) => await gateway.sellerBalance(x.deps, x.merchant, x.query.sellerAddress),
      fuzz: {},
    }),
    defineRoute({
      method: "post",
      path: "/api/x402/seller/balance/withdraw/start",
      summary: "Start withdrawing from your payout wallet's gateway balance on a vault with a " +
        "withdrawal delay (then POST /api/x402/seller/balance/withdraw once it matures)",
      tag,
      auth: merchant(["bearer"], true),
      idempotent: true,
      idempotencyScope: merchantWide,
      body: sellerWithdrawStartBody,
      bodyExample: { amount: "1.50" },
      responses: {
        200: {
          description: "Started on chain: withdrawable at `withdrawableAt`",
          schema: z.object({ ...withdrawalStarted, sellerAddress: z.string() }),
        },
        400: {
          description: "Malformed input, a vault with no delay, more than available less " +
            "unsettled paid calls (with `balance`), or an external payout wallet",
          schema: balanceError,
        },
        ...errors([401, 403, 408, 409, 429, 500, 502], balanceError),
      },
      handler: async (x) =>
        await withdrawals.startSellerWithdrawal(x.deps, x.merchant, x.body, x.idempotencyKey),
      fuzz: { sample: { amount: "1" }, extra: ["balance"] },
    }),
    defineRoute({
      method: "post",
      path: "/api/x402/seller/balance/withdraw",
      summary: "Withdraw from your payout wallet's gateway balance (irreversible)",
      tag,
      auth: merchant(["bearer"], true),
      idempotent: true,
      idempotencyScope: merchantWide,
      body: withdrawBody,
      bodyExample: { amount: "1.50", destinationAddress: "0x…" },
      responses: {
        200: {
          description: "Confirmed on chain",
          schema: z.object({
            success: ok,
            txHash: z.string(),
            amount: decimal,
            sourceChain: z.literal("settleTestnet"),
            destinationChain: z.string(),
            recipient: z.string(),
            status: z.literal("confirmed"),
            explorerUrl: z.string(),
            bridge: z.object({
              reference: z.string(),
              status: z.string(),
              statusUrl: z.string(),
            }).optional().describe(
              "Another destinationChain: the CCTP transfer that burns on settleTestnet and " +
                "mints there",
            ),
          }),
        },
        400: {
          description: "More than withdrawable (with `withdrawable`), an unsupported " +
            "destinationChain, an external payout wallet, or (cross-chain) a payout wallet whose " +
            "USDC no longer covers its transfers not yet burned (with `balance`)",
          schema: balanceError,
        },
        ...errors([401, 403, 408, 409, 429, 500, 502], balanceError),
      },
      handler: async (x) => await gateway.withdraw(x.deps, x.merchant, x.body, x.idempotencyKey),
      fuzz: {
        sample: { amount: "1", destinationChain: "settleTestnet", destinationAddress: DEAD },
        extra: ["withdrawable"],
        hintObject: true,
      },
    }),
  ];
}
