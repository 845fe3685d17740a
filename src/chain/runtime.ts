/**
 * A running chain profile: its RPC client, its local node when it has one, its operator account
 * and its contract addresses.
 */
import {
  type Chain as ViemChain,
  createPublicClient,
  defineChain,
  http,
  type LocalAccount,
  parseAbi,
  type PublicClient,
} from "viem";
import { mnemonicToAccount, privateKeyToAccount } from "viem/accounts";
import { join } from "node:path";
import type { Sql } from "../db/client.ts";
import type { Logger } from "../log.ts";
import { ANVIL_MNEMONIC, type LocalNode, startLocalNode } from "./local-node.ts";
import { type ContractName, describeRpcUrl, type ProfileConfig } from "./profiles.ts";
import * as contractsRepo from "./contracts.repo.ts";
import { checkForReset } from "./reset.ts";
import { replayLostTail } from "./lost-tail.ts";
import { deriveRelayers } from "./relayers.ts";

export interface ChainRuntime {
  profile: ProfileConfig;
  chainId: number;
  rpcUrl: string;
  viemChain: ViemChain;
  client: PublicClient;
  node?: LocalNode;
  operator?: LocalAccount;
  /** The CCTP attester our local transmitter trusts (and our local attester signs with). */
  attester?: LocalAccount;
  /** Every key the local attester signs with (the first is `attester`). */
  attesters: LocalAccount[];
  /** The relayer pool (relayers.ts); empty without an operator. */
  relayers: LocalAccount[];
  contracts: Partial<Record<ContractName, `0x${string}`>>;
  /**
   * A configured USDC's EIP-712 name and version as the token reports them (Circle's USDC is
   * "USDC" on testnets, "USD Coin" on Ethereum); unset: ours ("USD Coin", "2").
   */
  usdcEip712?: { name: string; version: string };
  /** Block the log watcher starts from on a fresh cursor. */
  startBlock: bigint;
}

export interface RuntimeOptions {
  sql: Sql;
  log: Logger;
  /** Where local nodes keep their state; omit for throwaway nodes (tests). */
  dataDir?: string;
  stateIntervalSeconds: number;
  /** CCTP_ATTESTER_KEY(S); local nodes default to anvil's account 9. */
  attesterKeys?: `0x${string}`[];
}

export async function startRuntime(
  profile: ProfileConfig,
  opts: RuntimeOptions,
): Promise<ChainRuntime> {
  const log = opts.log.child({ component: "chain", chain: profile.name });
  let node: LocalNode | undefined;
  let rpcUrl = profile.rpcUrl;
  if (!rpcUrl) {
    node = await startLocalNode({
      name: profile.name,
      chainId: profile.chainId,
      stateDir: opts.dataDir ? join(opts.dataDir, "chains", profile.name) : undefined,
      stateIntervalSeconds: opts.stateIntervalSeconds,
      log: opts.log,
    });
    rpcUrl = node.rpcUrl;
  }
  try {
    const viemChain = defineChain({
      id: profile.chainId,
      name: profile.label,
      nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
      rpcUrls: { default: { http: [rpcUrl] } },
      blockExplorers: { default: { name: "Explorer", url: profile.explorerUrl } },
      testnet: profile.testnet,
    });
    const client = createPublicClient({
      chain: viemChain,
      // No block-number cache: the watcher and the sender need the head as it is now.
      cacheTime: 0,
      pollingInterval: 250,
      transport: http(rpcUrl, { retryCount: 1, timeout: 15_000 }),
    }) as PublicClient;
    const actual = await client.getChainId().catch((e) => {
      // Said with the variable to fix and without the URL's key (viem's message names the URL).
      if (node) throw e;
      const reason = (e as { shortMessage?: string }).shortMessage ?? String(e).split("\n")[0];
      throw new Error(
        `${profile.name}: the RPC at ${describeRpcUrl(rpcUrl)} (${profile.envPrefix}_RPC_URL) ` +
          `did not answer: ${reason}`,
      );
    });
    if (actual !== profile.chainId) {
      throw new Error(
        `${profile.name}: the RPC at ${
          describeRpcUrl(rpcUrl)
        } serves chain ${actual}, expected ${profile.chainId}`,
      );
    }
    const operator = node
      ? mnemonicToAccount(ANVIL_MNEMONIC, { addressIndex: 0 })
      : profile.operatorKey
      ? privateKeyToAccount(profile.operatorKey)
      : undefined;

    const attesters: LocalAccount[] = opts.attesterKeys?.length
      ? opts.attesterKeys.map((k) => privateKeyToAccount(k))
      : node
      ? [mnemonicToAccount(ANVIL_MNEMONIC, { addressIndex: 9 })]
      : [];

    await checkForReset(opts.sql, client, profile, log);
    // A node this start loaded from its saved state may have lost its last blocks (killed).
    if (node?.owned && opts.dataDir) await replayLostTail(opts.sql, client, profile.chainId, log);
    const stored = await contractsRepo.list(opts.sql, profile.chainId);
    const contracts: ChainRuntime["contracts"] = { ...profile.contracts };
    for (const c of stored) {
      if (!contracts[c.name as ContractName]) {
        contracts[c.name as ContractName] = c.address as `0x${string}`;
      }
    }
    const usdcEip712 = profile.contracts.TestUSDC
      ? await readEip712(client, profile.contracts.TestUSDC)
      : undefined;
    return {
      profile,
      chainId: profile.chainId,
      usdcEip712,
      rpcUrl,
      viemChain,
      client,
      node,
      operator,
      attester: attesters[0],
      attesters,
      relayers: node
        ? Array.from(
          { length: profile.relayers },
          (_, i) => mnemonicToAccount(ANVIL_MNEMONIC, { addressIndex: 1000 + i }),
        )
        : profile.operatorKey
        ? deriveRelayers(profile.operatorKey, profile.relayers)
        : [],
      contracts,
      startBlock: profile.startBlock ?? (node ? 0n : await client.getBlockNumber()),
    };
  } catch (e) {
    await node?.stop();
    throw e;
  }
}

const EIP712_VIEWS = parseAbi([
  "function name() view returns (string)",
  "function version() view returns (string)",
]);

/** The token's own name and version (what its permits and authorizations are signed over). */
async function readEip712(client: PublicClient, token: `0x${string}`) {
  const [name, version] = await Promise.all(
    (["name", "version"] as const).map((functionName) =>
      client.readContract({ address: token, abi: EIP712_VIEWS, functionName }).catch(() => null)
    ),
  );
  return name ? { name, version: version ?? "2" } : undefined;
}
