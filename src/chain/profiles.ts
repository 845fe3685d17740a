/**
 * Chain profiles: the settlement chains (testnet, production) and, later, bridge source chains.
 * A profile is data: chain id, RPC URL (none → a local anvil is started), explorer, confirmation
 * depth and contract addresses, all from configuration. Callers name a profile, never a URL.
 */
import { z } from "zod";

export type ProfileName = "testnet" | "production";
export const SETTLEMENT_PROFILES: readonly ProfileName[] = ["testnet", "production"];

export interface ProfileDef {
  name: ProfileName;
  chainId: number;
  label: string;
  /** Environment variable prefix: TESTNET_RPC_URL, PRODUCTION_RPC_URL, ... */
  envPrefix: string;
  testnet: boolean;
}

/** The table of known chains. Bridge source chains are added here as new rows. */
export const PROFILE_DEFS: Record<ProfileName, ProfileDef> = {
  testnet: {
    name: "testnet",
    chainId: 5042002,
    label: "Settle Testnet",
    envPrefix: "TESTNET",
    testnet: true,
  },
  production: {
    name: "production",
    chainId: 5042,
    label: "Settle",
    envPrefix: "PRODUCTION",
    testnet: false,
  },
};

export const CONTRACT_NAMES = ["TestUSDC", "PaymentRouter", "StreamVault", "EscrowVault"] as const;
export type ContractName = typeof CONTRACT_NAMES[number];

const CONTRACT_ENV: Record<ContractName, string> = {
  TestUSDC: "USDC_ADDRESS",
  PaymentRouter: "PAYMENT_ROUTER_ADDRESS",
  StreamVault: "STREAM_VAULT_ADDRESS",
  EscrowVault: "ESCROW_VAULT_ADDRESS",
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
}

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

export interface ChainConfig {
  profiles: ProfileConfig[];
  receiptTimeoutMs: number;
  pollIntervalMs: number;
  /** Seconds between anvil state dumps, so a killed local node loses little. */
  localStateIntervalSeconds: number;
}

const address = z.string().regex(/^0x[0-9a-fA-F]{40}$/, "must be a 0x address");
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
    const def = PROFILE_DEFS[name as ProfileName];
    if (!def) {
      problems.push(`CHAINS: unknown chain profile "${name}" (known: testnet, production)`);
      continue;
    }
    const p = def.envPrefix;
    const rpcUrl = get(`${p}_RPC_URL`);
    if (rpcUrl && !/^https?:\/\//.test(rpcUrl)) {
      problems.push(`${p}_RPC_URL: must be an http(s) URL`);
    }
    if (!rpcUrl && ctx.isProduction) {
      problems.push(
        `${p}_RPC_URL: required when APP_ENV=production (local nodes are for development)`,
      );
    }
    const contracts: ProfileConfig["contracts"] = {};
    for (const c of CONTRACT_NAMES) {
      const key = `${p}_${CONTRACT_ENV[c]}`;
      const v = get(key);
      if (v === undefined) continue;
      if (address.safeParse(v).success) contracts[c] = v as `0x${string}`;
      else problems.push(`${key}: must be a 0x address`);
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
    profiles.push({
      ...def,
      rpcUrl,
      explorerUrl: explorer.replace(/\/+$/, ""),
      confirmations,
      contracts,
      operatorKey: opKey as `0x${string}` | undefined,
      startBlock: start === undefined ? undefined : BigInt(start),
      gas,
    });
  }
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
    receiptTimeoutMs: int("CHAIN_RECEIPT_TIMEOUT_MS", 60_000, 1),
    pollIntervalMs: int("CHAIN_POLL_INTERVAL_MS", 500, 10),
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

export function explorerTxUrl(profile: Pick<ProfileConfig, "explorerUrl">, hash: string): string {
  return `${profile.explorerUrl}/tx/${hash}`;
}
