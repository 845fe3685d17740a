/**
 * The chain side of escrow: EscrowVault call data, the depositor's EIP-3009 authorization signed
 * by its managed wallet, and the contract's view of an escrow. The escrow id is the reference as
 * bytes32 text (references fit in 32 bytes), readable in logs like the router's.
 */
import { RECEIVE_WITH_AUTHORIZATION_TYPES, usdcDomain } from "./eip3009.ts";
import {
  decodeFunctionData,
  encodeFunctionData,
  type Hex,
  keccak256,
  type LocalAccount,
  parseSignature,
  stringToHex,
} from "viem";
import { EscrowVault } from "./contracts/artifacts/index.ts";
import { bytes32ToReference, referenceToBytes32 } from "./checkout.ts";
import type { ChainRuntime } from "./runtime.ts";
import type { ProfileName } from "./profiles.ts";
import type { TxRequest } from "./sender.ts";
import type { TxRow } from "./transactions.repo.ts";

export const ESCROW_CHAIN_STATUSES = [
  "NONE",
  "ACTIVE",
  "DISPUTED",
  "RELEASED",
  "REFUNDED",
] as const;
export type EscrowChainStatus = typeof ESCROW_CHAIN_STATUSES[number];

export interface EscrowTerms {
  reference: string;
  depositor: `0x${string}`;
  beneficiary: `0x${string}`;
  amount: bigint;
  /** Unix seconds. */
  expiresAt: bigint;
}

export interface EscrowOnChain {
  status: EscrowChainStatus;
  depositor: `0x${string}`;
  beneficiary: `0x${string}`;
  arbiter: `0x${string}`;
  amount: bigint;
  expiresAt: bigint;
  confirmed: boolean;
  disputedBy: `0x${string}` | null;
  disputeReasonHash: Hex;
}

export type EscrowAction = "release" | "confirm" | "dispute" | "refund";

function vault(rt: ChainRuntime): `0x${string}` {
  const a = rt.contracts.EscrowVault;
  if (!a) throw new Error(`EscrowVault is not deployed on ${rt.profile.name}`);
  return a;
}

function abiTerms(rt: ChainRuntime, t: EscrowTerms) {
  if (!rt.operator) throw new Error(`${rt.profile.envPrefix}_OPERATOR_KEY is needed for escrow`);
  return {
    id: referenceToBytes32(t.reference),
    depositor: t.depositor,
    beneficiary: t.beneficiary,
    // The chain's operator arbitrates disputes; it is bound into the depositor's signature.
    arbiter: rt.operator.address,
    amount: t.amount,
    expiresAt: t.expiresAt,
  };
}

/**
 * The createWithAuthorization call data: the depositor's managed wallet signs a
 * ReceiveWithAuthorization whose nonce binds every term (as the vault computes it).
 */
export async function createEscrowData(
  rt: ChainRuntime,
  depositor: LocalAccount,
  t: EscrowTerms,
  window: { validAfter: bigint; validBefore: bigint },
): Promise<Hex> {
  const terms = abiTerms(rt, t);
  const nonce = keccak256(
    encodeAbi(terms),
  );
  const signature = await depositor.signTypedData({
    domain: usdcDomain(rt),
    types: RECEIVE_WITH_AUTHORIZATION_TYPES,
    primaryType: "ReceiveWithAuthorization",
    message: {
      from: t.depositor,
      to: vault(rt),
      value: t.amount,
      validAfter: window.validAfter,
      validBefore: window.validBefore,
      nonce,
    },
  });
  const { v, r, s, yParity } = parseSignature(signature);
  return encodeFunctionData({
    abi: EscrowVault.abi,
    functionName: "createWithAuthorization",
    args: [terms, {
      validAfter: window.validAfter,
      validBefore: window.validBefore,
      v: Number(v ?? BigInt(yParity + 27)),
      r,
      s,
    }],
  });
}

function encodeAbi(terms: ReturnType<typeof abiTerms>): Hex {
  // abi.encode(id, depositor, beneficiary, arbiter, amount, expiresAt): static words only.
  const word = (h: string) => h.replace(/^0x/, "").toLowerCase().padStart(64, "0");
  return `0x${
    [
      terms.id,
      terms.depositor,
      terms.beneficiary,
      terms.arbiter,
      terms.amount.toString(16),
      terms.expiresAt.toString(16),
    ].map(word).join("")
  }`;
}

/** keccak256 of the reason text, what the vault stores for a dispute. */
export function reasonHash(reason: string): Hex {
  return keccak256(stringToHex(reason));
}

export function escrowActionData(action: EscrowAction, reference: string, reason?: string): Hex {
  const id = referenceToBytes32(reference);
  if (action === "dispute") {
    return encodeFunctionData({
      abi: EscrowVault.abi,
      functionName: "dispute",
      args: [id, reasonHash(reason ?? "")],
    });
  }
  return encodeFunctionData({ abi: EscrowVault.abi, functionName: action, args: [id] });
}

export function resolveData(reference: string, released: boolean): Hex {
  return encodeFunctionData({
    abi: EscrowVault.abi,
    functionName: "resolve",
    args: [referenceToBytes32(reference), released],
  });
}

/** An EscrowVault action call, decoded: which escrow, and what the call data fixed. */
export type EscrowCall =
  | { fn: "release" | "confirm" | "refund"; reference: string }
  | { fn: "dispute"; reference: string; reasonHash: Hex }
  | { fn: "resolve"; reference: string; released: boolean };

