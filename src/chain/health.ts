/** What /readyz and `deno task chain:status` say about the chains: heads, contracts, gas. */
import type { ReadinessCheck } from "../readiness.ts";
import type { ChainRuntime } from "./runtime.ts";

export interface OperatorGas {
  address: `0x${string}`;
  balanceWei: bigint;
  lowWei: bigint;
  low: boolean;
}

/** The operator's native balance against the profile's low mark (null: no operator). */
export async function operatorGas(rt: ChainRuntime): Promise<OperatorGas | null> {
  if (!rt.operator) return null;
  const balance = await rt.client.getBalance({ address: rt.operator.address });
  const lowWei = rt.profile.gas.operatorLowWei;
  return { address: rt.operator.address, balanceWei: balance, lowWei, low: balance < lowWei };
}

export function chainReadiness(runtimes: ChainRuntime[]): ReadinessCheck {
  return {
    name: "chains",
    run: async () => {
      const detail: Record<string, unknown> = {};
      let ok = true;
      for (const rt of runtimes) {
        try {
          const head = await rt.client.getBlockNumber();
          const missing = (["TestUSDC"] as const).filter((c) => !rt.contracts[c]);
          if (missing.length) ok = false;
          // Reported, not failed: a low operator still serves every request that needs no
          // top-up, and taking the instance out of rotation would not refill it.
          const op = await operatorGas(rt);
          detail[rt.profile.name] = {
            ok: missing.length === 0,
            chainId: rt.chainId,
            head: head.toString(),
            local: !!rt.node,
            contracts: rt.contracts,
            ...(missing.length ? { missing } : {}),
            ...(op
              ? {
                operator: {
                  address: op.address,
                  balanceWei: op.balanceWei.toString(),
                  lowWei: op.lowWei.toString(),
                  low: op.low,
                },
              }
              : {}),
            ...(op?.low
              ? { warnings: [`operator ${op.address} is below ${op.lowWei} wei of gas`] }
              : {}),
          };
        } catch (e) {
          ok = false;
          detail[rt.profile.name] = {
            ok: false,
            chainId: rt.chainId,
            error: String(e).slice(0, 200),
          };
        }
      }
      return { ok, detail };
    },
  };
}
