/**
 * The attestation service, in Circle's API shape: `CCTP_ATTESTATION_API_URL` (Circle's Iris, or
 * our own attester's base URL) or, unset, the local attester in-process. Two calls, as Circle's
 * SDK makes them: the burn's attested message (`/v2/messages/{sourceDomain}?transactionHash=`)
 * and the fee tiers (`/v2/burn/USDC/fees/{sourceDomain}/{destinationDomain}`). And the fee
 * quote a transfer is created with.
 */
import type { Deps } from "../../deps.ts";
import { DomainError } from "../../errors.ts";
import {
  type AttestedMessage,
  bpsFee,
  decodeMessage,
  type FeeTier,
  grossForNet,
  parseBps,
  type ProfileName,
} from "../../chain/index.ts";
import { formatUsdc } from "../../money.ts";
import * as repo from "./bridge.repo.ts";
import { finalityOf, profileOf, type TransferSpeed } from "./bridge.rules.ts";

const API_TIMEOUT_MS = 10_000;

export interface Attestation {
  /** `complete`, or the wait's last answer: `not_found`, `pending_confirmations`, … */
  state: string;
  message?: `0x${string}`;
  attestation?: `0x${string}`;
  nonce?: string;
}

/** The attestation of the transfer's burn: GET /v2/messages/{sourceDomain}?transactionHash=. */
export async function fetchAttestation(deps: Deps, t: repo.BridgeRow): Promise<Attestation> {
  const api = deps.config.chain.cctp.attestationApiUrl;
  let messages: AttestedMessage[] | null;
  if (api) {
    const url = `${api}/v2/messages/${t.sourceDomain}?transactionHash=${t.burnTxHash}`;
    const res = await fetch(url, { signal: AbortSignal.timeout(API_TIMEOUT_MS) });
    if (res.status === 404) {
      await res.body?.cancel();
      messages = null;
    } else if (!res.ok) {
      await res.body?.cancel();
      throw new Error(`attestation API answered ${res.status}`);
    } else {
      messages = ((await res.json()) as { messages?: AttestedMessage[] }).messages ?? [];
    }
  } else {
    messages = await deps.chain.cctp.attest(
      profileOf(t.fromChain),
      t.burnTxHash as `0x${string}`,
    );
  }
  const m = messages?.[0];
  if (!m) return { state: "not_found" };
  if (m.status !== "complete" || !m.attestation || m.attestation === "PENDING") {
    return { state: m.status || "pending" };
  }
  return {
    state: "complete",
    message: m.message,
    attestation: m.attestation,
    nonce: decodeMessage(m.message)?.nonce ?? String(m.eventNonce),
  };
}

/**
 * The local attester's fee tiers: Fast at `CCTP_FAST_FEE_BPS`, Standard free (bps), each a JSON
 * number as Circle's API answers (`CCTP_FAST_FEE_BPS` has at most 4 decimals: exact as a number).
 */
export function localFeeTiers(deps: Deps): FeeTier[] {
  return [
    { finalityThreshold: 1000, minimumFee: Number(deps.config.chain.cctp.fastFeeBps) },
    { finalityThreshold: 2000, minimumFee: 0 },
  ];
}

/** GET /v2/burn/USDC/fees/{sourceDomain}/{destinationDomain}: `[{ finalityThreshold, minimumFee }]`. */
export async function feeTiers(
  deps: Deps,
  sourceDomain: number,
  destinationDomain: number,
): Promise<FeeTier[]> {
  const api = deps.config.chain.cctp.attestationApiUrl;
  if (!api) return localFeeTiers(deps);
  const res = await fetch(`${api}/v2/burn/USDC/fees/${sourceDomain}/${destinationDomain}`, {
    signal: AbortSignal.timeout(API_TIMEOUT_MS),
  });
  if (!res.ok) {
    await res.body?.cancel();
    throw new Error(`fee API answered ${res.status}`);
  }
  const body = await res.json() as unknown;
  const tiers = Array.isArray(body) ? body : (body as { data?: unknown })?.data;
  if (
    !Array.isArray(tiers) ||
    !tiers.every((t) => typeof t?.finalityThreshold === "number" && parseBps(t.minimumFee))
  ) {
    throw new Error("fee API answered in an unknown shape");
  }
  return tiers as FeeTier[];
}

export interface Quote {
  burnAmount: bigint;
  maxFee: bigint;
  minFinalityThreshold: number;
}

/**
 * What a transfer burns and the maxFee it allows: the fee is the source messenger's minimum
 * (`getMinFeeAmount`, Circle's fee switch) or the attestation service's tier for the speed,
 * whichever is more. `covers: "gross"` burns `amount` and the recipient gets it less the fee
 * (a plain transfer, a withdrawal); `"net"` burns enough that `amount` arrives (a cross-chain
 * checkout: the merchant is paid in full, the shopper pays the fee). A Fast quote needs the
 * fee tiers; a Standard one goes on without them (its fee is the on-chain minimum).
 */
export async function quote(deps: Deps, req: {
  from: ProfileName;
  to: ProfileName;
  amount: bigint;
  speed: TransferSpeed;
  covers: "gross" | "net";
}): Promise<Quote> {
  const from = deps.chain.profileConfig(req.from).cctpDomain!;
  const to = deps.chain.profileConfig(req.to).cctpDomain!;
  const finality = finalityOf(req.speed);
  let tiers: FeeTier[] = [];
  try {
    tiers = await feeTiers(deps, from, to);
  } catch (e) {
    if (req.speed === "fast") {
      throw new DomainError("chain_unavailable", {
        hint: `the attestation service's fees could not be read: ${(e as Error).message}`,
      });
    }
    deps.log.warn("CCTP fee tiers unavailable; standard fee from the chain only", {
      error: String(e),
    });
  }
  const tier = tiers.find((t) => t.finalityThreshold === finality);
  if (req.speed === "fast" && !tier) {
    throw new DomainError("chain_unavailable", { hint: "no Fast Transfer on this route" });
  }
  const bps = tier ? parseBps(tier.minimumFee) : null;
  const feeOf = async (gross: bigint) => {
    const floor = await deps.chain.cctp.minFee(req.from, gross).catch((e) => {
      if ((e as DomainError).code === "chain_reverted") return gross; // "Amount too low"
      throw e;
    });
    const byTier = bps ? bpsFee(gross, bps) : 0n;
    return floor > byTier ? floor : byTier;
  };
  const { gross, fee } = req.covers === "net"
    ? await grossForNet(req.amount, feeOf)
    : { gross: req.amount, fee: await feeOf(req.amount) };
  // Circle's messenger refuses a maxFee that is not below the amount.
  if (fee >= gross) {
    throw new DomainError("bridge_amount_below_fee", {
      hint: `The bridge fee is ${formatUsdc(fee, { decimals: "fixed" })} USDC.`,
    });
  }
  return { burnAmount: gross, maxFee: fee, minFinalityThreshold: finality };
}
