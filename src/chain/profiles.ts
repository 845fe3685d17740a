/**
 * Chain profiles: the settlement chains (testnet, production) and, later, bridge source chains.
 * A profile is data: chain id, RPC URL (none → a local anvil is started), explorer, confirmation
 * depth and contract addresses, all from configuration. Callers name a profile, never a URL.
 */
import { isAddress } from "viem";
import { z } from "zod";

export type SettlementProfileName = "testnet" | "production";
/** Bridge source chains, named by the spec's chain ids (also `--network` of operator commands). */
export const SOURCE_CHAINS = [
  "Arbitrum_Sepolia",
  "Base_Sepolia",
  "Optimism_Sepolia",
  "Ethereum_Sepolia",
  "Polygon_Amoy_Testnet",
] as const;
export type SourceChainName = typeof SOURCE_CHAINS[number];
export type ProfileName = SettlementProfileName | SourceChainName;

export function isSourceChain(name: string): name is SourceChainName {
  return (SOURCE_CHAINS as readonly string[]).includes(name);
}

export interface ProfileDef {
  name: ProfileName;
  chainId: number;
  label: string;
  /** Environment variable prefix: TESTNET_RPC_URL, PRODUCTION_RPC_URL, ... */
  envPrefix: string;
  testnet: boolean;
  /** Settlement chains run the product; source chains only bridge into the testnet one. */
  kind: "settlement" | "source";
  /** The chain's CCTP domain (Circle's numbering); absent: no bridge on this chain. */
  cctpDomain?: number;
  /** Circle's blockchain code for the chain (the spec's `circleBlockchain`). */
  circleBlockchain?: string;
}

/** The table of known chains. Bridge source chains are added here as new rows. */
export const SETTLEMENT_DEFS: Record<SettlementProfileName, ProfileDef> = {
  testnet: {
    name: "testnet",
    chainId: 5042002,
    label: "Settle Testnet",
    envPrefix: "TESTNET",
    testnet: true,
    kind: "settlement",
    // The bridge's destination: CCTP domain 26 (the testnet chain's, 5042002).
    cctpDomain: 26,
  },
  production: {
    name: "production",
    chainId: 5042,
    label: "Settle",
    envPrefix: "PRODUCTION",
    testnet: false,
    kind: "settlement",
  },
};

/** Bridge source chains: real chain ids, CCTP domains and Circle's chain codes. */
export const SOURCE_CHAIN_DEFS: Record<SourceChainName, ProfileDef> = {
  Arbitrum_Sepolia: {
    name: "Arbitrum_Sepolia",
    chainId: 421614,
    label: "Arbitrum Sepolia",
    envPrefix: "ARBITRUM_SEPOLIA",
    testnet: true,
    kind: "source",
    cctpDomain: 3,
    circleBlockchain: "ARB-SEPOLIA",
  },
  Base_Sepolia: {
    name: "Base_Sepolia",
    chainId: 84532,
    label: "Base Sepolia",
    envPrefix: "BASE_SEPOLIA",
    testnet: true,
    kind: "source",
    cctpDomain: 6,
    circleBlockchain: "BASE-SEPOLIA",
  },
  Optimism_Sepolia: {
    name: "Optimism_Sepolia",
    chainId: 11155420,
    label: "Optimism Sepolia",
    envPrefix: "OPTIMISM_SEPOLIA",
    testnet: true,
    kind: "source",
    cctpDomain: 2,
    circleBlockchain: "OP-SEPOLIA",
  },
  Ethereum_Sepolia: {
    name: "Ethereum_Sepolia",
    chainId: 11155111,
    label: "Ethereum Sepolia",
    envPrefix: "ETHEREUM_SEPOLIA",
    testnet: true,
    kind: "source",
    cctpDomain: 0,
    circleBlockchain: "ETH-SEPOLIA",
  },
  Polygon_Amoy_Testnet: {
    name: "Polygon_Amoy_Testnet",
    chainId: 80002,
    label: "Polygon Amoy Testnet",
    envPrefix: "POLYGON_AMOY",
    testnet: true,
    kind: "source",
    cctpDomain: 7,
    circleBlockchain: "MATIC-AMOY",
  },
};

/** Every known chain profile by name. */
export const PROFILE_DEFS: Record<ProfileName, ProfileDef> = {
  ...SETTLEMENT_DEFS,
  ...SOURCE_CHAIN_DEFS,
};

