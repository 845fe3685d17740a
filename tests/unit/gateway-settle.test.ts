/**
 * The settlement batch's call data and the reading of its logs, written by hand for speed
 * (src/chain/gateway-settle.ts), against viem's ABI encoder and event decoder: the same bytes,
 * the same (payer, nonce) pairs.
 */
import assert from "node:assert/strict";
import {
  encodeAbiParameters,
  encodeEventTopics,
  encodeFunctionData,
  getAddress,
  type Hex,
  parseEventLogs,
} from "viem";
import { GatewayVault, TestUSDC } from "../../src/chain/contracts/artifacts/index.ts";
import {
  encodeTransferWithAuthorizations,
  encodeTransferWithAuthorizationsByDomain,
  hasByDomainCall,
  paidInLogs,
} from "../../src/chain/gateway-settle.ts";

const hex = (n: number) =>
  `0x${
    [...crypto.getRandomValues(new Uint8Array(n))].map((b) => b.toString(16).padStart(2, "0"))
      .join("")
  }` as Hex;

function item(sigBytes: number, value = 1_000n) {
  return {
    authorization: {
      from: getAddress(hex(20)), // checksummed: mixed case
      to: hex(20),
      value,
      validAfter: 0n,
      validBefore: BigInt(Math.floor(Date.now() / 1000) + 604_800),
      nonce: hex(32),
    },
    signature: hex(sigBytes),
  };
}

const viaViem = (items: ReturnType<typeof item>[]) =>
  encodeFunctionData({
    abi: GatewayVault.abi,
    functionName: "transferWithAuthorizations",
    args: [items.map((i) => ({ ...i.authorization, signature: i.signature }))],
  });

Deno.test("settlement batch call data: the bytes viem's ABI encoder gives", () => {
  const cases: ReturnType<typeof item>[][] = [
    [],
    [item(65)],
    // ERC-1271 and ERC-6492 signatures: any length, padded to a word (and exactly a word).
    [item(65), item(0), item(32), item(64), item(200, 2n ** 256n - 1n), item(65, 0n)],
    Array.from({ length: 500 }, () => item(65)),
  ];
  for (const items of cases) {
    assert.equal(encodeTransferWithAuthorizations(items), viaViem(items), `${items.length} items`);
  }
});

Deno.test("settlement batch by domain: the bytes viem's ABI encoder gives", () => {
  const tagged = (i: ReturnType<typeof item>, domain: "gateway" | "batched") => ({ ...i, domain });
  const cases = [
    [],
    [tagged(item(65), "gateway")],
    [tagged(item(65), "batched")],
    [
      tagged(item(65), "batched"),
      tagged(item(0), "gateway"),
      tagged(item(200, 2n ** 256n - 1n), "batched"),
      tagged(item(32), "gateway"),
      tagged(item(65), "gateway"),
    ],
    Array.from({ length: 500 }, (_, n) => tagged(item(65), n % 3 ? "batched" : "gateway")),
  ];
  for (const items of cases) {
    const args = (d: string) =>
      items.filter((i) => i.domain === d).map((i) => ({
        ...i.authorization,
        signature: i.signature,
      }));
    assert.equal(
      encodeTransferWithAuthorizationsByDomain(items),
      encodeFunctionData({
        abi: GatewayVault.abi,
        functionName: "transferWithAuthorizationsByDomain",
        args: [args("gateway"), args("batched")],
      }),
      `${items.length} items`,
    );
  }
});

Deno.test("settlement batch call data: out-of-range and malformed fields are refused", () => {
  const bad = [
    { ...item(65), authorization: { ...item(65).authorization, value: -1n } },
    { ...item(65), authorization: { ...item(65).authorization, validBefore: 2n ** 256n } },
    { ...item(65), authorization: { ...item(65).authorization, from: hex(19) } },
    { ...item(65), authorization: { ...item(65).authorization, nonce: hex(31) } },
    { ...item(65), signature: "0xabc" as Hex },
  ];
  for (const b of bad) assert.throws(() => encodeTransferWithAuthorizations([b]));
});

Deno.test("settlement batch logs: the pairs viem's decoder finds, from this vault only", () => {
  const vault = hex(20);
  const other = hex(20);
  const paid = Array.from({ length: 40 }, () => item(65).authorization);
  const logs = paid.flatMap((a, i) => {
    const transferred = {
      address: i % 5 === 0 ? other : vault,
      topics: encodeEventTopics({
        abi: GatewayVault.abi,
        eventName: "PaymentTransferred",
        args: { from: a.from, to: a.to, nonce: a.nonce },
      }) as Hex[],
      data: encodeAbiParameters([{ type: "uint256" }], [a.value]),
    };
    const failed = {
      address: vault,
      topics: encodeEventTopics({
        abi: GatewayVault.abi,
        eventName: "AuthorizationUsed",
        args: { authorizer: a.from, nonce: a.nonce },
      }) as Hex[],
      data: "0x" as Hex,
    };
    return [transferred, failed].map((l, j) => ({
      ...l,
      blockHash: hex(32),
      blockNumber: "0x1",
      logIndex: `0x${(2 * i + j).toString(16)}`,
      transactionHash: hex(32),
      transactionIndex: "0x0",
      removed: false,
    }));
  });
  const expected = new Set(
    parseEventLogs({
      abi: GatewayVault.abi,
      // deno-lint-ignore no-explicit-any
      logs: logs as any,
      eventName: "PaymentTransferred",
    })
      .filter((l) => l.address.toLowerCase() === vault.toLowerCase())
      .map((l) => `${l.args.from.toLowerCase()}:${l.args.nonce.toLowerCase()}`),
  );
  const got = paidInLogs(logs, getAddress(vault));
  assert.equal(expected.size, 32);
  assert.deepEqual([...got].sort(), [...expected].sort());
});

Deno.test("a vault's code tells whether it settles by domain", () => {
  assert.equal(hasByDomainCall(GatewayVault.bytecode), true);
  // A vault of an earlier build has only `transferWithAuthorizations`; any other contract, none.
  const earlier = GatewayVault.bytecode.replace(
    /63([0-9a-f]{8})/g,
    (push, sel) => (push === `63${sel}` && hasByDomainCall(push) ? "6300000000" : push),
  );
  assert.equal(hasByDomainCall(earlier), false);
  assert.equal(hasByDomainCall(TestUSDC.bytecode), false);
  assert.equal(hasByDomainCall(undefined), false);
  assert.equal(hasByDomainCall("0x"), false);
});
