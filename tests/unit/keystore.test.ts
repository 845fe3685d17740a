import assert from "node:assert/strict";
import {
  KeystoreError,
  openPrivateKey,
  type SealedKey,
  sealPrivateKey,
} from "../../src/chain/keystore.ts";

const MASTER = "0x" + "11".repeat(32);
const OTHER_MASTER = "22".repeat(32);
const PRIVATE_KEY = `0x${"ab".repeat(31)}01` as const;
const ADDRESS = "0x1111111111111111111111111111111111111111";
const OTHER_ADDRESS = "0x2222222222222222222222222222222222222222";
const DECRYPT_MESSAGE = "cannot decrypt wallet key: wrong master key or tampered data";

function randomHex(bytes: number): string {
  return Array.from(crypto.getRandomValues(new Uint8Array(bytes)))
    .map((b) => b.toString(16).padStart(2, "0"))
    .join("");
}

async function assertCannotOpen(master: string, sealed: SealedKey, aad = ADDRESS) {
  await assert.rejects(
    () => openPrivateKey(master, sealed, aad),
    (e: unknown) => {
      assert.ok(e instanceof KeystoreError);
      assert.equal(e.message, DECRYPT_MESSAGE);
      return true;
    },
  );
}

function flipped(bytes: Uint8Array, index = 0): Uint8Array {
  const copy = new Uint8Array(bytes);
  copy[index] ^= 0x01;
  return copy;
}

Deno.test("keystore: seal and open round trip", async () => {
  const sealed = await sealPrivateKey(MASTER, PRIVATE_KEY, ADDRESS);
  assert.equal(sealed.version, 1);
  assert.equal(sealed.keyIv.length, 12);
  assert.equal(sealed.dekIv.length, 12);
  assert.equal(sealed.keyCiphertext.length, 32 + 16); // key + GCM tag
  assert.equal(sealed.dekCiphertext.length, 32 + 16); // DEK + GCM tag
  assert.equal(await openPrivateKey(MASTER, sealed, ADDRESS), PRIVATE_KEY);
  // The master key without its 0x prefix is the same key.
  assert.equal(await openPrivateKey(MASTER.slice(2), sealed, ADDRESS), PRIVATE_KEY);
});

Deno.test("keystore: random keys round trip; uppercase hex opens lowercase", async () => {
  for (let i = 0; i < 20; i++) {
    const master = randomHex(32);
    const key = `0x${randomHex(32)}` as const;
    const sealed = await sealPrivateKey(master, key, ADDRESS);
    assert.equal(await openPrivateKey(master, sealed, ADDRESS), key);
  }
  const upper = `0x${"AB".repeat(32)}` as const;
  const sealed = await sealPrivateKey(MASTER.toUpperCase().replace("0X", "0x"), upper, ADDRESS);
  assert.equal(await openPrivateKey(MASTER, sealed, ADDRESS), upper.toLowerCase());
});

Deno.test("keystore: stored rows as Node Buffers still open", async () => {
  const { Buffer } = await import("node:buffer");
  const sealed = await sealPrivateKey(MASTER, PRIVATE_KEY, ADDRESS);
  const fromDb: SealedKey = {
    version: 1,
    keyCiphertext: Buffer.from(sealed.keyCiphertext),
    keyIv: Buffer.from(sealed.keyIv),
    dekCiphertext: Buffer.from(sealed.dekCiphertext),
    dekIv: Buffer.from(sealed.dekIv),
  };
  assert.equal(await openPrivateKey(MASTER, fromDb, ADDRESS), PRIVATE_KEY);
});

Deno.test("keystore: a wrong master key cannot open", async () => {
  const sealed = await sealPrivateKey(MASTER, PRIVATE_KEY, ADDRESS);
  await assertCannotOpen(OTHER_MASTER, sealed);
});