/** The profile whose chain has this CCTP domain (Circle's numbering), if we know one. */
export function profileForDomain(domain: number): ProfileName | null {
  return Object.values(PROFILE_DEFS).find((d) => d.cctpDomain === domain)?.name ?? null;
}

export const CONTRACT_NAMES = [
  "TestUSDC",
  "PaymentRouter",
  "StreamVault",
  "EscrowVault",
  "MessageTransmitterV2",
  "TokenMessengerV2",
  "GatewayVault",
  "BatchPayout",
  "AgentIdentityRegistry",
  "AgentReputationRegistry",
  "AgentAccountFactory",
  "AgenticCommerce",
  "CheckoutBurner",
] as const;
export type ContractName = typeof CONTRACT_NAMES[number];

export const CONTRACT_ENV: Record<ContractName, string> = {
  TestUSDC: "USDC_ADDRESS",
  PaymentRouter: "PAYMENT_ROUTER_ADDRESS",
  StreamVault: "STREAM_VAULT_ADDRESS",
  EscrowVault: "ESCROW_VAULT_ADDRESS",
  MessageTransmitterV2: "MESSAGE_TRANSMITTER_ADDRESS",
  TokenMessengerV2: "TOKEN_MESSENGER_ADDRESS",
  GatewayVault: "GATEWAY_VAULT_ADDRESS",
  BatchPayout: "BATCH_PAYOUT_ADDRESS",
  AgentIdentityRegistry: "IDENTITY_REGISTRY_ADDRESS",
  AgentReputationRegistry: "REPUTATION_REGISTRY_ADDRESS",
  AgentAccountFactory: "AGENT_ACCOUNT_FACTORY_ADDRESS",
  AgenticCommerce: "JOB_ESCROW_ADDRESS",
  CheckoutBurner: "CHECKOUT_BURNER_ADDRESS",
};

export interface ProfileConfig extends ProfileDef {
  /** Undefined: start a local anvil for this profile. */
  rpcUrl?: string;
  /** Base URL; a transaction link is `${explorerUrl}/tx/${hash}`. */
  explorerUrl: string;
  confirmations: number;
  /**
   * Configured contract addresses (remote chains). Otherwise they come from chain_contracts:
   * written by the local deployment, or by `deno task contracts:deploy` for a remote chain.
   */
  contracts: Partial<Record<ContractName, `0x${string}`>>;
  /** Private key of the operator (deployer, faucet, order signer, gas station). */
  operatorKey?: `0x${string}`;
  /** First block the log watcher reads on a fresh database (remote chains). */
  startBlock?: bigint;
  /** Gas for managed wallets: below `floorWei` native, the operator sends `topupWei` first. */
  gas: GasPolicy;
  /** Relayer hot wallets for relayed work (`<PREFIX>_RELAYERS`, default 4; 0: the operator). */
  relayers: number;
  /**
   * x402 batch-settlement contracts (`<PREFIX>_BATCH_SETTLEMENT_ADDRESS`,
   * `<PREFIX>_ERC3009_DEPOSIT_COLLECTOR_ADDRESS`); unset: their canonical addresses (channels.ts).
   */
  batchSettlement?: { settlement?: `0x${string}`; collector?: `0x${string}` };
  /**
   * The withdrawal delay a GatewayVault we deploy here gets, in seconds
   * (`<PREFIX>_GATEWAY_WITHDRAWAL_DELAY_SECONDS`); unset: none on a local node of ours,
   * `DEFAULT_GATEWAY_WITHDRAWAL_DELAY_S` on a configured chain (x402's batched option is offered
   * only on a vault whose delay outlasts its settlements: x402.batched.rules.ts).
   */
  gatewayWithdrawalDelay?: bigint;
}

const DEFAULT_RELAYERS = 4;
/** A day: more than any `X402_BATCH_SECONDS` (at most an hour) needs. */
export const DEFAULT_GATEWAY_WITHDRAWAL_DELAY_S = 86_400n;
/** A year: the most a delay may be configured to. */
const MAX_GATEWAY_WITHDRAWAL_DELAY_S = 31_536_000n;

export interface GasPolicy {
  /** A managed wallet with less native balance than this is topped up before it sends (0: never). */
  floorWei: bigint;
  /** What one top-up sends. */
  topupWei: bigint;
  /** The operator's native balance below this is reported (`/readyz`, `chain:status`). */
  operatorLowWei: bigint;
}

