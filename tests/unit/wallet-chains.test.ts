import assert from "node:assert/strict";
import { parseChainConfig } from "../../src/chain/profiles.ts";
import { walletChain } from "../../src/chain/wallet-chains.ts";
import type { ChainRuntime } from "../../src/chain/runtime.ts";

const BASE = "https://pay.example.com";

function runtimeOf(env: Record<string, string>, name: string, node = false): ChainRuntime {
  const problems: string[] = [];
  const c = parseChainConfig(env, { baseUrl: BASE, isProduction: false }, problems);
  assert.deepEqual(problems, []);
  const profile = c.sources.find((p) => p.name === name)!;
  return {
    profile,
    chainId: profile.chainId,
    node: node ? {} : undefined,
  } as unknown as ChainRuntime;
}

Deno.test("wallet chains: a local node is added through our /rpc proxy", () => {
  assert.deepEqual(walletChain(runtimeOf({}, "Base_Sepolia", true), BASE), {
    chainId: 84532,
    chainIdHex: "0x14a34",
    name: "Base Sepolia",
    rpcUrl: `${BASE}/rpc/Base_Sepolia`,
    explorerUrl: `${BASE}/explorer/Base_Sepolia`,
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
  });
});

Deno.test("wallet chains: a node on this machine is reached through us too", () => {
  const rt = runtimeOf({ BASE_SEPOLIA_RPC_URL: "http://127.0.0.1:8545" }, "Base_Sepolia");
  assert.equal(walletChain(rt, BASE).rpcUrl, `${BASE}/rpc/Base_Sepolia`);
});

Deno.test("wallet chains: a real network gets its public RPC, never the configured URL", () => {
  const secret = "https://base-sepolia.provider.example/v2/SECRET_KEY";
  const base = walletChain(runtimeOf({ BASE_SEPOLIA_RPC_URL: secret }, "Base_Sepolia"), BASE);
  assert.deepEqual([base.rpcUrl, base.explorerUrl, base.nativeCurrency.symbol], [
    "https://sepolia.base.org",
    "https://sepolia.basescan.org",
    "ETH",
  ]);
  assert.ok(!JSON.stringify(base).includes("SECRET_KEY"));
  const amoy = walletChain(
    runtimeOf(
      { POLYGON_AMOY_RPC_URL: "https://amoy.provider.example/KEY" },
      "Polygon_Amoy_Testnet",
    ),
    BASE,
  );
  assert.deepEqual([amoy.chainIdHex, amoy.nativeCurrency.symbol], ["0x13882", "POL"]);
});
