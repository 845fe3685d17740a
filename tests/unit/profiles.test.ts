import assert from "node:assert/strict";
import { parseChainConfig, profileForKey } from "../../src/chain/profiles.ts";
import { describeRpcUrl, explorerTxUrl } from "../../src/chain/profiles.ts";

Deno.test("profiles: a key's prefix selects its chain", () => {
  assert.equal(profileForKey("svc_sec_test_abc"), "testnet");
  assert.equal(profileForKey("svc_pub_test_abc"), "testnet");
  assert.equal(profileForKey("svc_sec_abc"), "production");
  assert.equal(profileForKey("svc_pub_abc"), "production");
  assert.equal(profileForKey("svc_live_" + "a".repeat(48)), "production");
  assert.equal(profileForKey("sk_live_abc"), null);
  assert.equal(profileForKey(""), null);
});

Deno.test("profiles: defaults are two local chains with their spec chain ids", () => {
  const problems: string[] = [];
  const c = parseChainConfig(
    {},
    { baseUrl: "http://localhost:3000", isProduction: false },
    problems,
  );
  assert.deepEqual(problems, []);
  assert.deepEqual(c.profiles.map((p) => [p.name, p.chainId, p.rpcUrl, p.confirmations]), [
    ["testnet", 5042002, undefined, 0],
    ["production", 5042, undefined, 0],
  ]);
  assert.equal(
    explorerTxUrl(c.profiles[0], "0xabc"),
    "http://localhost:3000/explorer/testnet/tx/0xabc",
  );
});

Deno.test("profiles: configured chains and their problems", () => {
  const problems: string[] = [];
  const c = parseChainConfig(
    {
      CHAINS: "testnet",
      TESTNET_RPC_URL: "https://rpc.testnet.example",
      TESTNET_EXPLORER_URL: "https://scan.example/",
      TESTNET_USDC_ADDRESS: "0x" + "a".repeat(40),
      TESTNET_CONFIRMATIONS: "5",
      TESTNET_START_BLOCK: "1200",
    },
    { baseUrl: "x", isProduction: true },
    problems,
  );
  assert.deepEqual(problems, []);
  const p = c.profiles[0];
  assert.equal(p.explorerUrl, "https://scan.example");
  assert.equal(p.confirmations, 5);
  assert.equal(p.startBlock, 1200n);
  assert.equal(p.contracts.TestUSDC, "0x" + "a".repeat(40));

  const bad: string[] = [];
  parseChainConfig(
    {
      CHAINS: "testnet,mainnet",
      TESTNET_RPC_URL: "ws://x",
      TESTNET_USDC_ADDRESS: "0x12",
      TESTNET_OPERATOR_KEY: "abc",
      TESTNET_CONFIRMATIONS: "-1",
    },
    { baseUrl: "x", isProduction: false },
    bad,
  );
  assert.equal(bad.length, 5, bad.join("\n"));
  assert.ok(bad.some((b) => b.includes('unknown chain profile "mainnet"')));
});

Deno.test("profiles: gas floor, top-up and operator low mark per chain, in wei", () => {
  const ctx = { baseUrl: "http://localhost:3000", isProduction: false };
  const ok: string[] = [];
  const c = parseChainConfig(
    { CHAINS: "testnet", TESTNET_GAS_FLOOR_WEI: "5", TESTNET_GAS_TOPUP_WEI: "50" },
    ctx,
    ok,
  );
  assert.deepEqual(ok, []);
  assert.deepEqual(c.profiles[0].gas, {
    floorWei: 5n,
    topupWei: 50n,
    operatorLowWei: 10n ** 18n,
  });
  const defaults = parseChainConfig({ CHAINS: "production" }, ctx, []).profiles[0].gas;
  assert.deepEqual(defaults, {
    floorWei: 10n ** 16n,
    topupWei: 10n ** 17n,
    operatorLowWei: 10n ** 18n,
  });
  const bad: string[] = [];
  parseChainConfig(
    { CHAINS: "testnet", TESTNET_GAS_FLOOR_WEI: "1e18", TESTNET_OPERATOR_LOW_WEI: "-1" },
    ctx,
    bad,
  );
  assert.deepEqual(bad, [
    "TESTNET_GAS_FLOOR_WEI: must be an amount in wei (digits only)",
    "TESTNET_OPERATOR_LOW_WEI: must be an amount in wei (digits only)",
  ]);
  const under: string[] = [];
  parseChainConfig({ CHAINS: "testnet", TESTNET_GAS_TOPUP_WEI: "1" }, ctx, under);
  assert.deepEqual(under, ["TESTNET_GAS_TOPUP_WEI: must be at least TESTNET_GAS_FLOOR_WEI"]);
});