/** 0.01 native: a few dozen token transfers at the local node's fees. */
export const DEFAULT_GAS_FLOOR_WEI = 10_000_000_000_000_000n;
/** 0.1 native per top-up. */
export const DEFAULT_GAS_TOPUP_WEI = 100_000_000_000_000_000n;
/** 1 native: about ten top-ups left. */
export const DEFAULT_OPERATOR_LOW_WEI = 1_000_000_000_000_000_000n;
/** How often a deployment reads new logs from each chain (CHAIN_POLL_INTERVAL_MS). */
export const DEFAULT_POLL_INTERVAL_MS = 500;

export interface ChainConfig {
  profiles: ProfileConfig[];
  /** Bridge source chains: every one is available; a local node starts on first use. */
  sources: ProfileConfig[];
  cctp: CctpConfig;
  receiptTimeoutMs: number;
  pollIntervalMs: number;
  /** Seconds between anvil state dumps, so a killed local node loses little. */
  localStateIntervalSeconds: number;
}

export interface CctpConfig {
  /**
   * Key of the attester our local message transmitters trust and our local attester signs
   * with; unset: anvil's mnemonic account 9 (local nodes only). The first of `attesterKeys`.
   */
  attesterKey?: `0x${string}`;
  /**
   * Every key the local attester holds (`CCTP_ATTESTER_KEY` first, then the comma list
   * `CCTP_ATTESTER_KEYS`): it signs with as many as the destination transmitter's threshold.
   */
  attesterKeys: `0x${string}`[];
  /**
   * An attestation service in Circle's API shape (base URL: `/v2/messages/{domain}` and
   * `/v2/burn/USDC/fees/{src}/{dst}` under it): Circle's (https://iris-api-sandbox.circle.com)
   * or our own attester's (`$BASE_URL/api/cctp/attestation`). Unset: the local attester,
   * in-process.
   */
  attestationApiUrl?: string;
  /**
   * The local attester's Fast Transfer fee in basis points (a decimal string, like Circle's
   * fee API's `minimumFee`); a burn whose maxFee does not cover it is attested as standard.
   */
  fastFeeBps: string;
}

/**
 * A configured contract address: 0x and 40 hex digits; a mixed-case one must carry a valid
 * EIP-55 checksum (a mistyped digit usually breaks it; unchecked, it failed later, at the first
 * call, as a 500). The problem names the variable.
 */
export function addressProblem(key: string, value: string): string | null {
  if (!/^0x[0-9a-fA-F]{40}$/.test(value)) return `${key}: must be a 0x address`;
  const hex = value.slice(2);
  if (hex === hex.toLowerCase() || hex === hex.toUpperCase()) return null;
  if (isAddress(value, { strict: true })) return null;
  return `${key}: the mixed-case (EIP-55) checksum of ${value} does not match: a digit may be ` +
    `mistyped; check the address (or write it in lower case to skip the checksum)`;
}

/** A fee in basis points as Circle's fee API writes it: digits with at most 4 decimals. */
export const BPS_PATTERN = /^\d{1,6}(\.\d{1,4})?$/;

const privateKey = z.string().regex(/^0x[0-9a-fA-F]{64}$/, "must be a 0x-prefixed 32-byte hex key");

