/** The fast local signature check agrees with viem's typed-data recovery, and refuses high s. */
import assert from "node:assert/strict";
import { type Hex, recoverTypedDataAddress, toHex } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { secp256k1 } from "@noble/curves/secp256k1";
import { signedByEoa } from "../../src/chain/authorization-check.ts";
import { TRANSFER_WITH_AUTHORIZATION_TYPES } from "../../src/chain/eip3009.ts";

const domain = {
  name: "GatewayWalletBatched",
  version: "1",
  chainId: 5042002,
  verifyingContract: "0x0077777d7EBA4688BDeF3E311b846F25870A19B9",
} as const;

Deno.test("signedByEoa agrees with viem; high-s, other domain, other payer refused", async () => {
  for (let i = 0; i < 10; i++) {
    const account = privateKeyToAccount(generatePrivateKey());
    const message = {
      from: account.address,
      to: privateKeyToAccount(generatePrivateKey()).address,
      value: BigInt(i + 1) * 1000n,
      validAfter: 0n,
      validBefore: 2n ** 40n,
      nonce: toHex(crypto.getRandomValues(new Uint8Array(32))),
    };
    const typed = {
      domain,
      types: TRANSFER_WITH_AUTHORIZATION_TYPES,
      primaryType: "TransferWithAuthorization" as const,
      message,
    };
    const signature = await account.signTypedData(typed);
    assert.equal(await recoverTypedDataAddress({ ...typed, signature }), account.address);
    assert.equal(signedByEoa(domain, message, signature), true);
    assert.equal(signedByEoa({ ...domain, name: "GatewayVault" }, message, signature), false);
    assert.equal(signedByEoa(domain, { ...message, value: message.value + 1n }, signature), false);
    // The same signature with s flipped to the high half: still recoverable, refused on chain.
    const sig = secp256k1.Signature.fromCompact(signature.slice(2, 130));
    const high = new secp256k1.Signature(sig.r, secp256k1.CURVE.n - sig.s);
    const v = Number.parseInt(signature.slice(130), 16);
    const flipped = `0x${high.toCompactHex()}${(v === 27 ? 28 : 27).toString(16)}` as Hex;
    assert.equal(await recoverTypedDataAddress({ ...typed, signature: flipped }), account.address);
    assert.equal(signedByEoa(domain, message, flipped), false);
    // A second signature of the known payer (the cached key's path): good, then its v flipped
    // (ecrecover would find another address), then another payer's claim.
    const again = { ...message, nonce: toHex(crypto.getRandomValues(new Uint8Array(32))) };
    const second = await account.signTypedData({ ...typed, message: again });
    assert.equal(signedByEoa(domain, again, second), true);
    const wrongV = `${second.slice(0, 130)}${second.endsWith("1b") ? "1c" : "1b"}` as Hex;
    assert.notEqual(
      await recoverTypedDataAddress({ ...typed, message: again, signature: wrongV }).catch(
        () => null,
      ),
      account.address,
    );
    assert.equal(signedByEoa(domain, again, wrongV), false);
    assert.equal(signedByEoa(domain, { ...again, value: again.value + 1n }, second), false);
  }
});
