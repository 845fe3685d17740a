/**
 * Nonce reads in groups (src/chain/gateway-authorization.ts `authorizationNonceUsed`): reads made
 * while one request is in flight go together in the next JSON-RPC batch, each answered with its
 * own result; a read the batch did not answer (its own error, or a node that refuses batches) is
 * read again alone. Against a tiny JSON-RPC server standing in for the node, which also counts
 * the requests it gets.
 */
import assert from "node:assert/strict";
import { createPublicClient, decodeFunctionData, type Hex, http } from "viem";
import { GatewayVault } from "../../src/chain/contracts/artifacts/index.ts";
import { authorizationNonceUsed } from "../../src/chain/gateway-authorization.ts";
import type { GatewayChain } from "../../src/chain/gateway.ts";
import type { ProfileName } from "../../src/chain/profiles.ts";

const VAULT = "0x" + "7".repeat(40) as `0x${string}`;
const PAYER = "0x" + "a".repeat(40) as `0x${string}`;
/** The nonce's last byte says what the stand-in node answers: 01 used, 00 not, ee refused in a batch. */
const nonce = (i: number, last: "00" | "01" | "ee") =>
  `0x${i.toString(16).padStart(62, "0")}${last}` as Hex;

function node(opts: { refuseBatches?: boolean } = {}) {
  const seen = { batches: 0, singles: 0, batchSizes: [] as number[] };
  const answer = (call: { id: number; params: [{ to: string; data: Hex }] }, inBatch: boolean) => {
    const { args } = decodeFunctionData({ abi: GatewayVault.abi, data: call.params[0].data });
    assert.equal(call.params[0].to.toLowerCase(), VAULT);
    assert.equal((args![0] as string).toLowerCase(), PAYER);
    const last = (args![1] as string).slice(-2);
    if (last === "ee" && inBatch) {
      return { jsonrpc: "2.0", id: call.id, error: { code: -32000, message: "busy" } };
    }
    return {
      jsonrpc: "2.0",
      id: call.id,
      result: `0x${"0".repeat(63)}${last === "01" ? "1" : "0"}`,
    };
  };
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    const body = await req.json();
    if (Array.isArray(body)) {
      seen.batches++;
      seen.batchSizes.push(body.length);
      if (opts.refuseBatches) return new Response("no batches here", { status: 400 });
      return Response.json(body.map((c) => answer(c, true)));
    }
    seen.singles++;
    return Response.json(answer(body, false));
  });
  const url = `http://127.0.0.1:${server.addr.port}`;
  const client = createPublicClient({ transport: http(url, { retryCount: 0 }) });
  const chain = {
    runtime: () => ({ client }),
    contract: () => VAULT,
  } as unknown as GatewayChain;
  return { chain, seen, close: () => server.shutdown() };
}

const read = (chain: GatewayChain, n: Hex) =>
  authorizationNonceUsed(chain, "testnet" as ProfileName, "gateway", PAYER, n);

Deno.test("nonce reads: grouped while one is in flight, each with its own answer", async () => {
  const { chain, seen, close } = node();
  try {
    const nonces = Array.from({ length: 12 }, (_, i) => nonce(i, i % 3 === 0 ? "01" : "00"));
    const got = await Promise.all(nonces.map((n) => read(chain, n)));
    assert.deepEqual(got, nonces.map((_, i) => i % 3 === 0));
    assert.equal(seen.singles, 0);
    assert.equal(seen.batches, 2, "the first read alone, the eleven made meanwhile together");
    assert.deepEqual(seen.batchSizes, [1, 11]);
  } finally {
    await close();
  }
});

Deno.test("nonce reads: one the batch refused is read again alone", async () => {
  const { chain, seen, close } = node();
  try {
    const nonces = [nonce(1, "00"), nonce(2, "ee"), nonce(3, "01"), nonce(4, "ee")];
    assert.deepEqual(await Promise.all(nonces.map((n) => read(chain, n))), [
      false,
      false,
      true,
      false,
    ]);
    assert.equal(seen.singles, 2, "the two refused in their batch");
  } finally {
    await close();
  }
});

Deno.test("nonce reads: a node that refuses batches is asked one by one", async () => {
  const { chain, seen, close } = node({ refuseBatches: true });
  try {
    const nonces = [nonce(1, "01"), nonce(2, "00"), nonce(3, "01")];
    assert.deepEqual(await Promise.all(nonces.map((n) => read(chain, n))), [true, false, true]);
    assert.equal(seen.singles, 3);
  } finally {
    await close();
  }
});