/** Parses the chain part of the environment, appending problems instead of throwing. */
export function parseChainConfig(
  env: Record<string, string | undefined>,
  ctx: { baseUrl: string; isProduction: boolean },
  problems: string[],
): ChainConfig {
  const get = (k: string) => {
    const v = env[k]?.trim();
    return v ? v : undefined;
  };
  const names = (get("CHAINS") ?? "testnet,production").split(",").map((s) => s.trim())
    .filter(Boolean);
  const profiles: ProfileConfig[] = [];
  for (const name of names) {
    const def = SETTLEMENT_DEFS[name as SettlementProfileName];
    if (!def) {
      problems.push(`CHAINS: unknown chain profile "${name}" (known: testnet, production)`);
      continue;
    }
    profiles.push(parseProfile(def, get, ctx, problems));
  }
  const sources = SOURCE_CHAINS.map((n) => parseProfile(SOURCE_CHAIN_DEFS[n], get, ctx, problems));
  const attesterKey = get("CCTP_ATTESTER_KEY");
  if (attesterKey && !privateKey.safeParse(attesterKey).success) {
    problems.push("CCTP_ATTESTER_KEY: must be a 0x-prefixed 32-byte hex key");
  }
  const moreKeys = (get("CCTP_ATTESTER_KEYS") ?? "").split(",").map((k) => k.trim())
    .filter(Boolean);
  if (moreKeys.some((k) => !privateKey.safeParse(k).success)) {
    problems.push("CCTP_ATTESTER_KEYS: must be a comma list of 0x-prefixed 32-byte hex keys");
  }
  const attesterKeys = [
    ...new Set([attesterKey ?? "", ...moreKeys].map((k) => k.toLowerCase()).filter(Boolean)),
  ];
  const fastFeeBps = get("CCTP_FAST_FEE_BPS") ?? "1";
  if (!BPS_PATTERN.test(fastFeeBps)) {
    problems.push("CCTP_FAST_FEE_BPS: must be basis points, e.g. 1 or 1.3");
  }
  const attestationApiUrl = get("CCTP_ATTESTATION_API_URL");
  if (attestationApiUrl && !/^https?:\/\//.test(attestationApiUrl)) {
    problems.push("CCTP_ATTESTATION_API_URL: must be an http(s) URL");
  }
  const cctp: CctpConfig = {
    attesterKey: attesterKeys[0] as `0x${string}` | undefined,
    attesterKeys: attesterKeys as `0x${string}`[],
    attestationApiUrl: attestationApiUrl?.replace(/\/+$/, ""),
    fastFeeBps,
  };
  const int = (k: string, dflt: number, min: number) => {
    const v = get(k);
    if (v === undefined) return dflt;
    const n = Number(v);
    if (!Number.isInteger(n) || n < min) {
      problems.push(`${k}: must be an integer ≥ ${min}`);
      return dflt;
    }
    return n;
  };
  return {
    profiles,
    sources,
    cctp,
    receiptTimeoutMs: int("CHAIN_RECEIPT_TIMEOUT_MS", 60_000, 1),
    pollIntervalMs: int("CHAIN_POLL_INTERVAL_MS", DEFAULT_POLL_INTERVAL_MS, 10),
    localStateIntervalSeconds: int("LOCAL_CHAIN_STATE_INTERVAL", 1, 1),
  };
}

/**
 * The profile a key selects: `svc_sec_test_`/`svc_pub_test_` → testnet; `svc_sec_`, `svc_pub_`,
 * `svc_live_` → production. Null for anything else.
 */
export function profileForKey(key: string): ProfileName | null {
  if (key.startsWith("svc_sec_test_") || key.startsWith("svc_pub_test_")) return "testnet";
  if (key.startsWith("svc_sec_") || key.startsWith("svc_pub_") || key.startsWith("svc_live_")) {
    return "production";
  }
  return null;
}

/**
 * An RPC URL as it may be printed or logged: no password, and no path or query (providers put
 * their API key there: `…/v2/<key>`, `?apikey=`): `https://user:***@host/…`. A local node's
 * URL (no path) is shown whole.
 */
export function describeRpcUrl(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return "(an RPC URL that does not parse)";
  }
  const hidden = (u.pathname !== "/" && u.pathname !== "") || u.search !== "" || u.hash !== "";
  const user = u.username ? `${u.username}${u.password ? ":***" : ""}@` : "";
  return `${u.protocol}//${user}${u.host}${hidden ? "/…" : ""}`;
}

export function explorerTxUrl(profile: Pick<ProfileConfig, "explorerUrl">, hash: string): string {
  return `${profile.explorerUrl}/tx/${hash}`;
}

