/**
 * Bridge (CCTP): the transfer request, the chain descriptors, the transfer status, the local
 * attester's answer and the routes. The spec's four fields are checked for presence first (one
 * fixed text names all four), then each on its own.
 */
import { z } from "zod";
import { M } from "../../http/messages.ts";
import { isAddress } from "../../chain/address.ts";
import { usdcAmount } from "../../money.ts";
import { BRIDGE_STATUSES, TRANSFER_SPEEDS } from "./bridge.rules.ts";

export const REQUIRED_FIELDS = ["fromChain", "toChain", "amount", "recipient"] as const;

export const transferBody = z.object({
  fromChain: z.string().max(64).describe(
    "Arbitrum_Sepolia, Base_Sepolia, Optimism_Sepolia, Ethereum_Sepolia or Polygon_Amoy_Testnet",
  ),
  toChain: z.string().max(64).describe("Must be Settle_Testnet"),
  amount: usdcAmount(M.bridgeAmount),
  recipient: z.string({ error: M.bridgeRecipient }).refine(
    (a) => isAddress(a) && !/^0x0{40}$/i.test(a),
    M.bridgeRecipient,
  ).transform((a) => a.toLowerCase() as `0x${string}`)
    .describe("0x address on the destination chain"),
  paymentReference: z.string({ error: M.bridgePayment }).min(1, M.bridgePayment)
    .max(64, M.bridgePayment).optional().describe(
      "Cross-chain checkout: a PENDING payment on Settle_Testnet; amount and recipient must be its amount and payee. The burn's hook data carries it; the mint settles it. The burn is the amount plus the bridge fee, so the payee receives the whole amount.",
    ),
  transferSpeed: z.enum(TRANSFER_SPEEDS, { error: M.bridgeSpeed }).optional().describe(
    "standard (default): attested once the source chain finalizes the burn; fast: attested at its soft finality, for the fast fee (CCTP v2 Fast Transfer, minFinalityThreshold 1000)",
  ),
});
export type TransferInput = z.output<typeof transferBody>;

// ---- cross-chain checkout from the shopper's own wallet (page endpoints, /checkout/…) -------

const sourceChainField = z.string({ error: M.bridgeSourceChainBody })
  .min(1, M.bridgeSourceChainBody).max(64, M.bridgeSourceChainBody);
const speed = z.enum(TRANSFER_SPEEDS, { error: M.bridgeSpeed }).optional();

/** GET /checkout/{reference}/bridge-quote: the fee, the burn and how the shopper can pay. */
export const shopperQuoteQuery = z.object({
  sourceChain: sourceChainField,
  payer: z.string().max(64).optional(),
  transferSpeed: speed,
});

const uint = z.union([
  z.string(M.bridgeRelayBody).regex(/^\d{1,78}$/, M.bridgeRelayBody),
  z.number(M.bridgeRelayBody).int(M.bridgeRelayBody).nonnegative(M.bridgeRelayBody),
], { error: M.bridgeRelayBody }).transform((v) => BigInt(v));
const hexAddress = z.string(M.bridgeRelayBody).regex(/^0x[0-9a-fA-F]{40}$/, M.bridgeRelayBody)
  .transform((a) => a.toLowerCase() as `0x${string}`);

/**
 * POST /checkout/{reference}/bridge-relay: the shopper's EIP-3009 ReceiveWithAuthorization to
 * CheckoutBurner as signed (value = the burn), the maxFee and speed its nonce commits to.
 */
export const shopperRelayBody = z.object({
  sourceChain: sourceChainField,
  transferSpeed: speed,
  maxFee: uint,
  authorization: z.object({
    from: hexAddress,
    to: hexAddress,
    value: uint,
    validAfter: uint,
    validBefore: uint,
    nonce: z.string(M.bridgeRelayBody).regex(/^0x[0-9a-fA-F]{64}$/, M.bridgeRelayBody)
      .transform((n) => n.toLowerCase() as `0x${string}`),
  }, M.bridgeRelayBody),
  signature: z.string(M.bridgeRelayBody).regex(/^0x[0-9a-fA-F]{130}$/, M.bridgeRelayBody)
    .transform((sig) => sig as `0x${string}`),
}, M.bridgeRelayBody);
export type ShopperRelayInput = z.output<typeof shopperRelayBody>;

