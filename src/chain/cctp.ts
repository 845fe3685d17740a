/**
 * CCTP v2 through the sender: burn on a source chain (approve + depositForBurn[WithHook] from a
 * managed wallet, with the maxFee and finality the transfer chose), the local attester
 * (cctp-attester.ts), and receiveMessage on the destination. The same calls work against
 * Circle's deployed contracts: only the addresses (configuration) and the attestation source
 * differ. The message format and fee arithmetic are in cctp-message.ts.
 */
import { decodeEventLog, encodeFunctionData, type Hex } from "viem";
import { MessageTransmitterV2, TestUSDC, TokenMessengerV2 } from "./contracts/artifacts/index.ts";
import type { ContractName, ProfileName } from "./profiles.ts";
import type { Signer, TxRequest } from "./sender.ts";
import type { TxRow } from "./transactions.repo.ts";
import type { ChainRuntime } from "./runtime.ts";
import { ChainUnavailableError } from "./errors.ts";
import { PAYOUT_WINDOW, payoutFloor, payoutLookupWindows } from "./payroll.ts";
import { type AttesterChain, attestLocal, minFeeAmount } from "./cctp-attester.ts";
import { checkoutBurnOps } from "./cctp-checkout.ts";
import {
  type AttestedMessage,
  FINALITY_FINALIZED,
  toBytes32,
  TRANSMITTER_VIEW_ABI,
} from "./cctp-message.ts";

export * from "./cctp-message.ts";
export {
  burnNonce,
  type BurnWindow,
  type CheckoutBurn,
  type ReportedBurn,
} from "./cctp-checkout.ts";

export interface CctpChain extends AttesterChain {
  runtime(profile: ProfileName): ChainRuntime;
  ensure(profile: ProfileName): Promise<ChainRuntime>;
  contract(profile: ProfileName, name: ContractName): `0x${string}`;
  send(req: TxRequest, wait?: { timeoutMs?: number }): Promise<TxRow>;
}

