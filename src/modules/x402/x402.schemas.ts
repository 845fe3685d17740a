/**
 * x402: request bodies (each field's issues carry its catalog text), responses and the routes of
 * /api/x402/* (the spec's pay, verify, seller balance and withdraw; DESIGN §9's listings; the
 * gateway deposit; the facilitator).
 */
import { z } from "zod";
import { M } from "../../http/messages.ts";
import { errors, type RouteDoc } from "../../http/contract.ts";
import { isAddress } from "../../chain/address.ts";
import { usdcAmount } from "../../money.ts";
import { checkWebhookUrl, type TargetPolicy } from "../webhooks/webhooks.targets.ts";
import { METHODS, SLUG } from "./x402.rules.ts";
import { AGENT_ID } from "./x402.types.ts";

const address = (text: string) =>
  z.string({ error: text }).refine((a) => isAddress(a), text)
    .transform((a) => a.toLowerCase() as `0x${string}`);

export function upstreamUrlField(policy: TargetPolicy) {
  return z.string({ error: M.x402UpstreamUrl })
    .describe("The API called for each paid request; public HTTPS in production")
    .transform((raw, ctx): string => {
      const check = checkWebhookUrl(raw.trim(), policy);
      if (check.ok) return check.url.toString();
      ctx.addIssue({
        code: "custom",
        message: M.x402UpstreamUrl,
        params: { hint: `upstreamUrl: ${check.reason}` },
      });
      return z.NEVER;
    });
}

export function createListingBody(policy: TargetPolicy) {
  return z.object({
    slug: z.string({ error: M.x402Slug }).regex(SLUG, M.x402Slug)
      .describe("Marketplace listing id, unique: lowercase letters, digits, hyphens"),
    upstreamUrl: upstreamUrlField(policy),
    price: usdcAmount(M.x402Price).describe("USDC per call, up to 6 decimal places"),
    methods: z.array(z.enum(METHODS, { error: M.x402Methods }), { error: M.x402Methods })
      .min(1, M.x402Methods).max(5, M.x402Methods)
      .transform((ms) => [...new Set(ms)]),
    description: z.string({ error: M.x402Description }).max(500, M.x402Description).nullish()
      .transform((d) => d ?? null),
  });
}
export type CreateListingInput = z.output<ReturnType<typeof createListingBody>>;

const PROOF_DOC = 'Proof: base64 of JSON { x402Version: 1, scheme: "gateway", network: ' +
  '"eip155:5042002", payload: { signature, authorization: { from, to, value, validAfter, ' +
  "validBefore, nonce } } }; the signature is EIP-712 TransferWithAuthorization over the " +
  'domain { name: "GatewayVault", version: "1", chainId, verifyingContract }. ' +
  "Its timestamp is validAfter (at most 5 minutes old).";

export const payBody = z.object({
  slug: z.string({ error: M.x402ProofSlug }).min(1, M.x402ProofSlug).max(63, M.x402ProofSlug)
    .describe("Marketplace listing id: selects the upstream API and the price"),
  method: z.enum(METHODS, { error: M.x402Method }),
  paymentProof: z.string({ error: M.x402ProofField }).max(16_384, M.x402ProofInvalid).optional()
    .describe(`Or header X-402-Payment-Proof. ${PROOF_DOC}`),
  params: z.record(z.string(), z.unknown(), { error: M.x402Params }).optional()
    .describe("Forwarded verbatim: query parameters for GET/DELETE, JSON body otherwise"),
  agentId: z.string({ error: M.x402AgentIdField }).regex(AGENT_ID, M.x402AgentIdField).optional()
    .describe("8004:{chainId}:{tokenId}; also X-Agent-ID"),
});

export const verifyBody = z.object({
  proof: z.string({ error: M.x402ProofRequired }).min(1, M.x402ProofRequired)
    .max(16_384, M.x402ProofRequired),
});

/** An agent of the merchant's: `8004:{chainId}:{tokenId}` or the bare token id. */
export const PAYER_AGENT_ID = /^(?:8004:(?:0|[1-9][0-9]{0,18}):)?(?:0|[1-9][0-9]{0,77})$/;

const payerAgentId = (text: string) =>
  z.string({ error: text }).regex(PAYER_AGENT_ID, text)
    .describe("One of your agents: 8004:{chainId}:{tokenId} or its token id");

export const depositBody = z.object({
  walletId: z.string({ error: M.x402DepositSource }).max(64, M.x402DepositSource).optional()
    .describe("One of your managed wallets"),
  fromSCA: address(M.x402DepositSource).optional()
    .describe("A managed wallet's address, or one of your agents' smart accounts"),
  agentId: payerAgentId(M.x402DepositSource).optional()
    .describe("One of your agents: its smart account deposits (8004:{chainId}:{tokenId} or id)"),
  amount: usdcAmount(M.x402WithdrawAmount),
}).refine(
  (b) => [b.walletId, b.fromSCA, b.agentId].filter((x) => x !== undefined).length === 1,
  { message: M.x402DepositSource, path: ["walletId"] },
);

