/**
 * The destination side of CCTP v2: receiveMessage from the operator (the mint), whether a nonce
 * was used, which transaction delivered it, and what it minted.
 */
import { decodeEventLog, encodeFunctionData, type Hex } from "viem";
import { MessageTransmitterV2, TokenMessengerV2 } from "./contracts/artifacts/index.ts";
import type { ProfileName } from "./profiles.ts";
import type { TxRow } from "./transactions.repo.ts";
import { PAYOUT_WINDOW, payoutFloor, payoutLookupWindows } from "./payroll.ts";
import { TRANSMITTER_VIEW_ABI } from "./cctp-message.ts";
import type { CctpChain } from "./cctp.ts";

/** Delivers an attested message on `p` from the operator (the mint), once per intent. */
export async function receiveMessage(chain: CctpChain, p: ProfileName, req: {
  message: Hex;
  attestation: Hex;
  intentKey: string;
}): Promise<TxRow> {
  return await chain.send({
    profile: p,
    from: "operator",
    to: chain.contract(p, "MessageTransmitterV2"),
    data: encodeFunctionData({
      abi: MessageTransmitterV2.abi,
      functionName: "receiveMessage",
      args: [req.message, req.attestation],
    }),
    intentKey: req.intentKey,
  });
}

/** Whether the destination already received the message with this nonce. */
export async function messageNonceUsed(
  chain: CctpChain,
  p: ProfileName,
  nonce: Hex,
): Promise<boolean> {
  return (await chain.runtime(p).client.readContract({
    address: chain.contract(p, "MessageTransmitterV2"),
    abi: TRANSMITTER_VIEW_ABI,
    functionName: "usedNonces",
    args: [nonce],
  })) !== 0n;
}

/**
 * The transaction that delivered the message with `nonce` on `p` (MessageReceived), if any.
 * Reads nothing more when the nonce is unused; else newest first in windows from the head
 * back to the transfer's creation (`since`, less an hour; a local node: block 0), so a
 * delivery before this process started is found without reading a remote chain from 0.
 */
export async function receivedBy(
  chain: CctpChain,
  p: ProfileName,
  nonce: Hex,
  since: Date,
  window: bigint = PAYOUT_WINDOW,
) {
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
}

/**
 * What a receive transaction minted (MintAndWithdraw): the amount the recipient got and the
 * fee the destination kept (`feeCollected`), if it minted at all.
 */
export async function mintedBy(chain: CctpChain, p: ProfileName, txHash: Hex) {
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
}
