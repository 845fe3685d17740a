/**
 * CCTP v2 through the sender: burn on a source chain (approve + depositForBurn[WithHook] from a
 * managed wallet), the attestation (our local attester, or Circle's API when configured), and
 * receiveMessage on the destination. The same calls work against Circle's deployed contracts:
 * only the addresses (configuration) and the attestation source differ.
 */
import {
  concat,
  decodeEventLog,
  encodeFunctionData,
  encodePacked,
  type Hex,
  keccak256,
  pad,
  parseEventLogs,
  size,
  slice,
  toHex,
} from "viem";
import { MessageTransmitterV2, TestUSDC, TokenMessengerV2 } from "./contracts/artifacts/index.ts";
import type { ContractName, ProfileName } from "./profiles.ts";
import type { Signer, TxRequest } from "./sender.ts";
import type { TxRow } from "./transactions.repo.ts";
import type { ChainRuntime } from "./runtime.ts";
import { ChainUnavailableError } from "./errors.ts";
import { PAYOUT_WINDOW, payoutFloor, payoutLookupWindows } from "./payroll.ts";

/** Standard transfer: attested once the source chain has finalized the burn (CCTP v2's 2000). */
export const FINALITY_FINALIZED = 2000;

export interface CctpChain {
  runtime(profile: ProfileName): ChainRuntime;
  ensure(profile: ProfileName): Promise<ChainRuntime>;
  contract(profile: ProfileName, name: ContractName): `0x${string}`;
  send(req: TxRequest, wait?: { timeoutMs?: number }): Promise<TxRow>;
}

/** A CCTP v2 message, decoded (header and burn message body). */
export interface DecodedMessage {
  version: number;
  sourceDomain: number;
  destinationDomain: number;
  nonce: Hex;
  sender: Hex;
  recipient: Hex;
  destinationCaller: Hex;
  minFinalityThreshold: number;
  finalityThresholdExecuted: number;
  messageBody: Hex;
  decodedMessageBody: {
    burnToken: Hex;
    mintRecipient: Hex;
    amount: string;
    messageSender: Hex;
    maxFee: string;
    feeExecuted: string;
    expirationBlock: string;
    hookData: Hex;
  } | null;
}

/** One entry of the attestation API's `messages` (GET /v2/messages/{sourceDomain}). */
export interface AttestedMessage {
  message: Hex;
  eventNonce: Hex;
  attestation: Hex | "PENDING";
  decodedMessage: DecodedMessage | null;
  cctpVersion: 2;
  status: "complete" | "pending_confirmations";
}

export const toBytes32 = (address: `0x${string}`): Hex => pad(address, { size: 32 });
export const fromBytes32 = (b: Hex): `0x${string}` => slice(b, 12, 32) as `0x${string}`;

const u32 = (m: Hex, at: number) => Number(BigInt(slice(m, at, at + 4)));

export function decodeMessage(message: Hex): DecodedMessage | null {
  if (size(message) < 148) return null;
  const body = size(message) > 148 ? slice(message, 148) : "0x";
  const b = body as Hex;
  const decodedMessageBody = size(b) >= 228
    ? {
      burnToken: slice(b, 4, 36),
      mintRecipient: slice(b, 36, 68),
      amount: BigInt(slice(b, 68, 100)).toString(),
      messageSender: slice(b, 100, 132),
      maxFee: BigInt(slice(b, 132, 164)).toString(),
      feeExecuted: BigInt(slice(b, 164, 196)).toString(),
      expirationBlock: BigInt(slice(b, 196, 228)).toString(),
      hookData: (size(b) > 228 ? slice(b, 228) : "0x") as Hex,
    }
    : null;
  return {
    version: u32(message, 0),
    sourceDomain: u32(message, 4),
    destinationDomain: u32(message, 8),
    nonce: slice(message, 12, 44),
    sender: slice(message, 44, 76),
    recipient: slice(message, 76, 108),
    destinationCaller: slice(message, 108, 140),
    minFinalityThreshold: u32(message, 140),
    finalityThresholdExecuted: u32(message, 144),
    messageBody: b,
    decodedMessageBody,
  };
}