/** Who pays or withdraws: exactly one of the merchant's managed wallets or agents. */
const payerFields = {
  walletId: z.string({ error: M.x402PayerWalletId }).min(1, M.x402PayerWalletId)
    .max(64, M.x402PayerWalletId).optional().describe("One of your managed wallets"),
  agentId: payerAgentId(M.x402PayerAgentId).optional(),
};
const onePayer = (b: { walletId?: string; agentId?: string }) =>
  (b.walletId === undefined) !== (b.agentId === undefined);
const onePayerIssue = { message: M.x402PayerSource, path: ["walletId"] };

/** Longest validity of a proof the service signs (the pay check accepts 300 s old proofs). */
export const MAX_PROOF_SECONDS = 300;

export const proofBody = z.object({
  slug: z.string({ error: M.x402ProofSlug }).min(1, M.x402ProofSlug).max(63, M.x402ProofSlug)
    .describe("The listing to pay: the proof is for exactly its price, to its seller"),
  ...payerFields,
  validForSeconds: z.number({ error: M.x402ValidFor }).int(M.x402ValidFor)
    .min(1, M.x402ValidFor).max(MAX_PROOF_SECONDS, M.x402ValidFor).default(MAX_PROOF_SECONDS)
    .describe("validBefore - validAfter, 1..300 (default 300)"),
}).refine(onePayer, onePayerIssue);

export const payerWithdrawBody = z.object({
  ...payerFields,
  amount: usdcAmount(M.x402WithdrawAmount),
  destinationAddress: address(M.x402DestinationAddress).optional()
    .describe("Default: the wallet itself, or the agent's smart account"),
}).refine(onePayer, onePayerIssue);

export const payerBalanceQuery = z.object(payerFields).refine(onePayer, onePayerIssue);

export const sellerBalanceQuery = z.object({
  sellerAddress: address(M.x402SellerAddress).optional(),
});

export const withdrawBody = z.object({
  amount: usdcAmount(M.x402WithdrawAmount),
  destinationChain: z.string({ error: M.x402DestinationChain }).max(64, M.x402DestinationChain)
    .default("settleTestnet"),
  destinationAddress: address(M.x402DestinationAddress).optional(),
});

export const listingsQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).optional(),
});

export const facilitatorBody = z.object({
  x402Version: z.union([z.literal(1), z.literal(2)]).optional(),
  paymentPayload: z.record(z.string(), z.unknown(), { error: M.x402FacilitatorBody }),
  paymentRequirements: z.object({
    scheme: z.string().max(32),
    network: z.string().max(64),
    payTo: z.string().max(64),
    amount: z.string().max(80).optional(),
    maxAmountRequired: z.string().max(80).optional(),
    asset: z.string().max(64).optional(),
  }, { error: M.x402FacilitatorBody }).passthrough(),
});

// ---- responses ------------------------------------------------------------------------------

const ok = z.literal(true);
const decimal = z.string().describe("USDC with 6 decimal places");

export const listingRecord = z.object({
  slug: z.string(),
  price: decimal,
  methods: z.array(z.enum(METHODS)),
  description: z.string().nullable(),
  seller: z.string().describe("The payee: the seller's address"),
  network: z.string().describe("eip155:<chainId> the payment settles on"),
  createdAt: z.string(),
}).meta({ id: "X402Listing" });

export const paymentRequirementsSchema = z.object({
  x402Version: z.literal(1),
  scheme: z.literal("gateway"),
  network: z.string(),
  payTo: z.string(),
  amount: z.string().describe("Base units (USDC has 6 decimals)"),
  listingSlug: z.string(),
  domain: z.object({
    name: z.literal("GatewayVault"),
    version: z.literal("1"),
    chainId: z.number(),
    verifyingContract: z.string(),
  }),
}).meta({ id: "X402PaymentRequirements" });

const balanceError = z.object({
  success: z.literal(false),
  error: z.string(),
  hint: z.string().optional(),
  walletBalance: z.string().optional(),
  gatewayBalance: z.string().optional(),
  balance: z.string().optional(),
  withdrawable: z.string().optional(),
  txHash: z.string().optional(),
});

const gatewayBalances = z.object({
  total: decimal,
  available: decimal,
  withdrawing: decimal,
  withdrawable: decimal,
});

/** Accepted on the gateway balance or a channel, not yet settled on chain (x402.batched.*). */
const pendingBalances = z.object({
  incoming: decimal.describe("Owed to this address by paid calls served, not yet settled"),
  outgoing: decimal.describe("Promised by this address to paid calls, not yet settled"),
}).describe("The gateway balance is what is settled on chain; these are on their way");

const merchantKey = ["bearer", "apiKey"] as const;
const tag = "x402";

const facilitatorTag = "x402 facilitator";

