/**
 * The chain side of hosted checkout: the service signs a PaymentOrder for a payment (EIP-712,
 * domain PaymentRouter v1), and the payer either signs an EIP-3009 ReceiveWithAuthorization
 * that the service relays (gasless, the default), or an EIP-2612 permit and sends the router
 * transaction themselves (the fallback). Either way one router call moves exactly the amount
 * and emits the reference.
 */
import { RECEIVE_WITH_AUTHORIZATION_TYPES, usdcDomain } from "./eip3009.ts";
import {
  decodeFunctionData,
  encodeAbiParameters,
  encodeFunctionData,
  type Hex,
  hexToString,
  keccak256,
  parseAbiParameters,
  parseSignature,
  recoverTypedDataAddress,
  stringToHex,
  TransactionReceiptNotFoundError,
} from "viem";
import { PaymentRouter, TestUSDC } from "./contracts/artifacts/index.ts";
import { hasHighS } from "./authorization-check.ts";
import type { ChainRuntime } from "./runtime.ts";
import type { ProfileName } from "./profiles.ts";
import type { TxRequest } from "./sender.ts";
import type { TxRow } from "./transactions.repo.ts";

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
    domain: usdcDomain(rt),
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

// ---- gasless: the payer's EIP-3009 authorization, relayed by the operator ---------------------

/** What the payer authorizes; `to`, `value` and `nonce` follow from the order. */
export interface AuthorizationWindow {
  from: `0x${string}`;
  validAfter: bigint;
  validBefore: bigint;
}

/**
 * The EIP-3009 nonce that pays this order: keccak256(abi.encode(ref, payTo, amount)), as the
 * router computes it, so a signature pays this one payment and only once.
 */
export function authorizationNonce(order: OrderInput): Hex {
  return keccak256(
    encodeAbiParameters(parseAbiParameters("bytes32, address, uint256"), [
      referenceToBytes32(order.reference),
      order.payTo,
      order.amount,
    ]),
  );
}

/** The ReceiveWithAuthorization typed data the payer signs for `order`. */
export function authorizationTypedData(
  rt: ChainRuntime,
  order: OrderInput,
  w: AuthorizationWindow,
) {
  const router = rt.contracts.PaymentRouter;
  if (!router) throw new Error(`our contracts are not deployed on ${rt.profile.name}`);
  return {
    domain: usdcDomain(rt),
    types: RECEIVE_WITH_AUTHORIZATION_TYPES,
    primaryType: "ReceiveWithAuthorization" as const,
    message: {
      from: w.from,
      to: router,
      value: order.amount,
      validAfter: w.validAfter,
      validBefore: w.validBefore,
      nonce: authorizationNonce(order),
    },
  };
}

/** Whether `signature` is `w.from`'s authorization for exactly this order (checked off chain). */
export async function authorizationSignedBy(
  rt: ChainRuntime,
  order: OrderInput,
  w: AuthorizationWindow,
  signature: Hex,
): Promise<boolean> {
  // USDC's ECRecover refuses a high s (the malleated twin of a good signature): the relay
  // would revert, so it is refused here.
  if (hasHighS(signature)) return false;
  try {
    const signer = await recoverTypedDataAddress({
      ...authorizationTypedData(rt, order, w),
      signature,
    });
    return signer.toLowerCase() === w.from.toLowerCase();
  } catch {
    return false;
  }
}

/** Call data for the relayed `payWithAuthorization`. */
export function payWithAuthorizationData(
  signed: SignedOrder,
  w: AuthorizationWindow,
  signature: Hex,
): Hex {
  const { v, r, s, yParity } = parseSignature(signature);
  return encodeFunctionData({
    abi: PaymentRouter.abi,
    functionName: "payWithAuthorization",
    args: [signed.order, signed.signature, {
      from: w.from,
      validAfter: w.validAfter,
      validBefore: w.validBefore,
      v: Number(v ?? BigInt(yParity + 27)),
      r,
      s,
    }],
  });
}