export function cctpOps(chain: CctpChain) {
  const domainOf = (p: ProfileName) => {
    const d = chain.runtime(p).profile.cctpDomain;
    if (d === undefined) throw new ChainUnavailableError(`${p} has no CCTP domain`);
    return d;
  };

  return {
    domain: domainOf,

    /** Cross-chain checkout from the shopper's own wallet (cctp-checkout.ts). */
    checkout: checkoutBurnOps(chain),

    /**
     * Burns `amount` of the wallet's USDC on `p` for `mintRecipient` on `destination`: the
     * approval and the burn are intents (`<key>:approve`, `<key>:burn`), so a retry after a
     * crash finds them instead of burning twice. Waits for the burn's receipt.
     */
    burn: async (p: ProfileName, req: {
      from: Signer;
      amount: bigint;
      destination: ProfileName;
      mintRecipient: `0x${string}`;
      hookData: Hex;
      /** The most the destination may keep as fee (the messenger refuses less than its minimum). */
      maxFee?: bigint;
      /** 2000 standard (default), 1000 fast. */
      minFinalityThreshold?: number;
      intentKey: string;
    }): Promise<TxRow> => {
      await chain.ensure(p);
      const messenger = chain.contract(p, "TokenMessengerV2");
      const usdc = chain.contract(p, "TestUSDC");
      await chain.send({
        profile: p,
        from: req.from,
        to: usdc,
        data: encodeFunctionData({
          abi: TestUSDC.abi,
          functionName: "approve",
          args: [messenger, req.amount],
        }),
        intentKey: `${req.intentKey}:approve`,
      });
      const common = [
        req.amount,
        domainOf(req.destination),
        toBytes32(req.mintRecipient),
        usdc,
        toBytes32("0x0000000000000000000000000000000000000000"),
        req.maxFee ?? 0n,
        req.minFinalityThreshold ?? FINALITY_FINALIZED,
      ] as const;
      return await chain.send({
        profile: p,
        from: req.from,
        to: messenger,
        data: req.hookData === "0x"
          ? encodeFunctionData({
            abi: TokenMessengerV2.abi,
            functionName: "depositForBurn",
            args: common,
          })
          : encodeFunctionData({
            abi: TokenMessengerV2.abi,
            functionName: "depositForBurnWithHook",
            args: [...common, req.hookData],
          }),
        intentKey: `${req.intentKey}:burn`,
      });
    },

    /** The local attester's answer for a burn on `p` (cctp-attester.ts); null: no such burn. */
    attest: (p: ProfileName, txHash: Hex): Promise<AttestedMessage[] | null> =>
      attestLocal(chain, p, txHash),

    /** The source messenger's minimum fee for burning `amount` (0 without a fee switch). */
    minFee: async (p: ProfileName, amount: bigint): Promise<bigint> =>
      await minFeeAmount(
        (await chain.ensure(p)).client,
        chain.contract(p, "TokenMessengerV2"),
        amount,
      ),

    /** Delivers an attested message on `p` from the operator (the mint), once per intent. */
    receive: async (p: ProfileName, req: {
      message: Hex;
      attestation: Hex;
      intentKey: string;
    }): Promise<TxRow> =>
      await chain.send({
        profile: p,
        from: "operator",
        to: chain.contract(p, "MessageTransmitterV2"),
        data: encodeFunctionData({
          abi: MessageTransmitterV2.abi,
          functionName: "receiveMessage",
          args: [req.message, req.attestation],
        }),
        intentKey: req.intentKey,
      }),

    /** Whether the destination already received the message with this nonce. */
    nonceUsed: async (p: ProfileName, nonce: Hex): Promise<boolean> =>
      (await chain.runtime(p).client.readContract({
        address: chain.contract(p, "MessageTransmitterV2"),
        abi: TRANSMITTER_VIEW_ABI,
        functionName: "usedNonces",
        args: [nonce],
      })) !== 0n,

    /**
     * The transaction that delivered the message with `nonce` on `p` (MessageReceived), if any.
     * Reads nothing more when the nonce is unused; else newest first in windows from the head
     * back to the transfer's creation (`since`, less an hour; a local node: block 0), so a
     * delivery before this process started is found without reading a remote chain from 0.
     */
    receivedBy: async (
      p: ProfileName,
      nonce: Hex,
      since: Date,
      window: bigint = PAYOUT_WINDOW,
    ) => {
      const rt = chain.runtime(p);
      const address = chain.contract(p, "MessageTransmitterV2");
      const used = await rt.client.readContract({
        address,
        abi: MessageTransmitterV2.abi,
        functionName: "usedNonces",
        args: [nonce],
      });
      if (used === 0n) return null;
      const head = await rt.client.getBlockNumber();
      const read = async ([from, to]: [bigint, bigint]) =>
        (await rt.client.getContractEvents({
          address,
          abi: MessageTransmitterV2.abi,
          eventName: "MessageReceived",
          args: { nonce },
          fromBlock: from,
          toBlock: to,
        }))[0];
      const first = payoutLookupWindows(head, 0n, window)[0];
      let l = await read(first);
      if (!l && first[0] > 0n) {
        const floor = await payoutFloor(rt, since, first[0] - 1n);
        for (const w of payoutLookupWindows(first[0] - 1n, floor, window)) {
          l = await read(w);
          if (l) break;
        }
      }
      return l ? { txHash: l.transactionHash as string, blockNumber: l.blockNumber } : null;
    },

    /**
     * What a receive transaction minted (MintAndWithdraw): the amount the recipient got and the
     * fee the destination kept (`feeCollected`), if it minted at all.
     */
    minted: async (p: ProfileName, txHash: Hex) => {
      const receipt = await chain.runtime(p).client.getTransactionReceipt({ hash: txHash });
      const messenger = chain.contract(p, "TokenMessengerV2").toLowerCase();
      for (const l of receipt.logs) {
        if (l.address.toLowerCase() !== messenger) continue;
        try {
          const ev = decodeEventLog({ abi: TokenMessengerV2.abi, data: l.data, topics: l.topics });
          if (ev.eventName === "MintAndWithdraw") {
            return {
              recipient: ev.args.mintRecipient,
              amount: ev.args.amount,
              fee: ev.args.feeCollected,
            };
          }
        } catch { /* another event */ }
      }
      return null;
    },

    /**
     * Makes our messengers on `a` and `b` trust each other (local deployments only: Circle's
     * contracts are already linked). Each link is an operator intent named by both ends.
     */
    link: async (a: ProfileName, b: ProfileName): Promise<void> => {
      for (const [here, there] of [[a, b], [b, a]] as const) {
        const rt = chain.runtime(here);
        if (rt.profile.contracts.TokenMessengerV2 || !rt.operator) continue;
        const messenger = chain.contract(here, "TokenMessengerV2");
        const remoteMessenger = toBytes32(chain.contract(there, "TokenMessengerV2"));
        const remoteToken = toBytes32(chain.contract(there, "TestUSDC"));
        const domain = domainOf(there);
        const [current, token] = await Promise.all([
          rt.client.readContract({
            address: messenger,
            abi: TokenMessengerV2.abi,
            functionName: "remoteTokenMessengers",
            args: [domain],
          }),
          rt.client.readContract({
            address: messenger,
            abi: TokenMessengerV2.abi,
            functionName: "remoteTokens",
            args: [domain],
          }),
        ]);
        if (current === remoteMessenger && token === remoteToken) continue;
        await chain.send({
          profile: here,
          from: "operator",
          to: messenger,
          data: encodeFunctionData({
            abi: TokenMessengerV2.abi,
            functionName: "linkRemote",
            args: [domain, remoteMessenger, remoteToken],
          }),
          intentKey:
            `cctp:link:${messenger.toLowerCase()}:${domain}:${remoteMessenger}:${remoteToken}`,
        });
      }
    },
  };
}
