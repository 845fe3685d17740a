/**
 * The chain half of `deno task doctor`: for each configured profile (settlement chains, and
 * bridge source chains given an RPC URL), does its RPC answer with the expected chain id, are
 * our contracts there and built from our artifacts (configured addresses: is there code), is
 * the operator funded; then the CCTP checks (doctor-cctp.ts). Read-only: nothing is deployed or
 * sent.
 */
import { createPublicClient, formatEther, http, type PublicClient } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import type { Db } from "../db/client.ts";
import { ARTIFACTS, pairedIdentity, planFor } from "./deploy.ts";
import {
  type ChainConfig,
  CONTRACT_ENV,
  type ContractName,
  describeRpcUrl,
  type ProfileConfig,
} from "./profiles.ts";
import { AgentIdentityRegistry, GatewayVault, PaymentRouter } from "./contracts/artifacts/index.ts";
import * as contractsRepo from "./contracts.repo.ts";
import { missingSettlers } from "./gateway-settlers.ts";
import { deriveRelayers } from "./relayers.ts";
import { type CctpSite, inspectCctp } from "./doctor-cctp.ts";

export interface DoctorCheck {
  name: string;
  ok: boolean;
  /** What was found. */
  detail: string;
  /** What to do when it is not ok. */
  fix?: string;
  /** Informational only: never fails the run. */
  warn?: boolean;
}

const RPC_TIMEOUT_MS = 5000;

/** Every configured chain, then CCTP between testnet and each source chain that has an RPC. */
export async function inspectChains(
  config: ChainConfig,
  sql: Db | null,
  /**
   * `vaultDelayNeeded`: the least gateway withdrawal delay x402's batched option needs (s);
   * `production`: APP_ENV=production (a configured chain's USDC must then be named by address).
   */
  opts: { vaultDelayNeeded?: number; production?: boolean } = {},
): Promise<DoctorCheck[]> {
  const out: DoctorCheck[] = [];
  const sites: CctpSite[] = [];
  for (const profile of [...config.profiles, ...config.sources.filter((s) => s.rpcUrl)]) {
    const r = await inspectProfile(profile, sql, opts);
    out.push(...r.checks);
    if (r.site && profile.cctpDomain !== undefined) sites.push(r.site);
  }
  for (const site of sites) {
    const peers = sites.filter((s) =>
      site.profile.kind === "source" ? s.profile.name === "testnet" : s.profile.kind === "source"
    );
    out.push(...await inspectCctp(site, peers, config.cctp));
  }
  return out;
}

export async function inspectChain(
  profile: ProfileConfig,
  sql: Db | null,
): Promise<DoctorCheck[]> {
  return (await inspectProfile(profile, sql)).checks;
}

/** Circle's contracts: configured by address, checked by the CCTP checks, never deployed by us. */
const CIRCLE_NAMES: ContractName[] = ["TestUSDC", "TokenMessengerV2", "MessageTransmitterV2"];

