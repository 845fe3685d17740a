/** Our batch-settlement contracts at the standard addresses on a local node (anvil_setCode). */
import { encodeDeployData, type Hex, type PublicClient } from "viem";
import { X402BatchSettlement, X402Erc3009Collector } from "./contracts/artifacts/index.ts";
import type { ChainRuntime } from "./runtime.ts";
import type { Logger } from "../log.ts";
import { type Address, batchAddresses } from "./channels.defs.ts";

/**
 * On a local node, puts our contracts' code at the batch-settlement addresses (anvil_setCode):
 * the runtime code is what their constructors return (an eth_call of the creation code, so no
 * transaction and no nonce), the collector's immutable settlement address included. Neither
 * needs constructor-written storage (EIP712 rebuilds its separator for the address it runs at).
 * Replaced only when it differs, so a restarted node keeps its channels. On a configured chain
 * it only warns when nothing is deployed there.
 */
export async function placeBatchSettlement(rt: ChainRuntime, log: Logger): Promise<void> {
  if (rt.profile.kind !== "settlement") return;
  const { settlement, collector } = batchAddresses(rt.profile);
  const client = rt.client as PublicClient;
  if (!rt.node) {
    const code = await client.getCode({ address: settlement }).catch(() => undefined);
    if (!code || code === "0x") {
      log.warn("no x402 batch-settlement contract: the scheme is not offered", {
        chain: rt.profile.name,
        address: settlement,
        fix: `set ${rt.profile.envPrefix}_BATCH_SETTLEMENT_ADDRESS to its deployment`,
      });
    }
    return;
  }
  const creations: [Address, Hex][] = [
    [
      settlement,
      encodeDeployData({
        abi: X402BatchSettlement.abi,
        bytecode: X402BatchSettlement.bytecode as Hex,
      }),
    ],
    [
      collector,
      encodeDeployData({
        abi: X402Erc3009Collector.abi,
        bytecode: X402Erc3009Collector.bytecode as Hex,
        args: [settlement],
      }),
    ],
  ];
  const request = client.request as (a: { method: string; params: unknown[] }) => Promise<unknown>;
  for (const [address, data] of creations) {
    const runtime = await request({ method: "eth_call", params: [{ data }, "latest"] }) as Hex;
    const current = await client.getCode({ address });
    if (current?.toLowerCase() === runtime.toLowerCase()) continue;
    await request({ method: "anvil_setCode", params: [address, runtime] });
    log.info("x402 batch-settlement contract placed", { chain: rt.profile.name, address });
  }
}