/** The payment reference a burn's hook data carries (UTF-8), if any. */
export function hookText(hookData: Hex): string | null {
  if (hookData === "0x") return null;
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(
      Uint8Array.from((hookData.slice(2).match(/../g) ?? []).map((h) => parseInt(h, 16))),
    );
  } catch {
    return null;
  }
}

export function cctpOps(chain: CctpChain) {
  const domainOf = (p: ProfileName) => {
    const d = chain.runtime(p).profile.cctpDomain;
    if (d === undefined) throw new ChainUnavailableError(`${p} has no CCTP domain`);
    return d;
  };

  /** Messages a burn transaction emitted, with the log index the local attester keys on. */
  const sentMessages = async (p: ProfileName, txHash: Hex) => {
    const rt = chain.runtime(p);
    const receipt = await rt.client.getTransactionReceipt({ hash: txHash }).catch(() => null);
    if (!receipt || receipt.status !== "success") return null;
    const transmitter = chain.contract(p, "MessageTransmitterV2").toLowerCase();
    const logs = parseEventLogs({
      abi: MessageTransmitterV2.abi,
      eventName: "MessageSent",
      logs: receipt.logs.filter((l) => l.address.toLowerCase() === transmitter),
    });
    return {
      blockNumber: receipt.blockNumber,
      messages: logs.map((l) => ({ message: l.args.message as Hex, logIndex: l.logIndex })),
    };
  };

  return {
    domain: domainOf,

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
      maxFee?: bigint;
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
        FINALITY_FINALIZED,
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

    /**
     * The local attester: what Circle's service answers for a burn transaction, built from the
     * chain. The nonce is derived from (domain, tx, log index), so asking again yields the same
     * message; the attestation is the attester's signature over keccak256(message). Until the
     * burn has the profile's confirmations, the entry is `pending_confirmations`. Null: no such
     * burn (the API's 404).
     */
    attest: async (p: ProfileName, txHash: Hex): Promise<AttestedMessage[] | null> => {
      const rt = await chain.ensure(p);
      if (!rt.attester) throw new ChainUnavailableError("no CCTP attester key is configured");
      const found = await sentMessages(p, txHash);
      if (!found || found.messages.length === 0) return null;
      const head = await rt.client.getBlockNumber();
      const confirmed = head - found.blockNumber >= BigInt(rt.profile.confirmations);
      const out: AttestedMessage[] = [];
      for (const m of found.messages) {
        const nonce = keccak256(
          encodePacked(["uint32", "bytes32", "uint32"], [domainOf(p), txHash, m.logIndex]),
        );
        const message = concat([
          slice(m.message, 0, 12),
          nonce,
          slice(m.message, 44, 144),
          toHex(FINALITY_FINALIZED, { size: 4 }),
          size(m.message) > 148 ? slice(m.message, 148) : "0x",
        ]);
        out.push({
          message: confirmed ? message : "0x",
          eventNonce: nonce,
          attestation: confirmed
            ? await rt.attester.sign!({ hash: keccak256(message) })
            : "PENDING",
          decodedMessage: decodeMessage(confirmed ? message : m.message),
          cctpVersion: 2,
          status: confirmed ? "complete" : "pending_confirmations",
        });
      }
      return out;
    },

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
        abi: MessageTransmitterV2.abi,
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

    /** The amount a receive transaction minted to its recipient (MintAndWithdraw), if any. */
    minted: async (p: ProfileName, txHash: Hex) => {
      const receipt = await chain.runtime(p).client.getTransactionReceipt({ hash: txHash });
      const messenger = chain.contract(p, "TokenMessengerV2").toLowerCase();
      for (const l of receipt.logs) {
        if (l.address.toLowerCase() !== messenger) continue;
        try {
          const ev = decodeEventLog({ abi: TokenMessengerV2.abi, data: l.data, topics: l.topics });
          if (ev.eventName === "MintAndWithdraw") {
            return { recipient: ev.args.mintRecipient, amount: ev.args.amount };
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