/** One profile's settings from `<PREFIX>_…` variables. */
function parseProfile(
  def: ProfileDef,
  get: (k: string) => string | undefined,
  ctx: { baseUrl: string; isProduction: boolean },
  problems: string[],
): ProfileConfig {
  const p = def.envPrefix;
  const rpcUrl = get(`${p}_RPC_URL`);
  if (rpcUrl && !/^https?:\/\//.test(rpcUrl)) {
    problems.push(`${p}_RPC_URL: must be an http(s) URL`);
  }
  // A source chain without an RPC URL is refused when first used, not at startup.
  if (!rpcUrl && ctx.isProduction && def.kind === "settlement") {
    problems.push(
      `${p}_RPC_URL: required when APP_ENV=production (local nodes are for development)`,
    );
  }
  const contracts: ProfileConfig["contracts"] = {};
  for (const c of CONTRACT_NAMES) {
    const key = `${p}_${CONTRACT_ENV[c]}`;
    const v = get(key);
    if (v === undefined) continue;
    const problem = addressProblem(key, v);
    if (problem) problems.push(problem);
    else contracts[c] = v as `0x${string}`;
  }
  const batchSettlement: NonNullable<ProfileConfig["batchSettlement"]> = {};
  const batchVars = { settlement: "BATCH_SETTLEMENT", collector: "ERC3009_DEPOSIT_COLLECTOR" };
  for (const [field, name] of Object.entries(batchVars) as [keyof typeof batchVars, string][]) {
    const key = `${p}_${name}_ADDRESS`;
    const v = get(key);
    if (v === undefined) continue;
    const problem = addressProblem(key, v);
    if (problem) problems.push(problem);
    else batchSettlement[field] = v as `0x${string}`;
  }
  const opKey = get(`${p}_OPERATOR_KEY`);
  if (opKey && !privateKey.safeParse(opKey).success) {
    problems.push(`${p}_OPERATOR_KEY: must be a 0x-prefixed 32-byte hex key`);
  }
  const conf = get(`${p}_CONFIRMATIONS`);
  const confirmations = conf === undefined ? (rpcUrl ? 2 : 0) : Number(conf);
  if (!Number.isInteger(confirmations) || confirmations < 0 || confirmations > 1000) {
    problems.push(`${p}_CONFIRMATIONS: must be an integer from 0 to 1000`);
  }
  const start = get(`${p}_START_BLOCK`);
  if (start !== undefined && !/^\d+$/.test(start)) {
    problems.push(`${p}_START_BLOCK: must be a block number`);
  }
  const wei = (suffix: string, dflt: bigint) => {
    const v = get(`${p}_${suffix}`);
    if (v === undefined) return dflt;
    if (!/^\d{1,40}$/.test(v)) {
      problems.push(`${p}_${suffix}: must be an amount in wei (digits only)`);
      return dflt;
    }
    return BigInt(v);
  };
  const gas: GasPolicy = {
    floorWei: wei("GAS_FLOOR_WEI", DEFAULT_GAS_FLOOR_WEI),
    topupWei: wei("GAS_TOPUP_WEI", DEFAULT_GAS_TOPUP_WEI),
    operatorLowWei: wei("OPERATOR_LOW_WEI", DEFAULT_OPERATOR_LOW_WEI),
  };
  if (gas.floorWei > 0n && gas.topupWei < gas.floorWei) {
    problems.push(`${p}_GAS_TOPUP_WEI: must be at least ${p}_GAS_FLOOR_WEI`);
  }
  const explorer = get(`${p}_EXPLORER_URL`) ?? `${ctx.baseUrl}/explorer/${def.name}`;
  const relayersRaw = get(`${p}_RELAYERS`);
  const relayers = relayersRaw === undefined ? DEFAULT_RELAYERS : Number(relayersRaw);
  if (!/^\d{1,3}$/.test(relayersRaw ?? "0") || relayers > 64) {
    problems.push(`${p}_RELAYERS: must be a whole number from 0 to 64`);
  }
  const delayRaw = get(`${p}_GATEWAY_WITHDRAWAL_DELAY_SECONDS`);
  if (
    delayRaw !== undefined &&
    (!/^\d{1,8}$/.test(delayRaw) || BigInt(delayRaw) > MAX_GATEWAY_WITHDRAWAL_DELAY_S)
  ) {
    problems.push(
      `${p}_GATEWAY_WITHDRAWAL_DELAY_SECONDS: must be a whole number of seconds from 0 to ${MAX_GATEWAY_WITHDRAWAL_DELAY_S}`,
    );
  }
  return {
    ...def,
    rpcUrl,
    explorerUrl: explorer.replace(/\/+$/, ""),
    confirmations,
    contracts,
    operatorKey: opKey as `0x${string}` | undefined,
    startBlock: start === undefined ? undefined : BigInt(start),
    gas,
    relayers: Math.min(Number.isInteger(relayers) ? relayers : 0, 64),
    batchSettlement,
    gatewayWithdrawalDelay: delayRaw !== undefined && /^\d{1,8}$/.test(delayRaw)
      ? BigInt(delayRaw)
      : undefined,
  };
}
