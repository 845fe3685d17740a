/**
 * A service on the official ERC-8004 registries, selected by configuration: a first process
 * (no workers, no HTTP) owns the local nodes and our other contracts; the official registries
 * (fixtures) are deployed on its testnet node from anvil account 2, as their repository deploys
 * them; the service under test is a second process on the same deployment with
 * TESTNET_IDENTITY_REGISTRY_ADDRESS / TESTNET_REPUTATION_REGISTRY_ADDRESS set to them.
 */
import { createPublicClient, createWalletClient, http, type PublicClient } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { startTestService, type TestService } from "./service.ts";
import { ANVIL_KEYS } from "./anvil.ts";
import { deployOfficialIdentity, deployOfficialReputation } from "./erc8004.ts";

export interface OnOfficial {
  /** The first process: its testnet node and our contracts (its registries are ours). */
  host: TestService;
  /** The service under test, configured with the official registries. */
  svc: TestService;
  identity: `0x${string}`;
  reputation: `0x${string}`;
  /** The two variables as set for `svc`. */
  configured: Record<string, string>;
  pub: PublicClient;
  rpcUrl: string;
  close(): Promise<void>;
}

export async function startOnOfficialRegistries(): Promise<OnOfficial> {
  const host = await startTestService({ workers: false, serve: false });
  try {
    const rt = host.deps.chain.runtime("testnet");
    const pub = createPublicClient({ chain: rt.viemChain, transport: http(rt.rpcUrl) });
    const deployer = createWalletClient({
      account: privateKeyToAccount(ANVIL_KEYS[2]),
      chain: rt.viemChain,
      transport: http(rt.rpcUrl),
    });
    const identity = await deployOfficialIdentity(pub as PublicClient, deployer);
    const reputation = await deployOfficialReputation(pub as PublicClient, deployer, identity);
    const configured = {
      TESTNET_IDENTITY_REGISTRY_ADDRESS: identity,
      TESTNET_REPUTATION_REGISTRY_ADDRESS: reputation,
    };
    const svc = await startTestService({
      sameDeploymentAs: host,
      env: { RATE_LIMITS: "off", ...configured },
    });
    return {
      host,
      svc,
      identity,
      reputation,
      configured,
      pub: pub as PublicClient,
      rpcUrl: rt.rpcUrl,
      close: async () => {
        await svc.close();
        await host.close();
      },
    };
  } catch (e) {
    await host.close();
    throw e;
  }
}
