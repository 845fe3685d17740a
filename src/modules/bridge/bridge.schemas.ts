/**
 * Bridge (CCTP): the transfer request, the chain descriptors, the transfer status, the local
 * attester's answer and the routes. The spec's four fields are checked for presence first (one
 * fixed text names all four), then each on its own.
 */
import { z } from "zod";
import { M } from "../../http/messages.ts";
import { errors, type RouteDoc } from "../../http/contract.ts";
import { isAddress } from "../../chain/address.ts";
import { usdcAmount } from "../../money.ts";
import { BRIDGE_STATUSES } from "./bridge.rules.ts";

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
      "Cross-chain checkout: a PENDING payment on Settle_Testnet; amount and recipient must be its amount and payee. The burn's hook data carries it; the mint settles it.",
    ),
});
export type TransferInput = z.output<typeof transferBody>;

export const statusQuery = z.object({
  reference: z.string({ error: M.bridgeReference }).min(1, M.bridgeReference)
    .max(64, M.bridgeReference).describe("The reference POST /api/cctp/transfer returned"),
});

export const attesterParams = z.object({
  sourceDomain: z.string().regex(/^\d{1,10}$/).describe("CCTP domain of the burn's chain"),
});
export const attesterQuery = z.object({
  transactionHash: z.string().regex(/^0x[0-9a-fA-F]{64}$/).describe("The burn transaction"),
});

const iso = z.string().describe("ISO 8601 timestamp");
const ok = z.literal(true);
const tag = "Bridge";

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
  mintedAmount: z.string().nullable(),
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

const errorWithBalance = z.object({
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

export const bridgeRoutes: RouteDoc[] = [
  {
    method: "post",
    path: "/api/cctp/transfer",
    summary: "Bridge USDC from your managed wallet on a source chain into Settle_Testnet",
    tag,
    auth: ["consumerCookie"],
    idempotent: true,
    body: transferBody,
    bodyExample: {
      fromChain: "Base_Sepolia",
      toChain: "Settle_Testnet",
      amount: "10.00",
      recipient: "0x5B38Da6a701c568545dCfcB03FcB875f56beddC4",
    },
    responses: {
      202: {
        description: "Started; poll the status path",
        schema: z.object({
          success: ok,
          status: z.literal("pending"),
          reference: z.string().describe("bridge_<random>"),
          message: z.string(),
          statusUrl: z.string().describe("The status path of this transfer"),
        }),
      },
      400: {
        description: "Missing or malformed fields, or too little USDC",
        schema: errorWithBalance,
      },
      409: {
        description: "paymentReference names a payment that is no longer payable",
        schema: errorWithBalance.extend({ status: z.string().optional() }),
      },
      ...errors([401, 404, 429, 500]),
    },
  },
  {
    method: "get",
    path: "/api/cctp/transfer",
    summary: "The chains bridging supports",
    tag,
    auth: [],
    responses: {
      200: {
        description: "Source and destination chains",
        schema: z.object({
          success: ok,
          sourceChains: z.array(sourceChain),
          destinationChains: z.array(destinationChain),
        }),
      },
      ...errors([429]),
    },
  },
  {
    method: "get",
    path: "/api/cctp/transfer/status",
    summary: "A bridge transfer's progress: pending → burned → attested → minted | failed",
    tag,
    auth: [],
    query: statusQuery,
    responses: {
      200: {
        description: "The transfer",
        schema: transferRecord.extend({ success: ok }),
      },
      ...errors([400, 404, 429]),
    },
  },
  {
    method: "get",
    path: "/api/cctp/attestation/v2/messages/:sourceDomain",
    summary:
      "The local attester, in the shape of Circle's attestation API (GET /v2/messages/{sourceDomain})",
    tag,
    auth: [],
    params: attesterParams,
    query: attesterQuery,
    responses: {
      200: {
        description: "The burn's messages with their attestations",
        schema: z.object({ messages: z.array(attestedMessage) }),
      },
      400: { description: "Malformed parameters", schema: z.object({ error: z.string() }) },
      404: { description: "No such burn (yet)", schema: z.object({ error: z.string() }) },
      ...errors([429]),
    },
  },
];