async function inspectProfile(
  profile: ProfileConfig,
  sql: Db | null,
  opts: { vaultDelayNeeded?: number; production?: boolean } = {},
): Promise<{ checks: DoctorCheck[]; site?: CctpSite }> {
  const p = profile.envPrefix;
  const out: DoctorCheck[] = [];
  if (!profile.rpcUrl) {
    out.push({
      name: `${profile.name}: RPC`,
      ok: true,
      warn: true,
      detail: "no RPC URL: a local anvil is started for it (development only)",
      fix: `set ${p}_RPC_URL to use a real chain`,
    });
    return { checks: out };
  }
  const client = createPublicClient({
    transport: http(profile.rpcUrl, { timeout: RPC_TIMEOUT_MS, retryCount: 0 }),
  }) as PublicClient;
  let chainId: number;
  try {
    chainId = await client.getChainId();
  } catch (e) {
    out.push({
      name: `${profile.name}: RPC answers`,
      ok: false,
      // The error's text can repeat the URL, key and all.
      detail: `${describeRpcUrl(profile.rpcUrl!)} did not answer: ${
        redactUrl(String(e).split("\n")[0], profile.rpcUrl!).slice(0, 160)
      }`,
      fix: `check ${p}_RPC_URL (scheme, host, port, API key) and that the node is reachable`,
    });
    return { checks: out };
  }
  if (chainId !== profile.chainId) {
    out.push({
      name: `${profile.name}: chain id`,
      ok: false,
      detail: `${
        describeRpcUrl(profile.rpcUrl!)
      } serves chain ${chainId}, expected ${profile.chainId}`,
      fix: `point ${p}_RPC_URL at a node of chain ${profile.chainId}`,
    });
    return { checks: out };
  }
  out.push({ name: `${profile.name}: RPC answers`, ok: true, detail: `chain ${chainId}` });

  const recorded = new Map(
    (sql ? await contractsRepo.list(sql, profile.chainId).catch(() => []) : []).map((r) => [
      r.name,
      r,
    ]),
  );
  // The contracts this profile gets (deploy.ts planFor): the CCTP pair only where the profile
  // has a CCTP domain, and there it is optional (without it, bridging is unavailable).
  for (const { name, on, optional } of planFor({ profile, attester: true })) {
    const address = profile.contracts[name] ?? recorded.get(name)?.address;
    // Named by address, the token is the chain's USDC (Circle's), not our TestUSDC.
    const label = name === "TestUSDC" && profile.contracts.TestUSDC ? "USDC" : name;
    const check = `${profile.name}: contract ${label}`;
    const circle = CIRCLE_NAMES.includes(name);
    const deployFix = circle && profile.kind === "source"
      ? `set ${p}_${CONTRACT_ENV[name]} to Circle's ${
        name === "TestUSDC" ? "USDC" : name
      } on chain ${profile.chainId} (Circle's list of CCTP v2 contracts and USDC addresses)`
      // In production `deploy` never deploys a test token: the chain's USDC is named.
      : name === "TestUSDC" && opts.production && profile.rpcUrl
      ? `set ${p}_USDC_ADDRESS to the chain's USDC (in production no test token is deployed)`
      : `run \`deno task contracts:deploy --network ${profile.name}\` (or set ${p}_${
        CONTRACT_ENV[name]
      })`;
    if (!address && on === "cctp") {
      out.push({
        name: check,
        ok: true,
        warn: true,
        detail: "not deployed: bridging to or from this chain is unavailable",
        fix:
          `set ${p}_TOKEN_MESSENGER_ADDRESS and ${p}_MESSAGE_TRANSMITTER_ADDRESS (Circle's CCTP v2)`,
      });
      continue;
    }
    if (!address && optional) {
      out.push({
        name: check,
        ok: true,
        warn: true,
        detail: `not deployed: ${optional}`,
        fix: deployFix,
      });
      continue;
    }
    if (!address) {
      out.push({
        name: check,
        ok: false,
        detail: "no address configured or recorded",
        fix: deployFix,
      });
      continue;
    }
    const code = await client.getCode({ address: address as `0x${string}` }).catch(() => undefined);
    if (!code || code === "0x") {
      out.push({ name: check, ok: false, detail: `no code at ${address}`, fix: deployFix });
      continue;
    }
    const row = recorded.get(name);
    const expected = ARTIFACTS[name].inputHash;
    if (name === "TestUSDC" && opts.production && !profile.contracts.TestUSDC) {
      // Ours, deployed here: a token its operator mints at will, not money.
      out.push({
        name: check,
        ok: false,
        detail: `${address} is our test token, deployed here (its operator mints it at will), ` +
          "not the chain's USDC",
        fix: `set ${p}_USDC_ADDRESS to the chain's USDC (README, Going live on real networks)`,
      });
      continue;
    }
    if (row && row.address.toLowerCase() === address.toLowerCase() && row.inputHash) {
      const same = row.inputHash === expected;
      out.push({
        name: check,
        ok: same,
        detail: same
          ? `${address}, built from our artifact`
          : `${address} was built from other sources (input ${row.inputHash.slice(0, 12)}…, ours ${
            expected.slice(0, 12)
          }…)`,
        fix: same
          ? undefined
          : `redeploy with \`deno task contracts:deploy --network ${profile.name} --force\` (fund-holding contracts: move balances first)`,
      });
    } else if (circle) {
      // Circle's USDC and CCTP pair: checked for what they must do by the CCTP checks.
      out.push({ name: check, ok: true, detail: `${address} (configured): code present` });
    } else {
      out.push({
        name: check,
        ok: true,
        warn: true,
        detail: `${address} (configured): code present, its build is not checked`,
        fix: `to run ours instead, unset ${p}_${
          CONTRACT_ENV[name]
        } and run \`deno task contracts:deploy --network ${profile.name}\``,
      });
    }
  }
  const site: CctpSite = {
    profile,
    client,
    address: (name) =>
      (profile.contracts[name] ?? recorded.get(name)?.address) as `0x${string}` | undefined,
  };

  out.push(...await inspectAgentRegistries(profile, client, site.address));

  if (!profile.operatorKey) {
    out.push({
      name: `${profile.name}: operator`,
      ok: false,
      detail: `${p}_OPERATOR_KEY is not set: no deployments, top-ups, relays or payment orders`,
      fix: `set ${p}_OPERATOR_KEY to the 0x private key of a funded account`,
    });
    return { checks: out, site };
  }
  const operator = privateKeyToAccount(profile.operatorKey).address;
  const balance = await client.getBalance({ address: operator }).catch(() => null);
  const low = profile.gas.operatorLowWei;
  out.push({
    name: `${profile.name}: operator funded`,
    ok: balance !== null && balance >= low && balance > 0n,
    detail: balance === null
      ? `could not read the balance of ${operator}`
      : `${operator} holds ${formatEther(balance)} (low mark ${formatEther(low)})`,
    fix: `send native gas to ${operator} (or lower ${p}_OPERATOR_LOW_WEI)`,
  });
  const router = site.address("PaymentRouter");
  if (router) out.push(await inspectOrderSigner(profile, client, router, operator));
  const vault = site.address("GatewayVault");
  if (vault) out.push(await inspectSettlers(profile, client, vault));
  if (vault && opts.vaultDelayNeeded !== undefined) {
    out.push(await inspectVaultDelay(profile, client, vault, opts.vaultDelayNeeded));
  }
  return { checks: out, site };
}

