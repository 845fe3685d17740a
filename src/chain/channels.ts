/**
 * The chain side of the x402 `batch-settlement` scheme (EVM binding): our X402BatchSettlement
 * and its ERC-3009 deposit collector, at the addresses the standard clients expect (a local node
 * gets them placed there; a real chain names them by configuration, the canonical ones by
 * default). Channel ids, voucher and deposit signatures are checked here the way the contract
 * checks them, so a refusal is one the chain would give, found before anything is broadcast.
 */
import {
  decodeFunctionResult,
  encodeAbiParameters,
  encodeFunctionData,
  type Hex,
  parseErc6492Signature,
  type PublicClient,
  recoverTypedDataAddress,
} from "viem";
import { TestUSDC, X402BatchSettlement } from "./contracts/artifacts/index.ts";
import { hasHighS, nativeRecovery, recoveryJob } from "./authorization-check.ts";
import { channelIdOf, voucherDigest } from "./channels.digest.ts";
import { recoversToSigner } from "./authorization-threads.ts";
import { RECEIVE_WITH_AUTHORIZATION_TYPES, usdcDomain } from "./eip3009.ts";
import type { ProfileName } from "./profiles.ts";
import { isZeroAddress } from "./address.ts";
import type { TxRow } from "./transactions.repo.ts";
import {
  type Address,
  asTuple,
  BATCH_SETTLEMENT_DOMAIN,
  batchAddresses,
  type ChannelChain,
  type ChannelConfig,
  type ChannelState,
  CLAIM_BATCH_TYPES,
  claimArgs,
  type ClaimRow,
  depositNonce,
  type Erc3009Deposit,
  REFUND_TYPES,
  VOUCHER_TYPES,
} from "./channels.defs.ts";

export * from "./channels.defs.ts";
export { placeBatchSettlement } from "./channels.place.ts";