/** The payer whose authorization a relay transaction carries (lowercase), if it is one. */
export function relayedPayer(data: string): string | null {
  try {
    const call = decodeFunctionData({ abi: PaymentRouter.abi, data: data as Hex });
    if (call.functionName !== "payWithAuthorization") return null;
    const auth = call.args[2] as { from: string };
    return auth.from.toLowerCase();
  } catch {
    return null;
  }
}

/** What the checkout operations need from the chain module (a slice of `Chain`). */
export interface CheckoutChain {
  runtime(profile: ProfileName): ChainRuntime;
  contract(profile: ProfileName, name: "PaymentRouter"): `0x${string}`;
  /** The live transaction an intent already has, if any. */
  transaction(profile: ProfileName, intentKey: string): Promise<TxRow | null>;
  sender: { submit(req: TxRequest): Promise<TxRow> };
}

/**
 * Relays the payer's authorization from the operator: signs the order, records and broadcasts
 * once per `intentKey` (a second call, concurrent or later, gets the same transaction). Does not
 * wait for the receipt; the log watcher settles the payment.
 */
export async function relayAuthorization(
  chain: CheckoutChain,
  profile: ProfileName,
  req: {
    order: OrderInput;
    auth: AuthorizationWindow;
    signature: `0x${string}`;
    intentKey: string;
  },
): Promise<TxRow> {
  const rt = chain.runtime(profile);
  const done = await chain.transaction(profile, req.intentKey);
  if (done) return done;
  const signed = await signOrder(rt, req.order);
  try {
    return await chain.sender.submit({
      profile,
      from: "relayer",
      to: chain.contract(profile, "PaymentRouter"),
      data: payWithAuthorizationData(signed, req.auth, req.signature),
      intentKey: req.intentKey,
    });
  } catch (e) {
    // A concurrent relay of the same intent may have been mined while this one estimated
    // gas (which then reverts with AlreadySettled): that one is the answer.
    const winner = await chain.transaction(profile, req.intentKey);
    if (winner) return winner;
    throw e;
  }
}

/** Hosted checkout: the signed order, the payer's permit or authorization, the relay. */
export function checkoutOps(chain: CheckoutChain) {
  return {
    /** The service's signature over a payment order: what makes it payable on chain. */
    order: (profile: ProfileName, input: OrderInput): Promise<SignedOrder> =>
      signOrder(chain.runtime(profile), input),
    permit: (profile: ProfileName, p: { owner: `0x${string}`; value: bigint; deadline: bigint }) =>
      permitTypedData(chain.runtime(profile), p),
    calldata: (signed: SignedOrder, deadline: bigint, permitSignature: `0x${string}`) =>
      payWithPermitData(signed, deadline, permitSignature),
    receipt: (profile: ProfileName, hash: `0x${string}`) =>
      receiptStatus(chain.runtime(profile), hash),
    inspect: (profile: ProfileName, hash: `0x${string}`) =>
      inspectPayment(chain.runtime(profile), hash),
    routerAddress: (profile: ProfileName) => chain.contract(profile, "PaymentRouter"),
    /** The EIP-3009 ReceiveWithAuthorization a payer signs for a gasless payment of `order`. */
    authorization: (profile: ProfileName, order: OrderInput, w: AuthorizationWindow) =>
      authorizationTypedData(chain.runtime(profile), order, w),
    /** Whether `signature` is `w.from`'s authorization for exactly this order. */
    authorizedBy: (
      profile: ProfileName,
      order: OrderInput,
      w: AuthorizationWindow,
      signature: `0x${string}`,
    ) => authorizationSignedBy(chain.runtime(profile), order, w, signature),
    relay: (profile: ProfileName, req: Parameters<typeof relayAuthorization>[2]) =>
      relayAuthorization(chain, profile, req),
    relayedPayer,
  };
}
