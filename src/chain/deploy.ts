/**
 * Our contracts on a chain. A local node gets them deployed once (through the sender, by the
 * operator) and their addresses stored in chain_contracts; they are redeployed when the node lost
 * them, or, for contracts that hold no funds, when the compiled artifact changed. A configured
 * chain uses configured addresses.
 */
import { encodeDeployData, encodeFunctionData, type Hex } from "viem";
import { type Sql, withoutBackstops } from "../db/client.ts";
import type { Logger } from "../log.ts";
import {
  AgentAccountFactory,
  AgenticCommerce,
  AgentIdentityRegistry,
  AgentReputationRegistry,
  BatchPayout,
  CheckoutBurner,
  EscrowVault,
  GatewayVault,
  MessageTransmitterV2,
  PaymentRouter,
  StreamVault,
  TestUSDC,
  TokenMessengerV2,
} from "./contracts/artifacts/index.ts";
import type { ChainRuntime } from "./runtime.ts";
import type { TxSender } from "./sender.ts";
import {
  type ContractName,
  DEFAULT_GATEWAY_WITHDRAWAL_DELAY_S,
  type ProfileDef,
} from "./profiles.ts";
import * as contractsRepo from "./contracts.repo.ts";
import { placeBatchSettlement } from "./channels.place.ts";
import { authorizeSettlers } from "./gateway-settlers.ts";

export const ARTIFACTS = {
  TestUSDC,
  PaymentRouter,
  StreamVault,
  EscrowVault,
  GatewayVault,
  MessageTransmitterV2,
  TokenMessengerV2,
  BatchPayout,
  AgentIdentityRegistry,
  AgentReputationRegistry,
  AgentAccountFactory,
  AgenticCommerce,
  CheckoutBurner,
} as const;

/**
 * Deployment order; a contract is redeployed when one it depends on was. A contract that holds
 * funds (the token's balances, a vault's locked deposits) is kept while its code is where we
 * recorded it, even when rebuilt from other sources: a new deployment would strand everything
 * held by the old one (`contracts:deploy --force` replaces it on purpose).
 */
export interface PlanEntry {
  name: ContractName;
  dependsOn: ContractName[];
  holdsFunds: boolean;
  /**
   * Where it goes: every chain, settlement chains, chains with a CCTP domain (and an attester),
   * or bridge source chains with a CCTP domain (whoever's messenger they run).
   */
  on: "all" | "settlement" | "cctp" | "source";
  /** Not required: without it a feature falls back (the doctor warns instead of failing). */
  optional?: string;
}

export const PLAN: PlanEntry[] = [
  { name: "TestUSDC", dependsOn: [], holdsFunds: true, on: "all" },
  { name: "PaymentRouter", dependsOn: ["TestUSDC"], holdsFunds: false, on: "settlement" },
  { name: "StreamVault", dependsOn: ["TestUSDC"], holdsFunds: true, on: "settlement" },
  { name: "EscrowVault", dependsOn: ["TestUSDC"], holdsFunds: true, on: "settlement" },
  { name: "GatewayVault", dependsOn: ["TestUSDC"], holdsFunds: true, on: "settlement" },
  // The CCTP pair burns and mints; it holds nothing between transactions.
  { name: "MessageTransmitterV2", dependsOn: [], holdsFunds: false, on: "cctp" },
  {
    name: "TokenMessengerV2",
    dependsOn: ["TestUSDC", "MessageTransmitterV2"],
    holdsFunds: false,
    on: "cctp",
  },
  // Holds no funds, only payers' allowances: a new one asks each payer for a new permit.
  { name: "BatchPayout", dependsOn: ["TestUSDC"], holdsFunds: false, on: "settlement" },
  // Agents' identities and feedback are state worth keeping, like funds: never replaced silently
  // (a chain keeps a registry built from older sources; docs/decisions.md, ERC-8004 2.0). A
  // reputation registry bound to another identity registry than the chain's (one configured by
  // address) is replaced: its feedback is about other agents.
  { name: "AgentIdentityRegistry", dependsOn: [], holdsFunds: true, on: "settlement" },
  {
    name: "AgentReputationRegistry",
    dependsOn: ["AgentIdentityRegistry"],
    holdsFunds: true,
    on: "settlement",
  },
  { name: "AgentAccountFactory", dependsOn: [], holdsFunds: false, on: "settlement" },
  { name: "AgenticCommerce", dependsOn: ["TestUSDC"], holdsFunds: true, on: "settlement" },
  // Cross-chain checkout with one signature: burns a shopper's authorized USDC through the
  // chain's messenger (ours, or Circle's by configuration). Holds nothing between transactions.
  {
    name: "CheckoutBurner",
    dependsOn: ["TestUSDC", "TokenMessengerV2"],
    holdsFunds: false,
    on: "source",
    optional:
      "shoppers paying from this chain send approve + burn from their wallet (gas) instead of one signature",
  },
];