Deno.test("profiles: the gateway vault's withdrawal delay, in seconds", () => {
  const ctx = { baseUrl: "http://localhost:3000", isProduction: false };
  const ok: string[] = [];
  const c = parseChainConfig(
    { CHAINS: "testnet,production", TESTNET_GATEWAY_WITHDRAWAL_DELAY_SECONDS: "300" },
    ctx,
    ok,
  );
  assert.deepEqual(ok, []);
  // Unset: the deployment's default (none on a local node, a day on a configured chain).
  assert.deepEqual(c.profiles.map((p) => p.gatewayWithdrawalDelay), [300n, undefined]);
  for (const bad of ["-1", "1.5", "1e3", "31536001"]) {
    const problems: string[] = [];
    parseChainConfig(
      { CHAINS: "testnet", TESTNET_GATEWAY_WITHDRAWAL_DELAY_SECONDS: bad },
      ctx,
      problems,
    );
    assert.deepEqual(problems, [
      "TESTNET_GATEWAY_WITHDRAWAL_DELAY_SECONDS: must be a whole number of seconds from 0 to 31536000",
    ], bad);
  }
});

Deno.test("profiles: a configured address with a wrong EIP-55 checksum is refused by name", () => {
  const ctx = { baseUrl: "x", isProduction: false };
  // The official ERC-8004 identity registry on testnets, correctly checksummed; then one digit
  // mistyped (its case kept), then all lower case and all upper case (no checksum to check).
  const good = "0x8004A818BFB912233c491871b3d84c89A494BD9e";
  const typo = "0x8004A818BFB912233c491871b3d84c89A494BD9f";
  const ok: string[] = [];
  const c = parseChainConfig(
    {
      CHAINS: "testnet",
      TESTNET_IDENTITY_REGISTRY_ADDRESS: good,
      TESTNET_REPUTATION_REGISTRY_ADDRESS: good.toLowerCase(),
      TESTNET_USDC_ADDRESS: `0x${good.slice(2).toUpperCase()}`,
    },
    ctx,
    ok,
  );
  assert.deepEqual(ok, []);
  assert.equal(c.profiles[0].contracts.AgentIdentityRegistry, good);
  const bad: string[] = [];
  const b = parseChainConfig(
    { CHAINS: "testnet", TESTNET_IDENTITY_REGISTRY_ADDRESS: typo },
    ctx,
    bad,
  );
  assert.equal(bad.length, 1, bad.join("\n"));
  assert.match(bad[0], /^TESTNET_IDENTITY_REGISTRY_ADDRESS: the mixed-case \(EIP-55\) checksum/);
  assert.ok(bad[0].includes(typo));
  assert.equal(b.profiles[0].contracts.AgentIdentityRegistry, undefined);
});

Deno.test("describeRpcUrl: no password, no path or query where a provider's key goes", () => {
  const cases: [string, string][] = [
    ["http://127.0.0.1:8545", "http://127.0.0.1:8545"],
    ["http://u:RpcPw@127.0.0.1:9000", "http://u:***@127.0.0.1:9000"],
    ["https://eth-sepolia.g.alchemy.com/v2/abcDEF123secret", "https://eth-sepolia.g.alchemy.com/…"],
    ["https://rpc.example.com/?apikey=secret", "https://rpc.example.com/…"],
    ["https://rpc.example.com/", "https://rpc.example.com"],
    ["not a url", "(an RPC URL that does not parse)"],
  ];
  for (const [url, shown] of cases) assert.equal(describeRpcUrl(url), shown, url);
});
