/**
 * The local attester: what Circle's attestation service answers for a burn, built from the
 * chain. For each `MessageSent` of the burn it fills in what Circle's attester fills in (the
 * nonce, the finality it attests at, the fee it executes) and signs keccak256(message) with as
 * many of its keys as the destination transmitter's `signatureThreshold()`, ordered by
 * increasing signer address, as Circle's `receiveMessage` requires.
 *
 * Fees as Circle charges them: a Fast request (minFinalityThreshold ≤ 1000) whose maxFee
 * covers the fast fee (the source messenger's minimum, or `CCTP_FAST_FEE_BPS`, whichever is
 * more) is attested at once at 1000; anything else waits for the source profile's
 * confirmations and is attested at 2000 with the messenger's minimum fee (`getMinFeeAmount`,
 * 0 where the messenger has no fee switch), never more than the burn's maxFee.
 */
import {
  BaseError,
  concat,
  ContractFunctionRevertedError,
  encodePacked,
  type Hex,
  keccak256,
  type LocalAccount,
  parseEventLogs,
  type PublicClient,
} from "viem";
import { MessageTransmitterV2 } from "./contracts/artifacts/index.ts";
import {
  type AttestedMessage,
  bpsFee,
  CIRCLE_MESSENGER_ABI,
  decodeMessage,
  fillMessage,
  FINALITY_FAST,
  FINALITY_FINALIZED,
  parseBps,
  TRANSMITTER_VIEW_ABI,
} from "./cctp-message.ts";
import {
  type CctpConfig,
  type ContractName,
  profileForDomain,
  type ProfileName,
} from "./profiles.ts";
import type { ChainRuntime } from "./runtime.ts";
import { ChainRevertError, ChainUnavailableError } from "./errors.ts";

export interface AttesterChain {
  readonly opts: { config: { cctp: CctpConfig } };
  ensure(profile: ProfileName): Promise<ChainRuntime>;
  contract(profile: ProfileName, name: ContractName): `0x${string}`;
}

/**
 * The messenger's minimum fee for burning `amount` (Circle's fee switch, `getMinFeeAmount`).
 * A messenger without the function (ours, or Circle's before v2.1) reverts without data: no
 * minimum. A revert with a reason (`Amount too low`) is passed on; so is an RPC failure.
 */
export async function minFeeAmount(
  client: PublicClient,
  messenger: `0x${string}`,
  amount: bigint,
): Promise<bigint> {
  try {
    return await client.readContract({
      address: messenger,
      abi: CIRCLE_MESSENGER_ABI,
      functionName: "getMinFeeAmount",
      args: [amount],
    });
  } catch (e) {
    const reverted = e instanceof BaseError
      ? e.walk((x) => x instanceof ContractFunctionRevertedError) as
        | ContractFunctionRevertedError
        | null
      : null;
    if (!reverted) throw e;
    // No revert data: no such function (the node's text, "execution reverted", says nothing).
    if (!reverted.raw || reverted.raw === "0x") return 0n;
    throw new ChainRevertError(reverted.reason ?? reverted.shortMessage);
  }
}

/** Messages a burn transaction emitted, with the log index the local attester keys on. */
async function sentMessages(chain: AttesterChain, rt: ChainRuntime, txHash: Hex) {
  const receipt = await rt.client.getTransactionReceipt({ hash: txHash }).catch(() => null);
  if (!receipt || receipt.status !== "success") return null;
  const transmitter = chain.contract(rt.profile.name, "MessageTransmitterV2").toLowerCase();
  const logs = parseEventLogs({
    abi: MessageTransmitterV2.abi,
    eventName: "MessageSent",
    logs: receipt.logs.filter((l) => l.address.toLowerCase() === transmitter),
  });
  return {
    blockNumber: receipt.blockNumber,
    messages: logs.map((l) => ({ message: l.args.message as Hex, logIndex: l.logIndex })),
  };
}

