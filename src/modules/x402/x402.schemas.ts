/**
 * x402: request bodies (each field's issues carry its catalog text) and the response records the
 * routes of /api/x402/* share (the routes themselves: x402.api.ts, x402.standard.api.ts).
 */
import { z } from "zod";
import { M } from "../../http/messages.ts";
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

export const PROOF_DOC = 'Proof: base64 of JSON { x402Version: 1, scheme: "gateway", network: ' +
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

/** A uint256 as the x402 payloads carry it: decimal digits (or a safe integer). */
const uint256 = (text: string) =>
  z.union([
    z.string({ error: text }).regex(/^(0|[1-9][0-9]{0,77})$/, text),
    z.number().int().min(0),
  ], {
    error: text,
  }).transform((v, ctx) => {
    const n = BigInt(v);
    if (n < 2n ** 256n) return n;
    ctx.addIssue({ code: "custom", message: text });
    return z.NEVER;
  });

/**
 * An outside payer's deposit, signed and relayed (it needs no gas): its EIP-3009
 * `ReceiveWithAuthorization` of USDC to the vault, in the x402 payload's shape.
 */
export const payerDepositBody = z.object({
  authorization: z.object({
    from: address(M.x402RelayBody).describe("The payer: whose USDC, and whose gateway balance"),
    to: address(M.x402RelayBody).describe("The gateway vault"),
    value: uint256(M.x402RelayBody).describe("Base units (6 decimals), at least 1000000"),
    validAfter: uint256(M.x402RelayBody).describe("Unix seconds"),
    validBefore: uint256(M.x402RelayBody).describe("Unix seconds"),
    nonce: z.string({ error: M.x402RelayBody }).regex(/^0x[0-9a-fA-F]{64}$/, M.x402RelayBody)
      .transform((n) => n.toLowerCase() as `0x${string}`).describe("Random, 32 bytes"),
  }, { error: M.x402RelayBody }),
  signature: z.string({ error: M.x402RelayBody })
    .regex(/^0x(?:[0-9a-fA-F]{2}){1,2048}$/, M.x402RelayBody)
    .transform((s) => s as `0x${string}`)
    .describe(
      "EIP-712 ReceiveWithAuthorization over the USDC domain: an EOA's 65 bytes (r, s, v), or " +
        "what its ERC-1271 account accepts",
    ),
});
export type PayerDepositInput = z.output<typeof payerDepositBody>;

const withdrawalTerms = {
  account: address(M.x402RelayWithdrawBody).describe("Whose gateway balance: the signer"),
  value: uint256(M.x402RelayWithdrawBody).refine((v) => v > 0n, M.x402RelayWithdrawBody)
    .describe("Base units (6 decimals), more than 0"),
  validBefore: uint256(M.x402RelayWithdrawBody).describe("Unix seconds"),
  nonce: z.string({ error: M.x402RelayWithdrawBody }).regex(
    /^0x[0-9a-fA-F]{64}$/,
    M.x402RelayWithdrawBody,
  )
    .transform((n) => n.toLowerCase() as `0x${string}`).describe("Random, 32 bytes"),
};
const withdrawalSignature = (type: string) =>
  z.string({ error: M.x402RelayWithdrawBody })
    .regex(/^0x(?:[0-9a-fA-F]{2}){1,2048}$/, M.x402RelayWithdrawBody)
    .transform((s) => s.toLowerCase() as `0x${string}`)
    .describe(
      `EIP-712 ${type} under the vault's domain { name: "GatewayVault", version: "1", chainId, ` +
        "verifyingContract }: an EOA's 65 bytes, or what its ERC-1271 account accepts",
    );

/** An outside payer's signed start of a withdrawal (a vault with a delay), relayed. */
export const payerWithdrawalStartBody = z.object({
  authorization: z.object(withdrawalTerms, { error: M.x402RelayWithdrawBody }),
  signature: withdrawalSignature(
    "InitiateWithdrawal(address account,uint256 value,uint256 validBefore,bytes32 nonce)",
  ),
});
export type PayerWithdrawalStartInput = z.output<typeof payerWithdrawalStartBody>;

/** An outside payer's signed withdrawal of its gateway balance to `to`, relayed. */
export const payerSignedWithdrawBody = z.object({
  authorization: z.object({
    ...withdrawalTerms,
    to: address(M.x402RelayWithdrawBody).refine((a) => BigInt(a) !== 0n, M.x402RelayWithdrawBody)
      .describe("Who receives the USDC (not the zero address)"),
  }, { error: M.x402RelayWithdrawBody }),
  signature: withdrawalSignature(
    "Withdraw(address account,address to,uint256 value,uint256 validBefore,bytes32 nonce)",
  ),
});
export type PayerSignedWithdrawInput = z.output<typeof payerSignedWithdrawBody>;

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

export const payerWithdrawStartBody = z.object({
  ...payerFields,
  amount: usdcAmount(M.x402WithdrawAmount),
}).refine(onePayer, onePayerIssue);

export const sellerWithdrawStartBody = z.object({ amount: usdcAmount(M.x402WithdrawAmount) });

/** A started withdrawal: the vault's delay runs until `withdrawableAt`. */
export const withdrawalStarted = {
  success: z.literal(true),
  txHash: z.string(),
  explorerUrl: z.string(),
  amount: z.string().describe("USDC with 6 decimal places"),
  withdrawableAt: z.string().describe(
    "ISO 8601: when the withdraw route can pay it (everything withdrawing matures together)",
  ),
  gateway: z.object({
    total: z.string(),
    available: z.string(),
    withdrawing: z.string(),
    withdrawable: z.string(),
  }),
};

export const payerBalanceQuery = z.object(payerFields).refine(onePayer, onePayerIssue);

export const payerAddressQuery = z.object({
  address: address(M.x402PayerAddress).describe("The payer: any EVM address"),
});

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

export const ok = z.literal(true);
export const decimal = z.string().describe("USDC with 6 decimal places");

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

/** An x402 error body: the usual fields and the balances a refusal reports. */
export const balanceError = z.object({
  success: z.literal(false),
  error: z.string(),
  hint: z.string().optional(),
  walletBalance: z.string().optional(),
  gatewayBalance: z.string().optional(),
  balance: z.string().optional(),
  withdrawable: z.string().optional(),
  txHash: z.string().optional(),
});

export const gatewayBalances = z.object({
  total: decimal,
  available: decimal,
  withdrawing: decimal,
  withdrawable: decimal,
});

/** Accepted on the gateway balance or a channel, not yet settled on chain (x402.batched.*). */
export const pendingBalances = z.object({
  incoming: decimal.describe("Owed to this address by paid calls served, not yet settled"),
  outgoing: decimal.describe("Promised by this address to paid calls, not yet settled"),
}).describe("The gateway balance is what is settled on chain; these are on their way");
