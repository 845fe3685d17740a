/**
 * Burning USDC on a CCTP v2 source chain from a managed wallet (approve + depositForBurn[WithHook],
 * each an intent) and the messenger's minimum fee; a profile's CCTP domain.
 */
import { encodeFunctionData } from "viem";
import { TestUSDC, TokenMessengerV2 } from "./contracts/artifacts/index.ts";
import type { Hex } from "viem";
import type { ProfileName } from "./profiles.ts";
import type { Signer } from "./sender.ts";
import type { TxRow } from "./transactions.repo.ts";
import { ChainUnavailableError } from "./errors.ts";
import { minFeeAmount } from "./cctp-attester.ts";
import { FINALITY_FINALIZED, toBytes32 } from "./cctp-message.ts";
import type { CctpChain } from "./cctp.ts";

/** A profile's CCTP domain (configuration); a chain without one cannot bridge. */
export function cctpDomain(chain: Pick<CctpChain, "runtime">, p: ProfileName): number {
  const d = chain.runtime(p).profile.cctpDomain;
  if (d === undefined) throw new ChainUnavailableError(`${p} has no CCTP domain`);
  return d;
}

/**
 * Burns `amount` of the wallet's USDC on `p` for `mintRecipient` on `destination`: the
 * approval and the burn are intents (`<key>:approve`, `<key>:burn`), so a retry after a
 * crash finds them instead of burning twice. Waits for the burn's receipt.
 *
 * The approval is exact, so one wallet's burns must not interleave (the caller holds the
 * wallet's USDC claim across this call): another transfer's approval would replace this one's.
 * After a crash between approve and burn, another transfer of the wallet may have approved and
 * burned meanwhile; the retry then finds its approval spent and approves again
 * (`<key>:approve:2`, …), rather than sending a burn that reverts.
 */
export async function burnUsdc(chain: CctpChain, p: ProfileName, req: {
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
}): Promise<TxRow> {
  await chain.ensure(p);
  const messenger = chain.contract(p, "TokenMessengerV2");
  const usdc = chain.contract(p, "TestUSDC");
  const burnSent = await chain.intent(p, `${req.intentKey}:burn`);
  if (!burnSent || burnSent.status === "failed") {
    await approveOnce(chain, p, { ...req, usdc, messenger });
  }
  const common = [
    req.amount,
    cctpDomain(chain, req.destination),
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
}

/**
 * The approval of a burn not yet sent: the first `<key>:approve` (or the one in flight), or,
 * when every approval so far is mined and the allowance no longer covers the burn (another
 * burn of the wallet spent it after a crash), the next `<key>:approve:<n>`.
 */
async function approveOnce(chain: CctpChain, p: ProfileName, req: {
  from: Signer;
  amount: bigint;
  intentKey: string;
  usdc: `0x${string}`;
  messenger: `0x${string}`;
}): Promise<void> {
  for (let n = 1;; n++) {
    const intentKey = n === 1 ? `${req.intentKey}:approve` : `${req.intentKey}:approve:${n}`;
    const earlier = await chain.intent(p, intentKey);
    if (earlier?.status === "confirmed") {
      const allowance = await chain.runtime(p).client.readContract({
        address: req.usdc,
        abi: TestUSDC.abi,
        functionName: "allowance",
        args: [earlier.fromAddress as `0x${string}`, req.messenger],
      });
      if (allowance >= req.amount) return;
      continue;
    }
    await chain.send({
      profile: p,
      from: req.from,
      to: req.usdc,
      data: encodeFunctionData({
        abi: TestUSDC.abi,
        functionName: "approve",
        args: [req.messenger, req.amount],
      }),
      intentKey,
    });
    return;
  }
}

/** The source messenger's minimum fee for burning `amount` (0 without a fee switch). */
export async function minBurnFee(
  chain: CctpChain,
  p: ProfileName,
  amount: bigint,
): Promise<bigint> {
  return await minFeeAmount(
    (await chain.ensure(p)).client,
    chain.contract(p, "TokenMessengerV2"),
    amount,
  );
}
