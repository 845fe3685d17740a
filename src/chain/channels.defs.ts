/**
 * The x402 `batch-settlement` EVM binding's fixed parts: the canonical addresses the standard
 * clients use, the EIP-712 domain and types (ChannelConfig, Voucher, Refund, ClaimBatch), and the
 * shapes our channel operations take.
 */
import { encodeAbiParameters, type Hex, keccak256 } from "viem";
import type { ProfileConfig, ProfileName } from "./profiles.ts";
import type { TxRequest } from "./sender.ts";
import type { TxRow } from "./transactions.repo.ts";
import type { ChainRuntime } from "./runtime.ts";

export type Address = `0x${string}`;

/** Where the standard clients (`@x402/evm`) look for the contracts, on every chain. */
export const BATCH_SETTLEMENT_ADDRESS: Address = "0x4020074e9dF2ce1deE5A9C1b5c3f541D02a10003";
export const ERC3009_DEPOSIT_COLLECTOR_ADDRESS: Address =
  "0x4020806089470a89826cB9fB1f4059150b550004";
export const BATCH_SETTLEMENT_DOMAIN = { name: "x402 Batch Settlement", version: "1" } as const;
/** The binding's bounds on a channel's withdrawal delay (seconds). */
export const MIN_WITHDRAW_DELAY = 900;
export const MAX_WITHDRAW_DELAY = 2_592_000;

export const CHANNEL_CONFIG_TYPES = {
  ChannelConfig: [
    { name: "payer", type: "address" },
    { name: "payerAuthorizer", type: "address" },
    { name: "receiver", type: "address" },
    { name: "receiverAuthorizer", type: "address" },
    { name: "token", type: "address" },
    { name: "withdrawDelay", type: "uint40" },
    { name: "salt", type: "bytes32" },
  ],
} as const;
export const VOUCHER_TYPES = {
  Voucher: [
    { name: "channelId", type: "bytes32" },
    { name: "maxClaimableAmount", type: "uint128" },
  ],
} as const;
export const REFUND_TYPES = {
  Refund: [
    { name: "channelId", type: "bytes32" },
    { name: "nonce", type: "uint256" },
    { name: "amount", type: "uint128" },
  ],
} as const;
export const CLAIM_BATCH_TYPES = {
  ClaimBatch: [{ name: "claims", type: "ClaimEntry[]" }],
  ClaimEntry: [
    { name: "channelId", type: "bytes32" },
    { name: "maxClaimableAmount", type: "uint128" },
    { name: "totalClaimed", type: "uint128" },
  ],
} as const;

export interface ChannelConfig {
  payer: Address;
  payerAuthorizer: Address;
  receiver: Address;
  receiverAuthorizer: Address;
  token: Address;
  withdrawDelay: number;
  salt: Hex;
}

/** What the contract holds for a channel. */
export interface ChannelState {
  balance: bigint;
  totalClaimed: bigint;
  /** Seconds (chain time) a timed withdrawal was initiated at; 0: none pending. */
  withdrawRequestedAt: number;
  refundNonce: bigint;
}

/** One channel's row of a claim: the payer's latest voucher and the total to claim. */
export interface ClaimRow {
  config: ChannelConfig;
  maxClaimable: bigint;
  signature: Hex;
  totalClaimed: bigint;
}

/** The ERC-3009 part of a deposit payload (`erc3009Authorization`) and its amount. */
export interface Erc3009Deposit {
  amount: bigint;
  validAfter: bigint;
  validBefore: bigint;
  /** uint256, as the client sends it (0x hex). */
  salt: Hex;
  signature: Hex;
}

/** What the channel operations need from the chain module (a slice of `Chain`). */
export interface ChannelChain {
  runtime(profile: ProfileName): ChainRuntime;
  send(req: TxRequest, wait?: { timeoutMs?: number }): Promise<TxRow>;
}

/** The profile's contract addresses: configured, else the canonical ones. */
export function batchAddresses(profile: Pick<ProfileConfig, "batchSettlement">) {
  return {
    settlement: profile.batchSettlement?.settlement ?? BATCH_SETTLEMENT_ADDRESS,
    collector: profile.batchSettlement?.collector ?? ERC3009_DEPOSIT_COLLECTOR_ADDRESS,
  };
}

export const asTuple = (c: ChannelConfig) => ({ ...c, withdrawDelay: c.withdrawDelay });

export function claimArgs(rows: ClaimRow[]) {
  return rows.map((r) => ({
    voucher: { channel: asTuple(r.config), maxClaimableAmount: r.maxClaimable },
    signature: r.signature,
    totalClaimed: r.totalClaimed,
  }));
}

/** The ERC-3009 nonce of a deposit: binds the authorization to one channel. */
export function depositNonce(channelId: Hex, salt: Hex): Hex {
  return keccak256(
    encodeAbiParameters([{ type: "bytes32" }, { type: "uint256" }], [channelId, BigInt(salt)]),
  );
}
