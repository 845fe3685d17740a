/**
 * Cross-chain checkout from the shopper's own wallet on a source chain (CCTP v2). Two ways:
 * - one signature: the shopper signs an EIP-3009 ReceiveWithAuthorization to our CheckoutBurner,
 *   whose nonce commits to the whole burn (amount, destination, recipient, maxFee, finality,
 *   hook data); our relayer submits it and the contract burns through the messenger;
 * - the wallet's own transactions: approve the messenger, depositForBurnWithHook, then the page
 *   reports the burn's hash and we read it back from the chain.
 * Both work against Circle's TokenMessengerV2 and USDC by configuration.
 */
import {
  BaseError,
  ContractFunctionRevertedError,
  decodeEventLog,
  encodeAbiParameters,
  encodeFunctionData,
  type Hex,
  keccak256,
  parseAbi,
  parseAbiParameters,
  parseSignature,
  recoverTypedDataAddress,
} from "viem";
import { CheckoutBurner, TestUSDC, TokenMessengerV2 } from "./contracts/artifacts/index.ts";
import { RECEIVE_WITH_AUTHORIZATION_TYPES, usdcDomain } from "./eip3009.ts";
import { toBytes32 } from "./cctp-message.ts";
import { hasHighS } from "./authorization-check.ts";
import type { CctpChain } from "./cctp.ts";
import type { ProfileName } from "./profiles.ts";
import type { TxRow } from "./transactions.repo.ts";
import { PAYOUT_WINDOW, payoutFloor, payoutLookupWindows } from "./payroll.ts";

/** A checkout burn: what is burned on the source chain and where it is minted. */
export interface CheckoutBurn {
  amount: bigint;
  destinationDomain: number;
  mintRecipient: `0x${string}`;
  maxFee: bigint;
  minFinalityThreshold: number;
  hookData: Hex;
}

/** What the shopper authorizes besides the burn (the burn fixes to, value and nonce). */
export interface BurnWindow {
  from: `0x${string}`;
  validAfter: bigint;
  validBefore: bigint;
}

/** A burn found in a transaction: the messenger's DepositForBurn, decoded. */
export interface ReportedBurn {
  txHash: Hex;
  blockNumber: bigint;
  /** The transaction's sender (the shopper's wallet). */
  from: `0x${string}`;
  depositor: `0x${string}`;
  burnToken: `0x${string}`;
  amount: bigint;
  mintRecipient: Hex;
  destinationDomain: number;
  destinationCaller: Hex;
  maxFee: bigint;
  minFinalityThreshold: number;
  hookData: Hex;
}

const EIP3009_VIEWS = parseAbi([
  "function authorizationState(address authorizer, bytes32 nonce) view returns (bool)",
]);

const burnArg = (b: CheckoutBurn) => ({
  amount: b.amount,
  destinationDomain: b.destinationDomain,
  mintRecipient: toBytes32(b.mintRecipient),
  maxFee: b.maxFee,
  minFinalityThreshold: b.minFinalityThreshold,
  hookData: b.hookData,
});

/** The EIP-3009 nonce of a burn, as CheckoutBurner.burnNonce computes it. */
export function burnNonce(b: CheckoutBurn): Hex {
  return keccak256(
    encodeAbiParameters(parseAbiParameters("uint256, uint32, bytes32, uint256, uint32, bytes32"), [
      b.amount,
      b.destinationDomain,
      toBytes32(b.mintRecipient),
      b.maxFee,
      b.minFinalityThreshold,
      keccak256(b.hookData),
    ]),
  );
}