/** POST /checkout/{reference}/bridge-burn: the burn the shopper's wallet sent. */
export const shopperBurnBody = z.object({
  sourceChain: sourceChainField,
  txHash: z.string({ error: M.txHashInvalid }).regex(/^0x[0-9a-fA-F]{64}$/, M.txHashInvalid)
    .transform((h) => h.toLowerCase() as `0x${string}`),
});

export const statusQuery = z.object({
  reference: z.string({ error: M.bridgeReference }).min(1, M.bridgeReference)
    .max(64, M.bridgeReference).describe("The reference POST /api/cctp/transfer returned"),
});

export const attesterParams = z.object({
  sourceDomain: z.string().regex(/^\d{1,10}$/).describe("CCTP domain of the burn's chain"),
});
export const feeParams = z.object({
  sourceDomain: z.string().regex(/^\d{1,10}$/).describe("CCTP domain of the burn's chain"),
  destinationDomain: z.string().regex(/^\d{1,10}$/).describe("CCTP domain of the mint's chain"),
});
export const attesterQuery = z.object({
  transactionHash: z.string().regex(/^0x[0-9a-fA-F]{64}$/).describe("The burn transaction"),
});

const iso = z.string().describe("ISO 8601 timestamp");

export const sourceChain = z.object({
  id: z.string(),
  label: z.string(),
  testnet: z.boolean(),
  circleBlockchain: z.string().describe("Circle's code for the chain"),
}).meta({ id: "BridgeSourceChain" });

export const destinationChain = z.object({
  id: z.string(),
  label: z.string(),
  testnet: z.boolean(),
}).meta({ id: "BridgeDestinationChain" });

export const transferRecord = z.object({
  reference: z.string(),
  status: z.enum(BRIDGE_STATUSES),
  direction: z.enum(["inbound", "outbound"]),
  amount: z.string().describe("USDC with 6 decimal places"),
  currency: z.literal("USDC"),
  fromChain: z.string(),
  toChain: z.string(),
  sender: z.string().describe("The burning wallet on the source chain"),
  recipient: z.string(),
  paymentReference: z.string().nullable().describe("Cross-chain checkout: the payment paid"),
  burnTxHash: z.string().nullable(),
  burnExplorerUrl: z.string().nullable(),
  mintTxHash: z.string().nullable(),
  mintExplorerUrl: z.string().nullable(),
  mintedAmount: z.string().nullable().describe("What the recipient received (after the fee)"),
  transferSpeed: z.enum(TRANSFER_SPEEDS),
  burnMode: z.enum(["service", "payer_authorization", "payer_wallet"]).describe(
    "Who burns: the service (a managed wallet), the service's relayer with the shopper's EIP-3009 signature, or the shopper's own wallet (checkout)",
  ),
  burnAmount: z.string().describe(
    "What is burned on the source chain (a checkout: the amount plus the fee)",
  ),
  maxFee: z.string().describe("The most the bridge may keep (the burn's maxFee), quoted at start"),
  fee: z.string().nullable().describe("What the bridge kept (MintAndWithdraw feeCollected)"),
  finalityThresholdExecuted: z.number().int().nullable().describe(
    "The finality the attestation was given at: 1000 fast, 2000 standard",
  ),
  attestation: z.object({
    attempts: z.number().int().describe("Times the attestation was asked for"),
    state: z.string().nullable().describe(
      "Last answer: not_found, pending_confirmations or complete",
    ),
    nextPollAt: iso.nullable().describe("When it is asked next, while waiting"),
  }),
  error: z.string().nullable(),
  createdAt: iso,
  burnedAt: iso.nullable(),
  attestedAt: iso.nullable(),
  mintedAt: iso.nullable(),
  failedAt: iso.nullable(),
  updatedAt: iso,
}).meta({ id: "BridgeTransfer" });

export const errorWithBalance = z.object({
  success: z.literal(false),
  error: z.string(),
  hint: z.string().optional(),
  balance: z.string().optional(),
});

const hex = z.string().regex(/^0x[0-9a-fA-F]*$/);
export const attestedMessage = z.object({
  message: hex,
  eventNonce: z.string(),
  attestation: z.string().describe("0x signatures, or PENDING"),
  decodedMessage: z.record(z.string(), z.unknown()).nullable(),
  cctpVersion: z.literal(2),
  status: z.enum(["complete", "pending_confirmations"]),
});
