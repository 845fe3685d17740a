/**
 * The chain side of hosted checkout: the service signs a PaymentOrder for a payment (EIP-712,
 * domain PaymentRouter v1), the payer signs an EIP-2612 permit for exactly that amount to the
 * router, and one router transaction moves the USDC and emits the reference.
 */
import {
  decodeFunctionData,
  encodeFunctionData,
  type Hex,
  hexToString,
  parseSignature,
  stringToHex,
  TransactionReceiptNotFoundError,
} from "viem";
import { PaymentRouter, TestUSDC } from "./contracts/artifacts/index.ts";
import type { ChainRuntime } from "./runtime.ts";

export interface OrderInput {
  reference: string;
  payTo: `0x${string}`;
  amount: bigint;
  /** Unix seconds: the payment's expiry. */
  validBefore: bigint;
}

export interface SignedOrder {
  order: { ref: Hex; payTo: `0x${string}`; amount: bigint; validBefore: bigint };
  signature: Hex;
}

/** A reference fits in a bytes32 as text (we keep references ≤ 32 bytes), readable in logs. */
export function referenceToBytes32(reference: string): Hex {
  return stringToHex(reference, { size: 32 });
}

export function bytes32ToReference(ref: Hex): string {
  return hexToString(ref, { size: 32 }).replaceAll(String.fromCharCode(0), "");
}

export async function signOrder(rt: ChainRuntime, input: OrderInput): Promise<SignedOrder> {
  if (!rt.operator) {
    throw new Error(`${rt.profile.envPrefix}_OPERATOR_KEY is needed to sign orders`);
  }
  const router = rt.contracts.PaymentRouter;
  if (!router) throw new Error(`PaymentRouter is not deployed on ${rt.profile.name}`);
  const order = {
    ref: referenceToBytes32(input.reference),
    payTo: input.payTo,
    amount: input.amount,
    validBefore: input.validBefore,
  };
  const signature = await rt.operator.signTypedData({
    domain: { name: "PaymentRouter", version: "1", chainId: rt.chainId, verifyingContract: router },
    types: {
      PaymentOrder: [
        { name: "reference", type: "bytes32" },
        { name: "payTo", type: "address" },
        { name: "amount", type: "uint256" },
        { name: "validBefore", type: "uint256" },
      ],
    },
    primaryType: "PaymentOrder",
    message: {
      reference: order.ref,
      payTo: order.payTo,
      amount: order.amount,
      validBefore: order.validBefore,
    },
  });
  return { order, signature };
}

/** The EIP-2612 permit the payer signs: value exactly the amount, spender the router. */
export async function permitTypedData(
  rt: ChainRuntime,
  p: { owner: `0x${string}`; value: bigint; deadline: bigint },
) {
  const usdc = rt.contracts.TestUSDC!;
  const router = rt.contracts.PaymentRouter!;
  const nonce = await rt.client.readContract({
    address: usdc,
    abi: TestUSDC.abi,
    functionName: "nonces",
    args: [p.owner],
  });
  return {
    domain: { name: "USD Coin", version: "2", chainId: rt.chainId, verifyingContract: usdc },
    types: {
      Permit: [
        { name: "owner", type: "address" },
        { name: "spender", type: "address" },
        { name: "value", type: "uint256" },
        { name: "nonce", type: "uint256" },
        { name: "deadline", type: "uint256" },
      ],
    },
    primaryType: "Permit" as const,
    message: { owner: p.owner, spender: router, value: p.value, nonce, deadline: p.deadline },
  };
}

/** Call data for `payWithPermit` from the payer's permit signature. */
export function payWithPermitData(
  signed: SignedOrder,
  permitDeadline: bigint,
  permitSignature: Hex,
): Hex {
  const { v, r, s, yParity } = parseSignature(permitSignature);
  return encodeFunctionData({
    abi: PaymentRouter.abi,
    functionName: "payWithPermit",
    args: [signed.order, signed.signature, permitDeadline, Number(v ?? BigInt(yParity + 27)), r, s],
  });
}

/** A transaction's outcome, if it has been mined. */
export async function receiptStatus(
  rt: ChainRuntime,
  hash: Hex,
): Promise<"success" | "reverted" | null> {
  try {
    return (await rt.client.getTransactionReceipt({ hash })).status;
  } catch (e) {
    if (e instanceof TransactionReceiptNotFoundError) return null;
    throw e;
  }
}

/**
 * What a payer-reported transaction is: mined or not, and whether it is a router call for a
 * given reference (so nobody can fail someone else's payment with an unrelated revert).
 */
export async function inspectPayment(
  rt: ChainRuntime,
  hash: Hex,
): Promise<{ status: "success" | "reverted" | null; reference: string | null }> {
  const tx = await rt.client.getTransaction({ hash }).catch(() => null);
  if (!tx) return { status: null, reference: null };
  let reference: string | null = null;
  if (
    tx.to && rt.contracts.PaymentRouter &&
    tx.to.toLowerCase() === rt.contracts.PaymentRouter.toLowerCase()
  ) {
    try {
      const call = decodeFunctionData({ abi: PaymentRouter.abi, data: tx.input });
      const order = (call.args as readonly unknown[])[0] as { ref: Hex };
      reference = bytes32ToReference(order.ref);
    } catch { /* not one of the pay functions */ }
  }
  return { status: await receiptStatus(rt, hash), reference };
}