/** Null: no such burn (the API's 404). */
export async function attestLocal(
  chain: AttesterChain,
  p: ProfileName,
  txHash: Hex,
): Promise<AttestedMessage[] | null> {
  const rt = await chain.ensure(p);
  if (!rt.attesters.length) throw new ChainUnavailableError("no CCTP attester key is configured");
  const found = await sentMessages(chain, rt, txHash);
  if (!found || found.messages.length === 0) return null;
  const head = await rt.client.getBlockNumber();
  const confirmed = head - found.blockNumber >= BigInt(rt.profile.confirmations);
  const fastBps = parseBps(chain.opts.config.cctp.fastFeeBps) ?? { num: 1n, den: 10_000n };
  const messenger = chain.contract(p, "TokenMessengerV2");
  const out: AttestedMessage[] = [];
  for (const m of found.messages) {
    const sent = decodeMessage(m.message)!;
    const body = sent.decodedMessageBody;
    let finality = FINALITY_FINALIZED;
    let fee = 0n;
    if (body) {
      const amount = BigInt(body.amount);
      const maxFee = BigInt(body.maxFee);
      const floor = await minFeeAmount(rt.client, messenger, amount);
      const fast = floor > bpsFee(amount, fastBps) ? floor : bpsFee(amount, fastBps);
      if (sent.minFinalityThreshold <= FINALITY_FAST && fast <= maxFee) {
        finality = FINALITY_FAST;
        fee = fast;
      } else fee = floor < maxFee ? floor : maxFee;
    }
    const nonce = keccak256(
      encodePacked(["uint32", "bytes32", "uint32"], [sent.sourceDomain, txHash, m.logIndex]),
    );
    if (finality !== FINALITY_FAST && !confirmed) {
      out.push({
        message: "0x",
        eventNonce: nonce,
        attestation: "PENDING",
        decodedMessage: sent,
        cctpVersion: 2,
        status: "pending_confirmations",
      });
      continue;
    }
    const message = fillMessage(m.message, {
      nonce,
      finalityThresholdExecuted: finality,
      feeExecuted: fee,
    });
    out.push({
      message,
      eventNonce: nonce,
      attestation: await sign(chain, rt, sent.destinationDomain, keccak256(message)),
      decodedMessage: decodeMessage(message),
      cctpVersion: 2,
      status: "complete",
    });
  }
  return out;
}

/**
 * `threshold` signatures by keys the destination transmitter has enabled, in increasing
 * signer order (its `receiveMessage` rejects any other order or count).
 */
async function sign(
  chain: AttesterChain,
  source: ChainRuntime,
  destinationDomain: number,
  digest: Hex,
): Promise<Hex> {
  const dest = profileForDomain(destinationDomain);
  if (!dest) {
    throw new ChainUnavailableError(`no chain profile has CCTP domain ${destinationDomain}`);
  }
  const drt = await chain.ensure(dest);
  const transmitter = chain.contract(dest, "MessageTransmitterV2");
  const read = <T>(functionName: string, args: unknown[] = []) =>
    drt.client.readContract({
      address: transmitter,
      abi: TRANSMITTER_VIEW_ABI,
      functionName,
      args,
    } as never) as Promise<T>;
  const threshold = Number(await read<bigint>("signatureThreshold"));
  const keys = new Map<string, LocalAccount>();
  for (const k of [...source.attesters, ...drt.attesters]) keys.set(k.address.toLowerCase(), k);
  const enabled: LocalAccount[] = [];
  for (const k of keys.values()) {
    if (await read<boolean>("isEnabledAttester", [k.address])) enabled.push(k);
  }
  enabled.sort((a, b) => (a.address.toLowerCase() < b.address.toLowerCase() ? -1 : 1));
  if (enabled.length < threshold) {
    throw new ChainUnavailableError(
      `${dest}'s transmitter needs ${threshold} attester signatures; the local attester holds ${enabled.length} enabled key(s) (CCTP_ATTESTER_KEYS)`,
    );
  }
  const signers = enabled.slice(0, threshold);
  return concat(await Promise.all(signers.map((s) => s.sign!({ hash: digest }))));
}
