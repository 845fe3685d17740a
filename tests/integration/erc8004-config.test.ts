/**
 * Configuring the official ERC-8004 registries (the fixtures, deployed as their repository does):
 * the doctor reports a configured pair as paired and at 2.0.0, and fails a mismatched pair (the
 * official identity registry with our reputation registry) naming the variables; a mistyped
 * EIP-55 checksum stops the start naming its variable (and the doctor says so); a recorded
 * reputation registry bound to another identity registry than the configured one is replaced.
 */
import assert from "node:assert/strict";
import { ANVIL_KEYS } from "../helpers/anvil.ts";
import { OFFICIAL } from "../helpers/erc8004.ts";
import { startOnOfficialRegistries } from "../helpers/erc8004-service.ts";
import { ConfigError, loadConfig } from "../../src/config.ts";
import { runDoctor } from "../../src/cli/doctor.ts";
import { deployContracts } from "../../src/chain/deploy.ts";
import { silentLogger } from "../../src/log.ts";

const repAbi = OFFICIAL.ReputationRegistry.abi;

Deno.test("ERC-8004 registries by configuration: doctor, checksums, pairing", async (t) => {
  const on = await startOnOfficialRegistries();
  const { host, svc, identity, configured, pub } = on;
  const chain = svc.deps.chain;
  try {
    await t.step("the doctor checks the pair; a mistyped checksum is refused by name", async () => {
      const base = {
        APP_ENV: "development",
        DATABASE_URL: svc.db.url,
        CHAINS: "testnet",
        TESTNET_RPC_URL: on.rpcUrl,
        TESTNET_OPERATOR_KEY: ANVIL_KEYS[0],
      };
      const checks = async (env: Record<string, string>) =>
        new Map((await runDoctor({ ...base, ...env })).map((c) => [c.name, c]));
      const good = await checks(configured);
      assert.equal(good.get("testnet: ERC-8004 registries paired")?.ok, true);
      assert.match(good.get("testnet: ERC-8004 identity registry version")!.detail, /is 2\.0\.0$/);
      // The official identity registry with our reputation registry (bound to ours): refused.
      const mixed = await checks({ TESTNET_IDENTITY_REGISTRY_ADDRESS: identity });
      const paired = mixed.get("testnet: ERC-8004 registries paired")!;
      assert.equal(paired.ok, false, paired.detail);
      assert.match(paired.fix!, /TESTNET_REPUTATION_REGISTRY_ADDRESS/);
      const typo = `${identity.slice(0, -1)}${identity.at(-1) === "a" ? "b" : "a"}`;
      const mistyped = await checks({ ...configured, TESTNET_IDENTITY_REGISTRY_ADDRESS: typo });
      const named = mistyped.get("configuration: TESTNET_IDENTITY_REGISTRY_ADDRESS");
      assert.equal(named?.ok, false);
      assert.match(named!.detail, /checksum/);
      assert.throws(
        () => loadConfig({ ...base, ...configured, TESTNET_IDENTITY_REGISTRY_ADDRESS: typo }),
        (e: unknown) =>
          e instanceof ConfigError && /TESTNET_IDENTITY_REGISTRY_ADDRESS/.test(e.message),
      );
    });

    await t.step("deploy: a recorded reputation registry bound elsewhere is replaced", async () => {
      // A chain whose identity registry is configured (the official one) but whose reputation
      // registry is ours as recorded, bound to our identity registry: its feedback rates others.
      const live = chain.runtime("testnet");
      const only = {
        ...live,
        profile: { ...live.profile, contracts: { AgentIdentityRegistry: identity } },
        contracts: {
          ...host.deps.chain.runtime("testnet").contracts,
          AgentIdentityRegistry: identity,
        },
      };
      const redeployed = await deployContracts(only, chain.sender, svc.db.sql, silentLogger);
      assert.deepEqual(redeployed, ["AgentReputationRegistry"]);
      const bound = await pub.readContract({
        address: only.contracts.AgentReputationRegistry!,
        abi: repAbi,
        functionName: "getIdentityRegistry",
      });
      assert.equal(bound, identity);
      assert.deepEqual(await deployContracts(only, chain.sender, svc.db.sql, silentLogger), []);
    });
  } finally {
    await on.close();
  }
});
