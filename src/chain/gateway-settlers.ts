/**
 * The gateway vault's settlers: who may submit payment authorizations to it besides its operator
 * (GatewayVault.sol). Every relayer of the pool must be one, or our settlements revert; and a
 * vault where anyone may submit lets a payer take, with an authorization of its own, a balance
 * promised to charges accepted and not yet settled (docs/decisions.md, "Settlers").
 */
import {
  BaseError,
  ContractFunctionRevertedError,
  ContractFunctionZeroDataError,
  encodeFunctionData,
} from "viem";
import type { Logger } from "../log.ts";
import { GatewayVault } from "./contracts/artifacts/index.ts";
import type { ChainRuntime } from "./runtime.ts";
import type { TxSender } from "./sender.ts";

/**
 * The vault takes payment authorizations from its operator and its settlers only: every relayer
 * of the pool must be one (a pool grown since the vault was deployed: the operator adds them).
 * A vault from before settlers (anyone could submit) is left as it is, with a warning: the
 * batched option is not offered on it off a local node (x402.batched.ts `batchedSafe`).
 */
export async function authorizeSettlers(
  rt: Pick<ChainRuntime, "profile" | "client" | "contracts" | "relayers" | "operator">,
  sender: TxSender,
  log: Logger,
): Promise<void> {
  const vault = rt.contracts.GatewayVault;
  if (!vault || !rt.operator) return;
  const missing = await missingSettlers(rt, vault);
  if (missing === null) {
    log.warn("the gateway vault predates settlers: anyone may submit its authorizations", {
      chain: rt.profile.name,
      vault,
      replaceWith: `deno task contracts:deploy --network ${rt.profile.name} --force`,
    });
    return;
  }
  if (!missing.length) return;
  const operator = await rt.client.readContract({
    address: vault,
    abi: GatewayVault.abi,
    functionName: "operator",
  });
  if (operator.toLowerCase() !== rt.operator.address.toLowerCase()) {
    log.warn("relayers are not settlers of the gateway vault, whose operator is not ours", {
      chain: rt.profile.name,
      vault,
      operator,
      missing,
    });
    return;
  }
  await sender.send({
    profile: rt.profile.name,
    from: "operator",
    to: vault,
    data: encodeFunctionData({
      abi: GatewayVault.abi,
      functionName: "setSettlers",
      args: [missing, true],
    }),
    intentKey: `gateway:settlers:${vault.toLowerCase()}:${missing.join(",").toLowerCase()}`,
  });
  log.info("relayers allowed to settle on the gateway vault", {
    chain: rt.profile.name,
    vault,
    added: missing.length,
  });
}

/**
 * The relayers of the pool that may not submit authorizations to `vault`; null when the vault
 * has no settlers at all (it predates them: anyone may submit). A node that does not answer
 * throws: that is not an answer about the vault.
 */
export async function missingSettlers(
  rt: Pick<ChainRuntime, "client" | "relayers">,
  vault: `0x${string}`,
): Promise<`0x${string}`[] | null> {
  const read = async <T>(fn: () => Promise<T>): Promise<T | null> => {
    try {
      return await fn();
    } catch (e) {
      if (noSuchFunction(e)) return null;
      throw e;
    }
  };
  // The operator's getter tells a vault with settlers from one without (as with no pool).
  const operator = await read(() =>
    rt.client.readContract({ address: vault, abi: GatewayVault.abi, functionName: "operator" })
  );
  if (operator === null) return null;
  const out: `0x${string}`[] = [];
  for (const r of rt.relayers) {
    const allowed = await read(() =>
      rt.client.readContract({
        address: vault,
        abi: GatewayVault.abi,
        functionName: "isSettler",
        args: [r.address],
      })
    );
    if (allowed === null) return null;
    if (!allowed) out.push(r.address);
  }
  return out;
}

/** A call the contract refused or answered with nothing: it has no such function. */
function noSuchFunction(e: unknown): boolean {
  return e instanceof BaseError &&
    !!e.walk((c) =>
      c instanceof ContractFunctionRevertedError || c instanceof ContractFunctionZeroDataError
    );
}