Deno.test("keystore: any tampering fails to open", async () => {
  const sealed = await sealPrivateKey(MASTER, PRIVATE_KEY, ADDRESS);
  const fields = ["keyCiphertext", "keyIv", "dekCiphertext", "dekIv"] as const;
  for (const field of fields) {
    for (const index of [0, sealed[field].length - 1]) {
      await assertCannotOpen(MASTER, { ...sealed, [field]: flipped(sealed[field], index) });
    }
    await assertCannotOpen(MASTER, { ...sealed, [field]: sealed[field].slice(1) });
    await assertCannotOpen(MASTER, { ...sealed, [field]: new Uint8Array(0) });
  }
  // Swapping the two layers, or taking the DEK of another seal, fails too.
  await assertCannotOpen(MASTER, {
    ...sealed,
    keyCiphertext: sealed.dekCiphertext,
    keyIv: sealed.dekIv,
    dekCiphertext: sealed.keyCiphertext,
    dekIv: sealed.keyIv,
  });
  const other = await sealPrivateKey(MASTER, PRIVATE_KEY, ADDRESS);
  await assertCannotOpen(MASTER, {
    ...sealed,
    dekCiphertext: other.dekCiphertext,
    dekIv: other.dekIv,
  });
  // Malformed records at runtime are the same failure, not a TypeError.
  await assertCannotOpen(MASTER, { ...sealed, version: 2 as 1 });
  await assertCannotOpen(MASTER, { ...sealed, keyIv: null as unknown as Uint8Array });
  await assertCannotOpen(MASTER, null as unknown as SealedKey);
  // The untouched record still opens.
  assert.equal(await openPrivateKey(MASTER, sealed, ADDRESS), PRIVATE_KEY);
});

Deno.test("keystore: a different aad (another wallet row) fails to open", async () => {
  const sealed = await sealPrivateKey(MASTER, PRIVATE_KEY, ADDRESS);
  await assertCannotOpen(MASTER, sealed, OTHER_ADDRESS);
  await assertCannotOpen(MASTER, sealed, ADDRESS.toUpperCase());
  await assertCannotOpen(MASTER, sealed, ADDRESS + " ");
});

Deno.test("keystore: sealing twice gives fresh ciphertexts and IVs", async () => {
  const a = await sealPrivateKey(MASTER, PRIVATE_KEY, ADDRESS);
  const b = await sealPrivateKey(MASTER, PRIVATE_KEY, ADDRESS);
  assert.notDeepEqual(a.keyCiphertext, b.keyCiphertext);
  assert.notDeepEqual(a.keyIv, b.keyIv);
  assert.notDeepEqual(a.dekCiphertext, b.dekCiphertext);
  assert.notDeepEqual(a.dekIv, b.dekIv);
  assert.equal(await openPrivateKey(MASTER, a, ADDRESS), PRIVATE_KEY);
  assert.equal(await openPrivateKey(MASTER, b, ADDRESS), PRIVATE_KEY);
});

Deno.test("keystore: bad master key format is rejected clearly, without echoing it", async () => {
  const sealed = await sealPrivateKey(MASTER, PRIVATE_KEY, ADDRESS);
  const bad = [
    "",
    "11".repeat(31),
    "11".repeat(33),
    "0x" + "11".repeat(31) + "1",
    "zz".repeat(32),
    "0X" + "11".repeat(32),
    " " + "11".repeat(32),
    "11".repeat(32) + "\n",
    undefined as unknown as string,
  ];
  for (const master of bad) {
    for (
      const call of [
        () => sealPrivateKey(master, PRIVATE_KEY, ADDRESS),
        () => openPrivateKey(master, sealed, ADDRESS),
      ]
    ) {
      await assert.rejects(call, (e: unknown) => {
        assert.ok(e instanceof KeystoreError);
        assert.match(e.message, /master key must be 32 bytes as 64 hex characters/);
        if (master) assert.ok(!e.message.includes(master.trim()));
        return true;
      });
    }
  }
});

Deno.test("keystore: bad private key or empty aad refused; errors carry no key material", async () => {
  for (const key of ["0x1234", "ab".repeat(32), `0x${"zz".repeat(32)}`, `0x${"ab".repeat(33)}`]) {
    await assert.rejects(
      () => sealPrivateKey(MASTER, key as `0x${string}`, ADDRESS),
      (e: unknown) => {
        assert.ok(e instanceof KeystoreError);
        assert.match(e.message, /private key must be 0x followed by 64 hex characters/);
        assert.ok(!e.message.includes(key));
        return true;
      },
    );
  }
  await assert.rejects(() => sealPrivateKey(MASTER, PRIVATE_KEY, ""), KeystoreError);
  const sealed = await sealPrivateKey(MASTER, PRIVATE_KEY, ADDRESS);
  await assert.rejects(() => openPrivateKey(MASTER, sealed, ""), KeystoreError);
  await assert.rejects(
    () => openPrivateKey(OTHER_MASTER, sealed, ADDRESS),
    (e: unknown) => {
      const text = String((e as Error).message) + String((e as Error).stack);
      assert.ok(!text.includes(OTHER_MASTER) && !text.includes(PRIVATE_KEY.slice(2)));
      return true;
    },
  );
});