export function checkoutBurnOps(chain: CctpChain) {
  const burner = (p: ProfileName) => chain.runtime(p).contracts.CheckoutBurner ?? null;
  const typedData = (p: ProfileName, b: CheckoutBurn, w: BurnWindow) => ({
    domain: usdcDomain(chain.runtime(p)),
    types: RECEIVE_WITH_AUTHORIZATION_TYPES,
    primaryType: "ReceiveWithAuthorization" as const,
    message: {
      from: w.from,
      to: chain.contract(p, "CheckoutBurner"),
      value: b.amount,
      validAfter: w.validAfter,
      validBefore: w.validBefore,
      nonce: burnNonce(b),
    },
  });
  /** Whether the token has spent `nonce` of `from`; null: the token has no EIP-3009. */
  const authorizationUsed = async (p: ProfileName, from: `0x${string}`, nonce: Hex) => {
    try {
      return await chain.runtime(p).client.readContract({
        address: chain.contract(p, "TestUSDC"),
        abi: EIP3009_VIEWS,
        functionName: "authorizationState",
        args: [from, nonce],
      });
    } catch (e) {
      if (e instanceof BaseError && e.walk((x) => x instanceof ContractFunctionRevertedError)) {
        return null;
      }
      throw e;
    }
  };

  return {
    /** The contract that relays one-signature burns on `p`, if deployed there. */
    burner,
    /** One signature works on `p`: our CheckoutBurner is there and its USDC has EIP-3009. */
    oneSignature: async (p: ProfileName): Promise<boolean> =>
      !!burner(p) && (await authorizationUsed(p, burner(p)!, `0x${"00".repeat(32)}`)) !== null,
    /** The ReceiveWithAuthorization the shopper signs for `b` (to = CheckoutBurner). */
    authorization: typedData,
    authorizationUsed,
    /** Whether `signature` is `w.from`'s authorization of exactly `b` (checked off chain). */
    authorizedBy: async (p: ProfileName, b: CheckoutBurn, w: BurnWindow, signature: Hex) => {
      if (hasHighS(signature)) return false; // USDC's ECRecover refuses it: the burn would revert
      try {
        const signer = await recoverTypedDataAddress({ ...typedData(p, b, w), signature });
        return signer.toLowerCase() === w.from.toLowerCase();
      } catch {
        return false;
      }
    },
    /** The shopper's allowance to the messenger (the wallet path skips approve when enough). */
    allowance: async (p: ProfileName, owner: `0x${string}`): Promise<bigint> =>
      await chain.runtime(p).client.readContract({
        address: chain.contract(p, "TestUSDC"),
        abi: TestUSDC.abi,
        functionName: "allowance",
        args: [owner, chain.contract(p, "TokenMessengerV2")],
      }),
    /** The wallet path: the two calls the shopper's wallet sends (approve, then the burn). */
    walletCalls: (p: ProfileName, b: CheckoutBurn) => {
      const usdc = chain.contract(p, "TestUSDC");
      const messenger = chain.contract(p, "TokenMessengerV2");
      return {
        approve: {
          to: usdc,
          data: encodeFunctionData({
            abi: TestUSDC.abi,
            functionName: "approve",
            args: [messenger, b.amount],
          }),
        },
        burn: {
          to: messenger,
          data: encodeFunctionData({
            abi: TokenMessengerV2.abi,
            functionName: "depositForBurnWithHook",
            args: [
              b.amount,
              b.destinationDomain,
              toBytes32(b.mintRecipient),
              usdc,
              toBytes32("0x0000000000000000000000000000000000000000"),
              b.maxFee,
              b.minFinalityThreshold,
              b.hookData,
            ],
          }),
        },
      };
    },

    /**
     * Relays the shopper's authorization: CheckoutBurner.burnWithAuthorization from a relayer,
     * once per intent; waits for the receipt (a revert throws ChainRevertError).
     */
    relay: async (p: ProfileName, req: {
      burn: CheckoutBurn;
      window: BurnWindow;
      signature: Hex;
      intentKey: string;
    }): Promise<TxRow> => {
      const { v, r, s, yParity } = parseSignature(req.signature);
      return await chain.send({
        profile: p,
        from: "relayer",
        to: chain.contract(p, "CheckoutBurner"),
        data: encodeFunctionData({
          abi: CheckoutBurner.abi,
          functionName: "burnWithAuthorization",
          args: [burnArg(req.burn), {
            from: req.window.from,
            validAfter: req.window.validAfter,
            validBefore: req.window.validBefore,
            v: Number(v ?? BigInt(yParity + 27)),
            r,
            s,
          }],
        }),
        intentKey: req.intentKey,
      });
    },

    /**
     * The transaction that burned with `from`'s authorization `nonce` (CheckoutBurn), if any:
     * someone else may have submitted the same signed burn first (it burns exactly the same).
     */
    burnedBy: async (p: ProfileName, from: `0x${string}`, nonce: Hex, since: Date) => {
      const rt = chain.runtime(p);
      const address = chain.contract(p, "CheckoutBurner");
      const head = await rt.client.getBlockNumber();
      const floor = await payoutFloor(rt, since, head);
      for (const [fromBlock, toBlock] of payoutLookupWindows(head, floor, PAYOUT_WINDOW)) {
        const [l] = await rt.client.getContractEvents({
          address,
          abi: CheckoutBurner.abi,
          eventName: "CheckoutBurn",
          args: { payer: from, nonce },
          fromBlock,
          toBlock,
        });
        if (l) return { txHash: l.transactionHash as string, blockNumber: l.blockNumber };
      }
      return null;
    },

    /**
     * What a reported transaction burned: `not_found` (no such transaction, or not mined yet),
     * `reverted`, or the DepositForBurn events our configured messenger emitted in it.
     */
    read: async (
      p: ProfileName,
      hash: Hex,
    ): Promise<"not_found" | "reverted" | ReportedBurn[]> => {
      const client = chain.runtime(p).client;
      const receipt = await client.getTransactionReceipt({ hash }).catch(() => null);
      if (!receipt) return "not_found";
      if (receipt.status !== "success") return "reverted";
      const messenger = chain.contract(p, "TokenMessengerV2").toLowerCase();
      const out: ReportedBurn[] = [];
      for (const l of receipt.logs) {
        if (l.address.toLowerCase() !== messenger) continue;
        try {
          const ev = decodeEventLog({ abi: TokenMessengerV2.abi, data: l.data, topics: l.topics });
          if (ev.eventName !== "DepositForBurn") continue;
          out.push({
            txHash: hash,
            blockNumber: receipt.blockNumber,
            from: receipt.from,
            depositor: ev.args.depositor,
            burnToken: ev.args.burnToken,
            amount: ev.args.amount,
            mintRecipient: ev.args.mintRecipient,
            destinationDomain: ev.args.destinationDomain,
            destinationCaller: ev.args.destinationCaller,
            maxFee: ev.args.maxFee,
            minFinalityThreshold: ev.args.minFinalityThreshold,
            hookData: ev.args.hookData,
          });
        } catch { /* another event of the messenger */ }
      }
      return out;
    },
  };
}
