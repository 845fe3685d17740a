/** Linking our local CCTP messengers to each other (Circle's deployed ones already are). */
import { encodeFunctionData } from "viem";
import { TokenMessengerV2 } from "./contracts/artifacts/index.ts";
import type { ProfileName } from "./profiles.ts";
import { toBytes32 } from "./cctp-message.ts";
import { cctpDomain } from "./cctp-burn.ts";
import type { CctpChain } from "./cctp.ts";

/**
 * Makes our messengers on `a` and `b` trust each other (local deployments only: Circle's
 * contracts are already linked). Each link is an operator intent named by both ends.
 */
export async function linkMessengers(
  chain: CctpChain,
  a: ProfileName,
  b: ProfileName,
): Promise<void> {
  for (const [here, there] of [[a, b], [b, a]] as const) {
    const rt = chain.runtime(here);
    if (rt.profile.contracts.TokenMessengerV2 || !rt.operator) continue;
    const messenger = chain.contract(here, "TokenMessengerV2");
    const remoteMessenger = toBytes32(chain.contract(there, "TokenMessengerV2"));
    const remoteToken = toBytes32(chain.contract(there, "TestUSDC"));
    const domain = cctpDomain(chain, there);
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
      intentKey: `cctp:link:${messenger.toLowerCase()}:${domain}:${remoteMessenger}:${remoteToken}`,
    });
  }
}