/**
 * The contracts a chain gets: the CCTP pair only where the profile has a CCTP domain and an
 * attester is known (a local node, or CCTP_ATTESTER_KEY): a transmitter trusting nobody is useless.
 */
export function planFor(
  rt: { profile: Pick<ProfileDef, "kind" | "cctpDomain">; attester?: unknown },
): PlanEntry[] {
  return PLAN.filter((e) =>
    e.on === "all" || (e.on === "settlement" && rt.profile.kind === "settlement") ||
    (e.on === "cctp" && rt.profile.cctpDomain !== undefined && !!rt.attester) ||
    (e.on === "source" && rt.profile.kind === "source" && rt.profile.cctpDomain !== undefined)
  );
}

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
    case "GatewayVault":
      // Authorizations are submitted by the operator and our relayers only (its settlers). On a
      // local node of ours, no withdrawal delay (docs/decisions.md, x402: sellers withdraw what
      // they earned at once); on a configured chain, one that outlasts the batched settlements,
      // without which x402's batched option is not offered there (x402.batched.ts).
      return encodeDeployData({
        abi: GatewayVault.abi,
        bytecode: GatewayVault.bytecode as Hex,
        args: [
          rt.contracts.TestUSDC!,
          rt.profile.gatewayWithdrawalDelay ?? (rt.node ? 0n : DEFAULT_GATEWAY_WITHDRAWAL_DELAY_S),
          operator,
          rt.relayers.map((r) => r.address),
        ],
      });
    case "MessageTransmitterV2":
      if (!rt.attester) throw new Error("CCTP_ATTESTER_KEY is needed to deploy the transmitter");
      return encodeDeployData({
        abi: MessageTransmitterV2.abi,
        bytecode: MessageTransmitterV2.bytecode as Hex,
        args: [rt.profile.cctpDomain!, rt.attester.address],
      });
    case "TokenMessengerV2":
      return encodeDeployData({
        abi: TokenMessengerV2.abi,
        bytecode: TokenMessengerV2.bytecode as Hex,
        args: [rt.contracts.MessageTransmitterV2!, rt.contracts.TestUSDC!],
      });
    case "BatchPayout":
      return encodeDeployData({
        abi: BatchPayout.abi,
        bytecode: BatchPayout.bytecode as Hex,
        args: [rt.contracts.TestUSDC!, operator],
      });
    case "AgentIdentityRegistry":
      return encodeDeployData({
        abi: AgentIdentityRegistry.abi,
        bytecode: AgentIdentityRegistry.bytecode as Hex,
      });
    case "AgentReputationRegistry":
      return encodeDeployData({
        abi: AgentReputationRegistry.abi,
        bytecode: AgentReputationRegistry.bytecode as Hex,
        args: [rt.contracts.AgentIdentityRegistry!],
      });
    case "AgentAccountFactory":
      return encodeDeployData({
        abi: AgentAccountFactory.abi,
        bytecode: AgentAccountFactory.bytecode as Hex,
      });
    case "AgenticCommerce":
      return encodeDeployData({
        abi: AgenticCommerce.abi,
        bytecode: AgenticCommerce.bytecode as Hex,
        args: [rt.contracts.TestUSDC!],
      });
    case "CheckoutBurner":
      return encodeDeployData({
        abi: CheckoutBurner.abi,
        bytecode: CheckoutBurner.bytecode as Hex,
        args: [rt.contracts.TestUSDC!, rt.contracts.TokenMessengerV2!],
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
      // Waiting while another process deploys is meant to wait: no backstop on this session.
      await withoutBackstops(conn, async () => {
        await conn`select pg_advisory_lock(5044, ${rt.chainId})`;
        try {
          await deployContracts(rt, sender, sql, log);
          await placeBatchSettlement(rt, log);
        } finally {
          await conn`select pg_advisory_unlock(5044, ${rt.chainId})`.catch(() => {});
        }
      });
    } finally {
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
  await placeBatchSettlement(rt, log);
  // The relayers of this process's pool must be the vault's settlers (another process of the
  // deployment, or a pool grown since, may have other ones): the operator adds them, once.
  await authorizeSettlers(rt, sender, log).catch((e) =>
    log.warn("the relayers could not be made settlers of the gateway vault", {
      chain: rt.profile.name,
      error: e,
      fix: `deno task contracts:deploy --network ${rt.profile.name}`,
    })
  );
  const { AgentIdentityRegistry: identity, AgentReputationRegistry: reputation } = rt.contracts;
  if (identity && reputation) {
    const bound = await pairedIdentity(rt, reputation);
    if (bound !== identity.toLowerCase()) {
      log.warn(
        "the reputation registry belongs to another identity registry: feedback would rate other agents",
        {
          chain: rt.profile.name,
          identity,
          reputation,
          boundTo: bound,
          fix:
            `set ${rt.profile.envPrefix}_REPUTATION_REGISTRY_ADDRESS to the identity registry's pair`,
        },
      );
    }
  }
}

/** The identity registry a reputation registry is bound to (lowercase); null when unreadable. */
export async function pairedIdentity(
  rt: Pick<ChainRuntime, "client">,
  reputation: `0x${string}`,
): Promise<string | null> {
  try {
    const bound = await rt.client.readContract({
      address: reputation,
      abi: AgentReputationRegistry.abi,
      functionName: "getIdentityRegistry",
    });
    return bound.toLowerCase();
  } catch {
    return null;
  }
}

/**
 * Deploys (through the sender, signed by the operator) every contract that is missing, has no
 * code, was compiled from other sources, or depends on one redeployed; records the addresses.
 * With `force`, deploys all, or with `only` those named (and what depends on them): replacing a
 * fund-holding contract strands what the old one holds, so an operator replaces only the one it
 * must (the gateway vault for a withdrawal delay, say). Contracts whose address is fixed by
 * configuration are left alone.
 */
export async function deployContracts(
  rt: ChainRuntime,
  sender: TxSender,
  sql: Sql,
  log: Logger,
  { force = false, only }: { force?: boolean; only?: ContractName[] } = {},
): Promise<ContractName[]> {
  const operator = rt.operator;
  if (!operator) throw new Error(`${rt.profile.envPrefix}_OPERATOR_KEY is needed to deploy`);
  const stored = new Map(
    (await contractsRepo.list(sql, rt.chainId)).map((r) => [r.name, r]),
  );
  const redeployed: ContractName[] = [];
  for (const { name, dependsOn, holdsFunds } of planFor(rt)) {
    if (rt.profile.contracts[name]) continue;
    // A source chain without a messenger (no attester, none configured) gets no burner.
    if (dependsOn.some((d) => !rt.contracts[d])) continue;
    const artifact = ARTIFACTS[name];
    const row = stored.get(name);
    const sameBuild = row?.inputHash === artifact.inputHash;
    const forced = force && (!only || only.includes(name));
    let keep = !forced && !!row && (sameBuild || holdsFunds) &&
      !dependsOn.some((d) => redeployed.includes(d));
    if (keep) {
      const code = await rt.client.getCode({ address: row!.address as `0x${string}` });
      keep = !!code && code !== "0x";
    }
    if (keep && name === "AgentReputationRegistry") {
      keep = await pairedIdentity(rt, row!.address as `0x${string}`) ===
        rt.contracts.AgentIdentityRegistry?.toLowerCase();
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
  await authorizeMessenger(rt, sender, log);
  await authorizeSettlers(rt, sender, log);
  return redeployed;
}

/** Our token messenger mints and burns our USDC: the token's owner (the operator) allows it. */
async function authorizeMessenger(rt: ChainRuntime, sender: TxSender, log: Logger) {
  const usdc = rt.contracts.TestUSDC;
  const messenger = rt.contracts.TokenMessengerV2;
  if (!usdc || !messenger || rt.profile.contracts.TestUSDC) return;
  let allowed: boolean;
  try {
    allowed = await rt.client.readContract({
      address: usdc,
      abi: TestUSDC.abi,
      functionName: "isMinter",
      args: [messenger],
    });
  } catch {
    log.warn("the USDC kept on this chain predates minters: bridging needs a redeploy", {
      chain: rt.profile.name,
      replaceWith: `deno task contracts:deploy --network ${rt.profile.name} --force`,
    });
    return;
  }
  if (allowed) return;
  await sender.send({
    profile: rt.profile.name,
    from: "operator",
    to: usdc,
    data: encodeFunctionData({
      abi: TestUSDC.abi,
      functionName: "configureMinter",
      args: [messenger, true],
    }),
    intentKey: `cctp:minter:${usdc.toLowerCase()}:${messenger.toLowerCase()}`,
  });
}