/** Decodes the call data of an action sent to the vault (null for any other call). */
export function decodeEscrowCall(data: Hex): EscrowCall | null {
  let call;
  try {
    call = decodeFunctionData({ abi: EscrowVault.abi, data });
  } catch {
    return null;
  }
  const reference = bytes32ToReference(call.args![0] as Hex);
  switch (call.functionName) {
    case "release":
    case "confirm":
    case "refund":
      return { fn: call.functionName, reference };
    case "dispute":
      return { fn: "dispute", reference, reasonHash: call.args[1] as Hex };
    case "resolve":
      return { fn: "resolve", reference, released: call.args[1] as boolean };
    default:
      return null;
  }
}

/** The contract's view of an escrow (status NONE when it does not exist). */
export async function readEscrow(rt: ChainRuntime, reference: string): Promise<EscrowOnChain> {
  const e = await rt.client.readContract({
    address: vault(rt),
    abi: EscrowVault.abi,
    functionName: "getEscrow",
    args: [referenceToBytes32(reference)],
  });
  const zero = /^0x0{40}$/i;
  return {
    status: ESCROW_CHAIN_STATUSES[e.status],
    depositor: e.depositor.toLowerCase() as `0x${string}`,
    beneficiary: e.beneficiary.toLowerCase() as `0x${string}`,
    arbiter: e.arbiter.toLowerCase() as `0x${string}`,
    amount: e.amount,
    expiresAt: BigInt(e.expiresAt),
    confirmed: e.confirmed,
    disputedBy: zero.test(e.disputedBy) ? null : e.disputedBy.toLowerCase() as `0x${string}`,
    disputeReasonHash: e.disputeReasonHash,
  };
}

/** The latest block's timestamp (unix seconds): the clock the vault's expiry checks use. */
export async function chainTime(rt: ChainRuntime): Promise<bigint> {
  return (await rt.client.getBlock({ blockTag: "latest" })).timestamp;
}

/** What the escrow operations need from the chain module (a slice of `Chain`). */
export interface EscrowChain {
  runtime(profile: ProfileName): ChainRuntime;
  contract(profile: ProfileName, name: "EscrowVault"): `0x${string}`;
  /** The live transaction an intent already has, if any. */
  transaction(profile: ProfileName, intentKey: string): Promise<TxRow | null>;
  walletAccount(walletId: string): Promise<LocalAccount>;
  sender: {
    send(req: TxRequest, wait?: { timeoutMs?: number }): Promise<TxRow>;
    wait(profile: ProfileName, row: TxRow, timeoutMs?: number): Promise<TxRow>;
  };
}

/**
 * Funds a new escrow: the depositor's managed wallet signs an EIP-3009 authorization bound to
 * every term, the operator relays it (the depositor needs no gas). Waits for the receipt.
 */
export async function createEscrow(
  chain: EscrowChain,
  profile: ProfileName,
  req: { depositorWalletId: string; terms: EscrowTerms; intentKey: string },
): Promise<TxRow> {
  const rt = chain.runtime(profile);
  const done = await chain.transaction(profile, req.intentKey);
  if (done) return await chain.sender.wait(profile, done);
  const account = await chain.walletAccount(req.depositorWalletId);
  const data = await createEscrowData(rt, account, req.terms, {
    validAfter: 0n,
    validBefore: req.terms.expiresAt,
  });
  return await chain.sender.send({
    profile,
    from: "operator",
    to: chain.contract(profile, "EscrowVault"),
    data,
    intentKey: req.intentKey,
  });
}

/** EscrowVault: create, a party's action, the arbiter's resolution, and the vault's view. */
export function escrowOps(chain: EscrowChain) {
  return {
    create: (profile: ProfileName, req: Parameters<typeof createEscrow>[2]) =>
      createEscrow(chain, profile, req),
    /** A party's transaction from its managed wallet (refund: from the operator). */
    act: async (
      profile: ProfileName,
      req: {
        action: EscrowAction;
        reference: string;
        walletId?: string;
        reason?: string;
        intentKey: string;
      },
    ): Promise<TxRow> =>
      await chain.sender.send({
        profile,
        from: req.walletId ? { walletId: req.walletId } : "operator",
        to: chain.contract(profile, "EscrowVault"),
        data: escrowActionData(req.action, req.reference, req.reason),
        intentKey: req.intentKey,
      }),
    /** The arbiter (the chain's operator) settles a dispute. */
    resolve: async (
      profile: ProfileName,
      req: { reference: string; released: boolean; intentKey: string },
    ): Promise<TxRow> =>
      await chain.sender.send({
        profile,
        from: "operator",
        to: chain.contract(profile, "EscrowVault"),
        data: resolveData(req.reference, req.released),
        intentKey: req.intentKey,
      }),
    /** What a recorded EscrowVault call did: its function, and a dispute's reason hash or a
     * resolution's outcome (recovering an action from its transaction). */
    decode: (data: Hex) => decodeEscrowCall(data),
    /** keccak256 of a dispute's reason text: what the vault keeps of it. */
    reasonHash: (reason: string) => reasonHash(reason),
    read: (profile: ProfileName, reference: string) =>
      readEscrow(chain.runtime(profile), reference),
    /** The latest block's timestamp: the vault's clock for expiry. */
    time: (profile: ProfileName) => chainTime(chain.runtime(profile)),
  };
}