/** A contract's state the node would not give: the check fails, pointing at the RPC URL. */
function unreadable(name: string, profile: ProfileConfig, what: string, e: unknown): DoctorCheck {
  return {
    name,
    ok: false,
    detail: `could not read ${what}: ${e instanceof Error ? e.message.split("\n")[0] : String(e)}`,
    fix: `check ${profile.envPrefix}_RPC_URL`,
  };
}

/**
 * x402's batched option is offered on a configured chain's vault only when its withdrawal delay
 * outlasts the settlements of what a payer promised (x402.batched.rules.ts); a shorter one is
 * not an error (the option is off there), but it is what an operator deploying a vault by hand or
 * before 2026-12-01 (no delay) would not know.
 */
async function inspectVaultDelay(
  profile: ProfileConfig,
  client: PublicClient,
  vault: `0x${string}`,
  needed: number,
): Promise<DoctorCheck> {
  const name = `${profile.name}: gateway vault withdrawal delay`;
  let delay: bigint;
  try {
    delay = await client.readContract({
      address: vault,
      abi: GatewayVault.abi,
      functionName: "withdrawalDelay",
    });
  } catch (e) {
    return unreadable(name, profile, `${vault}'s withdrawal delay`, e);
  }
  if (delay >= BigInt(needed)) {
    return { name, ok: true, detail: `${delay} s (x402's batched option needs ${needed} s)` };
  }
  return {
    name,
    ok: true,
    warn: true,
    detail: `${delay} s on ${vault}: x402's batched option needs ${needed} s, so it is not ` +
      "offered on this chain",
    fix: `move the gateway balances, set ${profile.envPrefix}_GATEWAY_WITHDRAWAL_DELAY_SECONDS ` +
      `(default 86400) and replace the vault alone: \`deno task contracts:deploy --network ` +
      `${profile.name} --force --only GatewayVault\``,
  };
}

/**
 * The payment router accepts orders signed by its order signer only, which deploy.ts sets to the
 * operator: an operator key changed since (the deployment's, or another's) makes every checkout
 * relay revert `InvalidOrderSignature()` while every other check passes.
 */
