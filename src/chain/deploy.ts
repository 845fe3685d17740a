/**
 * Our contracts on a chain. A local node gets them deployed once (through the sender, by the
 * operator) and their addresses stored in chain_contracts; they are redeployed when the node lost
 * them, or, for contracts that hold no funds, when the compiled artifact changed. A configured
 * chain uses configured addresses.
 */
import { encodeDeployData, type Hex } from "viem";
import type { Sql } from "../db/client.ts";
import type { Logger } from "../log.ts";
import { EscrowVault, PaymentRouter, StreamVault, TestUSDC } from "./contracts/artifacts/index.ts";
import type { ChainRuntime } from "./runtime.ts";
import type { TxSender } from "./sender.ts";
import type { ContractName } from "./profiles.ts";
import * as contractsRepo from "./contracts.repo.ts";

export const ARTIFACTS = { TestUSDC, PaymentRouter, StreamVault, EscrowVault } as const;

/**
 * Deployment order; a contract is redeployed when one it depends on was. A contract that holds
 * funds (the token's balances, a vault's locked deposits) is kept while its code is where we
 * recorded it, even when rebuilt from other sources: a new deployment would strand everything
 * held by the old one (`contracts:deploy --force` replaces it on purpose).
 */
export const PLAN: { name: ContractName; dependsOn: ContractName[]; holdsFunds: boolean }[] = [
  { name: "TestUSDC", dependsOn: [], holdsFunds: true },
  { name: "PaymentRouter", dependsOn: ["TestUSDC"], holdsFunds: false },
  { name: "StreamVault", dependsOn: ["TestUSDC"], holdsFunds: true },
  { name: "EscrowVault", dependsOn: ["TestUSDC"], holdsFunds: true },
];

function deployData(name: ContractName, rt: ChainRuntime, operator: `0x${string}`): Hex {
  switch (name) {
    case "TestUSDC":
      return encodeDeployData({ abi: TestUSDC.abi, bytecode: TestUSDC.bytecode as Hex });
    case "PaymentRouter":
      return encodeDeployData({
        abi: PaymentRouter.abi,
        bytecode: PaymentRouter.bytecode as Hex,
        args: [rt.contracts.TestUSDC!, operator, operator],
      });
    case "StreamVault":
      return encodeDeployData({
        abi: StreamVault.abi,
        bytecode: StreamVault.bytecode as Hex,
        args: [rt.contracts.TestUSDC!],
      });
    case "EscrowVault":
      return encodeDeployData({
        abi: EscrowVault.abi,
        bytecode: EscrowVault.bytecode as Hex,
        args: [rt.contracts.TestUSDC!],
      });
  }
}

/**
 * Local node: deploy whatever is missing or stale. Configured chain: deploy nothing; warn about
 * configured addresses without code (readiness reports contracts that are not there at all).
 */
export async function ensureContracts(
  rt: ChainRuntime,
  sender: TxSender,
  sql: Sql,
  log: Logger,
): Promise<void> {
  if (rt.node) {
    // Two processes on one database and one node must not both deploy.
    const conn = await sql.reserve();
    try {
      await conn`select pg_advisory_lock(5044, ${rt.chainId})`;
      await deployContracts(rt, sender, sql, log);
    } finally {
      await conn`select pg_advisory_unlock(5044, ${rt.chainId})`.catch(() => {});
      conn.release();
    }
    return;
  }
  for (const [name, address] of Object.entries(rt.contracts)) {
    const code = await rt.client.getCode({ address: address as `0x${string}` });
    if (!code || code === "0x") {
      log.warn("contract has no code on chain", { chain: rt.profile.name, name, address });
    }
  }
}

/**
 * Deploys (through the sender, signed by the operator) every contract that is missing, has no
 * code, was compiled from other sources, or depends on one redeployed; records the addresses.
 * With `force`, deploys all. Contracts whose address is fixed by configuration are left alone.
 */
export async function deployContracts(
  rt: ChainRuntime,
  sender: TxSender,
  sql: Sql,
  log: Logger,
  { force = false } = {},
): Promise<ContractName[]> {
  const operator = rt.operator;
  if (!operator) throw new Error(`${rt.profile.envPrefix}_OPERATOR_KEY is needed to deploy`);
  const stored = new Map(
    (await contractsRepo.list(sql, rt.chainId)).map((r) => [r.name, r]),
  );
  const redeployed: ContractName[] = [];
  for (const { name, dependsOn, holdsFunds } of PLAN) {
    if (rt.profile.contracts[name]) continue;
    const artifact = ARTIFACTS[name];
    const row = stored.get(name);
    const sameBuild = row?.inputHash === artifact.inputHash;
    let keep = !force && !!row && (sameBuild || holdsFunds) &&
      !dependsOn.some((d) => redeployed.includes(d));
    if (keep) {
      const code = await rt.client.getCode({ address: row!.address as `0x${string}` });
      keep = !!code && code !== "0x";
    }
    if (keep) {
      if (!sameBuild) {
        log.warn("contract kept although built from other sources: it holds funds", {
          chain: rt.profile.name,
          name,
          address: row!.address,
          replaceWith: `deno task contracts:deploy --network ${rt.profile.name} --force`,
        });
      }
      rt.contracts[name] = row!.address as `0x${string}`;
      continue;
    }
    const tx = await sender.send({
      profile: rt.profile.name,
      from: "operator",
      to: null,
      data: deployData(name, rt, operator.address),
      intentKey: `deploy:${name}:${artifact.inputHash}:${crypto.randomUUID()}`,
    });
    const address = tx.contractAddress as `0x${string}`;
    rt.contracts[name] = address;
    redeployed.push(name);
    await contractsRepo.save(sql, {
      chainId: rt.chainId,
      name,
      address,
      inputHash: artifact.inputHash,
      deployTxHash: tx.txHash,
      deployBlock: tx.blockNumber,
    });
    log.info("contract deployed", { chain: rt.profile.name, name, address });
  }
  return redeployed;
}
