/**
 * The sender's transaction signing (src/chain/tx-signing.ts) gives the bytes viem's
 * `signTransaction` gives, and their keccak256, for every shape the sender signs: a call, a
 * contract creation, a plain value transfer, zero and large fields, a 384 kB settlement batch.
 */
import assert from "node:assert/strict";
import { type Hex, keccak256 } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import {
  keccak256Bytes,
  keccak256Hex,
  nativeKeccak,
  signEip1559,
} from "../../src/chain/tx-signing.ts";

const bytes = (n: number) => crypto.getRandomValues(new Uint8Array(Math.min(n, 65_536)));
const hexOf = (n: number) => {
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i += 65_536) out.set(bytes(Math.min(65_536, n - i)), i);
  return `0x${out.toHex()}` as Hex;
};

Deno.test("keccak256: the native binding loads here and agrees with viem's", () => {
  if (Deno.build.os === "linux" && Deno.build.arch === "x86_64") assert.equal(nativeKeccak, true);
  for (const n of [0, 1, 31, 32, 135, 136, 137, 1_000, 384_000]) {
    const h = hexOf(n);
    assert.equal(keccak256Hex(h), keccak256(h), `${n} bytes`);
    const b = Uint8Array.fromHex(h.slice(2));
    // A view into a larger buffer hashes only its own bytes.
    const inside = new Uint8Array(b.length + 10);
    inside.set(b, 5);
    assert.equal(`0x${keccak256Bytes(inside.subarray(5, 5 + b.length)).toHex()}`, keccak256(h));
  }
});

Deno.test("EIP-1559 signing: the raw bytes and hash of viem's signTransaction", async () => {
  for (let round = 0; round < 20; round++) {
    const account = privateKeyToAccount(generatePrivateKey());
    const shapes = [
      { to: `0x${"ab".repeat(20)}` as Hex, data: hexOf(68), value: 0n, nonce: 0 },
      { to: undefined, data: hexOf(5_000), value: 0n, nonce: 1 }, // a contract creation
      { to: account.address, data: "0x" as Hex, value: 10n ** 18n, nonce: 127 },
      { to: account.address, data: "0x00" as Hex, value: 1n, nonce: 128 },
      { to: account.address, data: "0x7f" as Hex, value: 2n ** 255n, nonce: 2 ** 40 },
      { to: account.address, data: hexOf(55), value: 0n, nonce: 55 },
      { to: account.address, data: hexOf(56), value: 0n, nonce: 56 },
    ];
    if (round === 0) {
      shapes.push({ to: account.address, data: hexOf(384_000), value: 0n, nonce: 9 });
    }
    for (const s of shapes) {
      const tx = {
        chainId: round % 2 ? 31337 : 5042002,
        nonce: s.nonce,
        to: s.to,
        data: s.data,
        value: s.value,
        gas: round % 3 ? 21_000n : 21_000_000n,
        maxFeePerGas: 1_000_000_000n + BigInt(round),
        maxPriorityFeePerGas: round % 4 ? 1n : 0n,
      };
      const expected = await account.signTransaction({ ...tx, type: "eip1559" });
      const got = await signEip1559(account, tx);
      assert.equal(got.raw, expected, `round ${round}, nonce ${s.nonce}`);
      assert.equal(got.txHash, keccak256(expected));
    }
  }
});
