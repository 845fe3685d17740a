/** Bridge rules and CCTP message decoding, and the source chain profiles' configuration. */
import assert from "node:assert/strict";
import { concat, pad, toHex } from "viem";
import {
  attestationDelayMs,
  isSupportedSource,
  newReference,
  paymentHookData,
} from "../../src/modules/bridge/bridge.rules.ts";
import { decodeMessage, hookText } from "../../src/chain/cctp.ts";
import { parseChainConfig, SOURCE_CHAIN_DEFS } from "../../src/chain/profiles.ts";

Deno.test("bridge rules", async (t) => {
  await t.step("references are bridge_ and 24 hex characters, unrelated", () => {
    const a = newReference();
    assert.match(a, /^bridge_[0-9a-f]{24}$/);
    assert.notEqual(a, newReference());
  });

  await t.step("attestation backoff: 1, 2, 4 … seconds, capped at 30", () => {
    assert.deepEqual(
      [1, 2, 3, 4, 5, 6, 7, 20].map((n) => attestationDelayMs(n)),
      [1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000],
    );
  });

  await t.step("only the five spec ids are source chains", () => {
    for (const id of Object.keys(SOURCE_CHAIN_DEFS)) assert.ok(isSupportedSource(id), id);
    for (const id of ["Settle_Testnet", "testnet", "base_sepolia", "Solana_Devnet", ""]) {
      assert.equal(isSupportedSource(id), false, id);
    }
  });

  await t.step("a v2 burn message decodes field by field; hook data is the reference", () => {
    const hook = paymentHookData("pay_ref_abc123");
    assert.equal(hookText(hook), "pay_ref_abc123");
    assert.equal(hookText("0x"), null);
    assert.equal(hookText("0xff"), null, "not UTF-8");
    const word = (n: bigint) => pad(toHex(n), { size: 32 });
    const recipient = pad("0x5B38Da6a701c568545dCfcB03FcB875f56beddC4", { size: 32 });
    const body = concat([
      toHex(1, { size: 4 }),
      pad("0x00000000000000000000000000000000000000aa", { size: 32 }),
      recipient,
      word(10_000_000n),
      pad("0x00000000000000000000000000000000000000bb", { size: 32 }),
      word(5n),
      word(0n),
      word(0n),
      hook,
    ]);
    const message = concat([
      toHex(1, { size: 4 }),
      toHex(6, { size: 4 }),
      toHex(26, { size: 4 }),
      word(7n),
      pad("0x00000000000000000000000000000000000000cc", { size: 32 }),
      pad("0x00000000000000000000000000000000000000dd", { size: 32 }),
      word(0n),
      toHex(2000, { size: 4 }),
      toHex(1000, { size: 4 }),
      body,
    ]);
    const m = decodeMessage(message)!;
    assert.deepEqual(
      [m.version, m.sourceDomain, m.destinationDomain, m.minFinalityThreshold],
      [1, 6, 26, 2000],
    );
    assert.equal(m.finalityThresholdExecuted, 1000);
    assert.equal(m.nonce, word(7n));
    assert.equal(m.decodedMessageBody!.mintRecipient, recipient);
    assert.equal(m.decodedMessageBody!.amount, "10000000");
    assert.equal(m.decodedMessageBody!.maxFee, "5");
    assert.equal(m.decodedMessageBody!.hookData, hook);
    assert.equal(decodeMessage("0x1234"), null, "shorter than a header");
  });
});

Deno.test("source chain profiles: real ids and domains, RPC optional even in production", () => {
  assert.deepEqual(
    Object.values(SOURCE_CHAIN_DEFS).map((d) => [d.name, d.chainId, d.cctpDomain]),
    [
      ["Arbitrum_Sepolia", 421614, 3],
      ["Base_Sepolia", 84532, 6],
      ["Optimism_Sepolia", 11155420, 2],
      ["Ethereum_Sepolia", 11155111, 0],
      ["Polygon_Amoy_Testnet", 80002, 7],
    ],
  );
  const problems: string[] = [];
  const config = parseChainConfig(
    {
      TESTNET_RPC_URL: "https://rpc.example",
      PRODUCTION_RPC_URL: "https://rpc2.example",
      BASE_SEPOLIA_RPC_URL: "https://sepolia.base.example",
      BASE_SEPOLIA_TOKEN_MESSENGER_ADDRESS: "0x8FE6B999Dc680CcFDD5Bf7EB0974218be2542DAA",
      CCTP_ATTESTATION_API_URL: "https://iris-api-sandbox.circle.com/",
    },
    { baseUrl: "https://pay.example", isProduction: true },
    problems,
  );
  assert.deepEqual(problems, [], "no source chain RPC is required to start");
  const base = config.sources.find((s) => s.name === "Base_Sepolia")!;
  assert.equal(base.rpcUrl, "https://sepolia.base.example");
  assert.equal(base.contracts.TokenMessengerV2, "0x8FE6B999Dc680CcFDD5Bf7EB0974218be2542DAA");
  assert.equal(config.cctp.attestationApiUrl, "https://iris-api-sandbox.circle.com");
  assert.equal(config.sources.length, 5);

  const bad: string[] = [];
  parseChainConfig(
    {
      CCTP_ATTESTER_KEY: "0x1234",
      CCTP_ATTESTATION_API_URL: "ftp://x",
      OPTIMISM_SEPOLIA_RPC_URL: "nope",
    },
    { baseUrl: "http://127.0.0.1", isProduction: false },
    bad,
  );
  assert.deepEqual(bad.sort(), [
    "CCTP_ATTESTATION_API_URL: must be an http(s) URL",
    "CCTP_ATTESTER_KEY: must be a 0x-prefixed 32-byte hex key",
    "OPTIMISM_SEPOLIA_RPC_URL: must be an http(s) URL",
  ]);
});