export function channelOps(chain: ChannelChain) {
  const rt = (p: ProfileName) => chain.runtime(p);
  const client = (p: ProfileName): PublicClient => rt(p).client as PublicClient;
  /** Whether `address` holds code (a smart account answers ERC-1271; an EOA does not). */
  const hasCode = async (p: ProfileName, address: Address) =>
    ((await client(p).getCode({ address })) ?? "0x") !== "0x";
  const addresses = (p: ProfileName) => batchAddresses(rt(p).profile);
  const domain = (p: ProfileName) => ({
    ...BATCH_SETTLEMENT_DOMAIN,
    chainId: rt(p).chainId,
    verifyingContract: addresses(p).settlement,
  });
  const operator = (p: ProfileName) => {
    const op = rt(p).operator;
    if (!op) throw new Error(`${rt(p).profile.envPrefix}_OPERATOR_KEY is not configured`);
    return op;
  };
  const call = (p: ProfileName, data: Hex) => ({ to: addresses(p).settlement, data });
  const encode = (functionName: string, args: readonly unknown[]) =>
    encodeFunctionData(
      {
        abi: X402BatchSettlement.abi,
        functionName,
        args,
      } as Parameters<typeof encodeFunctionData>[0],
    );

  const signClaimBatch = (p: ProfileName, rows: ClaimRow[], channelId: (c: ChannelConfig) => Hex) =>
    operator(p).signTypedData({
      domain: domain(p),
      types: CLAIM_BATCH_TYPES,
      primaryType: "ClaimBatch",
      message: {
        claims: rows.map((r) => ({
          channelId: channelId(r.config),
          maxClaimableAmount: r.maxClaimable,
          totalClaimed: r.totalClaimed,
        })),
      },
    });

  const ops = {
    addresses,
    /** The receiver authorizer we sign claims and refunds with (the profile's operator). */
    receiverAuthorizer: (p: ProfileName): Address => operator(p).address,
    /** The token channels are offered in and its EIP-712 domain (name, version). */
    token: (p: ProfileName) => usdcDomain(rt(p)),
    depositNonce,
    /** Whether the settlement contract has code (and we have a key to authorize claims with). */
    async deployed(p: ProfileName): Promise<boolean> {
      if (!rt(p).operator) return false;
      const code = await client(p).getCode({ address: addresses(p).settlement });
      return !!code && code !== "0x";
    },

    channelId(p: ProfileName, config: ChannelConfig): Hex {
      return channelIdOf(domain(p), config);
    },

    /**
     * Whether `signature` is the channel's voucher for `maxClaimable`: recovered locally against
     * a committed payer authorizer (no RPC), else the payer's (an ERC-1271 account: one call).
     */
    async voucherSigned(
      p: ProfileName,
      config: ChannelConfig,
      channelId: Hex,
      maxClaimable: bigint,
      signature: Hex,
    ): Promise<boolean> {
      const typed = {
        domain: domain(p),
        types: VOUCHER_TYPES,
        primaryType: "Voucher" as const,
        message: { channelId, maxClaimableAmount: maxClaimable },
      };
      const zero = isZeroAddress(config.payerAuthorizer);
      const expected = (zero ? config.payer : config.payerAuthorizer).toLowerCase();
      // The contract checks with OpenZeppelin's SignatureChecker, whose ECDSA refuses a high s:
      // the malleated twin of a good voucher recovers its signer but would fail the claim (and a
      // claim of many channels with it), so it is nobody's ECDSA signature here; only an
      // ERC-1271 payer (asked whatever the signature's form) can still accept it.
      const malleated = hasHighS(signature);
      // Whether the signer the channel names signed it, by ECDSA: libsecp256k1 off the event loop
      // for a 65-byte signature, viem's recovery for any other form or without the binding.
      let byExpected = false;
      if (!malleated) {
        try {
          const job = nativeRecovery && signature.length === 132
            ? recoveryJob(voucherDigest(domain(p), channelId, maxClaimable), signature, expected)
            : null;
          byExpected = job
            ? await recoversToSigner(job)
            : (await recoverTypedDataAddress({ ...typed, signature })).toLowerCase() === expected;
        } catch { /* not a plain ECDSA signature */ }
      }
      if (byExpected) return true;
      if (!zero) return false;
      // The payer itself, not by ECDSA: asked of the node (an ERC-1271 account: one call).
      try {
        if (malleated && !(await hasCode(p, config.payer))) return false;
        return await client(p).verifyTypedData({ ...typed, address: config.payer, signature });
      } catch {
        return false;
      }
    },

    /** Whether `d` is the payer's ReceiveWithAuthorization to the collector for this channel. */
    async depositSigned(
      p: ProfileName,
      payer: Address,
      channelId: Hex,
      d: Erc3009Deposit,
    ): Promise<boolean> {
      try {
        const signature = parseErc6492Signature(d.signature).signature;
        // USDC's ECRecover refuses a high s from an EOA (its relay would revert): so do we.
        if (hasHighS(signature) && !(await hasCode(p, payer))) return false;
        return await client(p).verifyTypedData({
          address: payer,
          domain: usdcDomain(rt(p)),
          types: RECEIVE_WITH_AUTHORIZATION_TYPES,
          primaryType: "ReceiveWithAuthorization",
          message: {
            from: payer,
            to: addresses(p).collector,
            value: d.amount,
            validAfter: d.validAfter,
            validBefore: d.validBefore,
            nonce: depositNonce(channelId, d.salt),
          },
          signature,
        });
      } catch {
        return false;
      }
    },

    /** Whether the token already used the deposit's ERC-3009 nonce for `payer`. */
    async depositNonceUsed(p: ProfileName, payer: Address, nonce: Hex): Promise<boolean> {
      return await client(p).readContract({
        address: usdcDomain(rt(p)).verifyingContract,
        abi: TestUSDC.abi,
        functionName: "authorizationState",
        args: [payer, nonce],
      });
    },

    /** The contract's state of each channel, in one call (the contract's own multicall). */
    async states(p: ProfileName, ids: Hex[]): Promise<ChannelState[]> {
      if (!ids.length) return [];
      const calls = ids.flatMap((id) => [
        encode("channels", [id]),
        encode("pendingWithdrawals", [id]),
        encode("refundNonce", [id]),
      ]);
      // multicall is not a view (it runs anything), so it is called, not read.
      const { data } = await client(p).call(call(p, encode("multicall", [calls])));
      const results = decodeFunctionResult({
        abi: X402BatchSettlement.abi,
        functionName: "multicall",
        data: data ?? "0x",
      }) as readonly Hex[];
      const out = (functionName: string, data: Hex) =>
        decodeFunctionResult(
          {
            abi: X402BatchSettlement.abi,
            functionName,
            data,
          } as Parameters<typeof decodeFunctionResult>[0],
        ) as unknown;
      return ids.map((_, i) => {
        const [balance, totalClaimed] = out("channels", results[3 * i]) as [bigint, bigint];
        const [, initiatedAt] = out("pendingWithdrawals", results[3 * i + 1]) as [bigint, number];
        const refundNonce = out("refundNonce", results[3 * i + 2]) as bigint;
        return { balance, totalClaimed, withdrawRequestedAt: Number(initiatedAt), refundNonce };
      });
    },

    /** What the contract owes a receiver in `token`: claimed and settled totals. */
    async receiverTotals(p: ProfileName, receiver: Address, token: Address) {
      const [claimed, settled] = await client(p).readContract({
        address: addresses(p).settlement,
        abi: X402BatchSettlement.abi,
        functionName: "receivers",
        args: [receiver, token],
      });
      return { claimed, settled };
    },

    /** Relays the payer's deposit (any relayer may: the authorization is the permission). */
    async deposit(
      p: ProfileName,
      req: { config: ChannelConfig; deposit: Erc3009Deposit; intentKey: string },
    ): Promise<TxRow> {
      const d = req.deposit;
      const collectorData = encodeAbiParameters(
        [{ type: "uint256" }, { type: "uint256" }, { type: "uint256" }, { type: "bytes" }],
        [d.validAfter, d.validBefore, BigInt(d.salt), parseErc6492Signature(d.signature).signature],
      );
      return await chain.send({
        profile: p,
        from: "relayer",
        ...call(
          p,
          encode("deposit", [asTuple(req.config), d.amount, addresses(p).collector, collectorData]),
        ),
        intentKey: req.intentKey,
      });
    },

    /**
     * One transaction: `claimWithSignature` over every row (signed by our receiver authorizer,
     * which every row's channel names), then `settle` for each receiver, so the sellers are paid
     * in the same block. Deterministic for the same rows (RFC 6979 signatures): a retry after a
     * crash rebuilds the bytes it recorded. Waits for the receipt; once per `intentKey`.
     */
    async claimAndSettle(p: ProfileName, req: { rows: ClaimRow[]; intentKey: string }) {
      const id = (c: ChannelConfig) => ops.channelId(p, c);
      const signature = await signClaimBatch(p, req.rows, id);
      const token = usdcDomain(rt(p)).verifyingContract;
      const receivers = [...new Set(req.rows.map((r) => r.config.receiver.toLowerCase()))].sort();
      const data = encode("multicall", [[
        encode("claimWithSignature", [claimArgs(req.rows), signature]),
        ...receivers.map((r) => encode("settle", [r, token])),
      ]]);
      return await chain.send({
        profile: p,
        from: "relayer",
        ...call(p, data),
        intentKey: req.intentKey,
      });
    },

    /**
     * A cooperative refund of `amount` to the payer at the channel's `nonce`, after claiming the
     * channel's outstanding voucher (`claim`) and before settling the receiver, in the same
     * transaction. Waits for the receipt.
     */
    async refund(
      p: ProfileName,
      req: {
        config: ChannelConfig;
        amount: bigint;
        nonce: bigint;
        claim?: ClaimRow;
        intentKey: string;
      },
    ): Promise<TxRow> {
      const channelId = ops.channelId(p, req.config);
      const refundSignature = await operator(p).signTypedData({
        domain: domain(p),
        types: REFUND_TYPES,
        primaryType: "Refund",
        message: { channelId, nonce: req.nonce, amount: req.amount },
      });
      const refundCall = encode("refundWithSignature", [
        asTuple(req.config),
        req.amount,
        req.nonce,
        refundSignature,
      ]);
      // What the claim collects is paid to the receiver in the same transaction.
      const data = req.claim
        ? encode("multicall", [[
          encode("claimWithSignature", [
            claimArgs([req.claim]),
            await signClaimBatch(p, [req.claim], () => channelId),
          ]),
          refundCall,
          encode("settle", [req.config.receiver, req.config.token]),
        ]])
        : refundCall;
      return await chain.send({
        profile: p,
        from: "relayer",
        ...call(p, data),
        intentKey: req.intentKey,
      });
    },

    /** `settle(receiver, token)` on its own (permissionless). Waits for the receipt. */
    async settle(p: ProfileName, req: { receiver: Address; token: Address; intentKey: string }) {
      return await chain.send({
        profile: p,
        from: "relayer",
        ...call(p, encode("settle", [req.receiver, req.token])),
        intentKey: req.intentKey,
      });
    },

    /**
     * A claim for someone else's receiver authorizer, with the signature it gave us (a seller
     * server that keeps its own key): its own transaction, not batched with ours.
     */
    async claimWithSignature(
      p: ProfileName,
      req: { rows: ClaimRow[]; signature: Hex; intentKey: string },
    ): Promise<TxRow> {
      return await chain.send({
        profile: p,
        from: "relayer",
        ...call(p, encode("claimWithSignature", [claimArgs(req.rows), req.signature])),
        intentKey: req.intentKey,
      });
    },
  };
  return ops;
}