async function inspectOrderSigner(
  profile: ProfileConfig,
  client: PublicClient,
  router: `0x${string}`,
  operator: `0x${string}`,
): Promise<DoctorCheck> {
  const name = `${profile.name}: payment router's order signer`;
  let signer: string;
  try {
    signer = await client.readContract({
      address: router,
      abi: PaymentRouter.abi,
      functionName: "orderSigner",
    }) as string;
  } catch (e) {
    return unreadable(name, profile, `${router}'s order signer`, e);
  }
  const ok = signer.toLowerCase() === operator.toLowerCase();
  return {
    name,
    ok,
    detail: ok
      ? `the operator ${operator}`
      : `${signer}, not the operator ${operator}: every checkout order would be refused`,
    fix: ok ? undefined : `set ${profile.envPrefix}_OPERATOR_KEY to the key of ${signer} (the ` +
      "deployment's operator), or have the router's owner call setOrderSigner with the operator",
  };
}

/**
 * The gateway vault takes payment authorizations from its settlers only: every relayer of the
 * pool must be one (the service's start adds them when the operator is the vault's), and a vault
 * from before settlers lets a payer spend what it promised (x402's batched option is off there).
 */
async function inspectSettlers(
  profile: ProfileConfig,
  client: PublicClient,
  vault: `0x${string}`,
): Promise<DoctorCheck> {
  const name = `${profile.name}: gateway vault settlers`;
  const relayers = deriveRelayers(profile.operatorKey!, profile.relayers);
  let missing: `0x${string}`[] | null;
  try {
    missing = await missingSettlers({ client, relayers }, vault);
  } catch (e) {
    return unreadable(name, profile, `${vault}'s settlers`, e);
  }
  if (missing === null) {
    return {
      name,
      ok: true,
      warn: true,
      detail: `${vault} predates settlers: anyone may submit its authorizations, so x402's ` +
        "batched option is not offered on it",
      fix: `move the gateway balances, then replace the vault alone: \`deno task ` +
        `contracts:deploy --network ${profile.name} --force --only GatewayVault\``,
    };
  }
  return {
    name,
    ok: missing.length === 0,
    detail: missing.length
      ? `relayers that may not settle on ${vault}: ${missing.join(", ")}`
      : `the ${relayers.length} relayers may settle on ${vault}`,
    fix: missing.length
      ? `\`deno task contracts:deploy --network ${profile.name}\` (or start the service) with the vault's operator key`
      : undefined,
  };
}

/**
 * The ERC-8004 pair agents use (ours, or the official registries configured by address): the
 * reputation registry must be bound to the identity registry (else feedback rates other agents),
 * and the identity registry should speak ERC-8004 2.0 (agents from 0, the 5-minute wallet proof).
 */
async function inspectAgentRegistries(
  profile: ProfileConfig,
  client: PublicClient,
  addressOf: (name: ContractName) => string | undefined,
): Promise<DoctorCheck[]> {
  const identity = addressOf("AgentIdentityRegistry") as `0x${string}` | undefined;
  const reputation = addressOf("AgentReputationRegistry") as `0x${string}` | undefined;
  if (!identity || !reputation) return [];
  const p = profile.envPrefix;
  const out: DoctorCheck[] = [];
  const bound = await pairedIdentity({ client }, reputation);
  const paired = bound === identity.toLowerCase();
  out.push({
    name: `${profile.name}: ERC-8004 registries paired`,
    ok: paired,
    detail: paired
      ? `reputation ${reputation} is bound to identity ${identity}`
      : `reputation ${reputation} is bound to ${bound ?? "nothing readable"}, not to ${identity}`,
    fix: `set ${p}_IDENTITY_REGISTRY_ADDRESS and ${p}_REPUTATION_REGISTRY_ADDRESS to one pair`,
  });
  const version = await client.readContract({
    address: identity,
    abi: AgentIdentityRegistry.abi,
    functionName: "getVersion",
  }).catch(() => null);
  const current = !!version && /^2\./.test(version);
  out.push({
    name: `${profile.name}: ERC-8004 identity registry version`,
    ok: true,
    warn: !current,
    detail: current
      ? `${identity} is ${version}`
      : `${identity} predates ERC-8004 2.0 (agents from 1, no 5-minute limit on wallet proofs)`,
    fix: `\`deno task contracts:deploy --network ${profile.name} --force\` replaces ours; agents ` +
      `registered in the old one are then no longer served (docs/decisions.md, ERC-8004 2.0)`,
  });
  return out;
}

/** `text` with every occurrence of `url` replaced by its printable form (describeRpcUrl). */
function redactUrl(text: string, url: string): string {
  return text.split(url).join(describeRpcUrl(url));
}