export const x402Routes: RouteDoc[] = [
  {
    method: "get",
    path: "/api/x402/facilitator/supported",
    summary:
      "x402 facilitator: the schemes (`exact`, `batch-settlement`) and networks we verify and settle",
    tag: facilitatorTag,
    auth: [],
    responses: {
      200: {
        description: "Supported kinds",
        schema: z.object({
          kinds: z.array(z.object({
            x402Version: z.number(),
            scheme: z.string(),
            network: z.string(),
            extra: z.record(z.string(), z.unknown()).optional()
              .describe("batch-settlement: the receiverAuthorizer a seller may delegate to"),
          })),
          extensions: z.array(z.string()),
          signers: z.record(z.string(), z.array(z.string())),
        }),
      },
      ...errors([429]),
    },
  },
  {
    method: "post",
    path: "/api/x402/facilitator/verify",
    summary: "x402 facilitator: verify an `exact` payment, or a `batch-settlement` deposit, " +
      "voucher or refund, against requirements",
    tag: facilitatorTag,
    auth: ["bearer"],
    body: facilitatorBody,
    responses: {
      200: {
        description: "isValid, or the protocol's invalidReason",
        schema: z.object({
          isValid: z.boolean(),
          invalidReason: z.string().optional(),
          payer: z.string().optional(),
          extra: z.record(z.string(), z.unknown()).optional()
            .describe("batch-settlement: the channel's on-chain state"),
        }),
      },
      ...errors([400, 401, 403, 429, 500]),
    },
  },
  {
    method: "post",
    path: "/api/x402/facilitator/settle",
    summary: "x402 facilitator: settle an `exact` payment (once per nonce), or a " +
      "`batch-settlement` deposit, voucher (recorded; claimed in batches), claim, settle or refund",
    tag: facilitatorTag,
    auth: ["bearer"],
    body: facilitatorBody,
    responses: {
      200: {
        description: "success with the transaction, or errorReason",
        schema: z.object({
          success: z.boolean(),
          errorReason: z.string().optional(),
          payer: z.string().optional(),
          transaction: z.string(),
          network: z.string(),
          amount: z.string().optional(),
          extra: z.record(z.string(), z.unknown()).optional()
            .describe("batch-settlement: chargedAmount and the channel's state"),
        }),
      },
      ...errors([400, 401, 403, 429, 500]),
    },
  },
  {
    method: "post",
    path: "/api/x402/listings",
    summary: "Offer an upstream API for pay-per-call; the payee is your payout wallet",
    tag,
    auth: [...merchantKey],
    idempotent: true,
    body: createListingBody("any"),
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
  },
  {
    method: "get",
    path: "/api/x402/listings",
    summary: "The marketplace: every listing, newest first (public)",
    tag,
    auth: [],
    query: listingsQuery,
    responses: {
      200: {
        description: "Listings",
        schema: z.object({ success: ok, listings: z.array(listingRecord) }),
      },
      ...errors([400, 429]),
    },
  },
  {
    method: "post",
    path: "/api/x402/pay",
    summary: "Pay for one call of a listing and get the upstream's answer. " + PROOF_DOC,
    tag,
    auth: [],
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
  },
  {
    method: "post",
    path: "/api/x402/verify",
    summary: "Verify a proof without calling the upstream (see docs/decisions.md for `valid`)",
    tag,
    auth: ["bearer"],
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
  },
  {
    method: "post",
    path: "/api/x402/gateway/deposit",
    summary: "Deposit USDC from one of your managed wallets, or an agent's smart account, into " +
      "its gateway balance",
    tag,
    auth: [...merchantKey],
    idempotent: true,
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
  },
  {
    method: "post",
    path: "/api/x402/proofs",
    summary: "Sign a payment proof for a listing from one of your managed wallets or agents " +
      "(nothing is sent on chain)",
    tag,
    auth: [...merchantKey],
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
  },
  {
    method: "get",
    path: "/api/x402/gateway/balance",
    summary: "One of your managed wallets' or agents' USDC and gateway balances",
    tag,
    auth: [...merchantKey],
    query: payerBalanceQuery,
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
  },
  {
    method: "post",
    path: "/api/x402/gateway/withdraw",
    summary: "Withdraw from one of your managed wallets' or agents' gateway balance " +
      "(irreversible)",
    tag,
    auth: [...merchantKey],
    idempotent: true,
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
          gateway: gatewayBalances.describe("The payer's gateway balances after the withdrawal"),
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
  },
  {
    method: "get",
    path: "/api/x402/seller/balance",
    summary: "A seller's USDC and gateway balances (default: your payout address)",
    tag,
    auth: ["bearer"],
    query: sellerBalanceQuery,
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
  },
  {
    method: "post",
    path: "/api/x402/seller/balance/withdraw",
    summary: "Withdraw from your payout wallet's gateway balance (irreversible)",
    tag,
    auth: ["bearer"],
    idempotent: true,
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
            "Another destinationChain: the CCTP transfer that burns on settleTestnet and mints there",
          ),
        }),
      },
      400: {
        description: "More than withdrawable (with `withdrawable`), an unsupported " +
          "destinationChain, or an external payout wallet",
        schema: balanceError,
      },
      ...errors([401, 403, 408, 409, 429, 500, 502], balanceError),
    },
  },
];
