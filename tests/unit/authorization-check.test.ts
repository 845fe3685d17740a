/**
 * The fast local signature check agrees with viem's typed-data recovery, and refuses high s; on
 * worker threads it answers the same.
 */
import assert from "node:assert/strict";
import { getAddress, hashTypedData, type Hex, recoverTypedDataAddress, toHex } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { secp256k1 } from "@noble/curves/secp256k1";
import {
  authorizationDigest,
  authorizationRecoveryJob,
  nativeRecovery,
  signedByEoa as signedByEoaWith,
} from "../../src/chain/authorization-check.ts";
import {
  recoversToOffThread,
  recoveryLaneCounts,
  recoveryLaneReady,
  SLOTS,
  stopRecoveryLane,
} from "../../src/chain/recovery-lane.ts";
import {
  authorizationThreadCounts,
  authorizationThreadsReady,
  signedByEoaOffThread,
  stopAuthorizationThreads,
} from "../../src/chain/authorization-threads.ts";
import { TRANSFER_WITH_AUTHORIZATION_TYPES } from "../../src/chain/eip3009.ts";

const domain = {
  name: "GatewayWalletBatched",
  version: "1",
  chainId: 5042002,
  verifyingContract: "0x0077777d7EBA4688BDeF3E311b846F25870A19B9",
} as const;

Deno.test("libsecp256k1's prebuilt binding loads on linux x64 (CI's and the image's platform)", () => {
  if (Deno.build.os === "linux" && Deno.build.arch === "x86_64") assert.equal(nativeRecovery, true);
});

Deno.test("the authorization digest is viem's hashTypedData; malformed fields throw", () => {
  const rand = (n: number) => toHex(crypto.getRandomValues(new Uint8Array(n)));
  for (let i = 0; i < 50; i++) {
    const d = {
      ...domain,
      chainId: i % 2 ? 31337 : 5042002,
      name: i % 3 ? domain.name : "GatewayVault",
    };
    const message = {
      from: getAddress(rand(20)),
      to: i % 2 ? rand(20) : getAddress(rand(20)),
      value: i === 0 ? 2n ** 256n - 1n : BigInt(i) * 997n,
      validAfter: BigInt(i),
      validBefore: i === 1 ? 0n : 2n ** 48n + BigInt(i),
      nonce: rand(32),
    };
    assert.equal(
      authorizationDigest(d, message),
      hashTypedData({
        domain: d,
        types: TRANSFER_WITH_AUTHORIZATION_TYPES,
        primaryType: "TransferWithAuthorization",
        message,
      }),
    );
  }
  const ok = {
    from: getAddress(rand(20)),
    to: getAddress(rand(20)),
    value: 1n,
    validAfter: 0n,
    validBefore: 1n,
    nonce: rand(32),
  };
  for (
    const bad of [
      { ...ok, from: rand(19) },
      { ...ok, to: `${rand(20)}zz` },
      { ...ok, nonce: rand(31) },
      { ...ok, value: -1n },
      { ...ok, validBefore: 2n ** 256n },
    ]
  ) assert.throws(() => authorizationDigest(domain, bad as typeof ok));
});

for (const engine of ["native", "noble"] as const) {
  Deno.test(`signedByEoa (${engine}) agrees with viem; high-s, other domain, other payer refused`, async () => {
    if (engine === "native" && !nativeRecovery) return;
    const signedByEoa = (...args: Parameters<typeof signedByEoaWith>) =>
      signedByEoaWith(args[0], args[1], args[2], engine);
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
      assert.equal(
        signedByEoa(domain, { ...message, value: message.value + 1n }, signature),
        false,
      );
      // The same signature with s flipped to the high half: still recoverable, refused on chain.
      const sig = secp256k1.Signature.fromCompact(signature.slice(2, 130));
      const high = new secp256k1.Signature(sig.r, secp256k1.CURVE.n - sig.s);
      const v = Number.parseInt(signature.slice(130), 16);
      const flipped = `0x${high.toCompactHex()}${(v === 27 ? 28 : 27).toString(16)}` as Hex;
      assert.equal(
        await recoverTypedDataAddress({ ...typed, signature: flipped }),
        account.address,
      );
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
}

/**
 * `n` signed authorizations of one payer, each with the inline check's answer: those `byOther`
 * picks are signed by another key, and every fifth is checked against a changed amount.
 */
async function mixedCases(n: number, byOther: (i: number) => boolean) {
  const account = privateKeyToAccount(generatePrivateKey());
  const other = privateKeyToAccount(generatePrivateKey());
  return await Promise.all(Array.from({ length: n }, async (_, i) => {
    const message = {
      from: account.address,
      to: other.address,
      value: BigInt(i + 1),
      validAfter: 0n,
      validBefore: 2n ** 40n,
      nonce: toHex(crypto.getRandomValues(new Uint8Array(32))),
    };
    const signature = await (byOther(i) ? other : account).signTypedData({
      domain,
      types: TRANSFER_WITH_AUTHORIZATION_TYPES,
      primaryType: "TransferWithAuthorization",
      message,
    });
    const checked = i % 5 === 4 ? { ...message, value: message.value + 1n } : message;
    return { message: checked, signature, expected: signedByEoaWith(domain, checked, signature) };
  }));
}

Deno.test("signature checks on worker threads answer as inline ones; a stop answers queued checks inline", async () => {
  const cases = await mixedCases(40, (i) => i % 4 === 3);
  assert.equal(cases.filter((c) => c.expected).length, 24);
  try {
    // A pool still loading its workers answers inline, at once.
    stopAuthorizationThreads();
    const cold = { ...authorizationThreadCounts };
    assert.equal(
      await signedByEoaOffThread(domain, cases[0].message, cases[0].signature),
      cases[0].expected,
    );
    assert.equal(authorizationThreadCounts.inline - cold.inline, 1);
    assert.equal(await authorizationThreadsReady(), true);
    // All in one turn of the event loop: they travel to the worker together.
    const before = { ...authorizationThreadCounts };
    const answers = await Promise.all(
      cases.map((c) => signedByEoaOffThread(domain, c.message, c.signature)),
    );
    assert.deepEqual(answers, cases.map((c) => c.expected));
    assert.equal(authorizationThreadCounts.worker - before.worker, cases.length);
    assert.equal(authorizationThreadCounts.inline, before.inline);
    // Stopped with checks in flight: each is still answered, inline.
    const inFlight = cases.map((c) => signedByEoaOffThread(domain, c.message, c.signature));
    stopAuthorizationThreads();
    assert.deepEqual(await Promise.all(inFlight), cases.map((c) => c.expected));
    // And the next check starts the workers again.
    assert.equal(
      await signedByEoaOffThread(domain, cases[0].message, cases[0].signature),
      cases[0].expected,
    );
  } finally {
    stopAuthorizationThreads();
  }
});

Deno.test({
  name:
    "the recovery lane (shared memory, one worker) answers as inline checks; full, or stopped under checks, it answers inline",
  ignore: !nativeRecovery,
  fn: async () => {
    // Every third one signed by another key, every fifth checked against a changed amount.
    const cases = await mixedCases(60, (i) => i % 3 === 2);
    const expected = cases.map((c) => c.expected);
    assert.ok(expected.some((e) => e) && expected.some((e) => !e));
    const ask = (c: (typeof cases)[number]) => {
      const job = authorizationRecoveryJob(domain, c.message, c.signature);
      assert.ok(job, "well-formed, low s: a recovery to do");
      return recoversToOffThread(job);
    };
    try {
      // A lane that is still loading its worker answers inline, at once: the first paid calls
      // after a start do not wait the worker's ~300 ms.
      stopRecoveryLane();
      const cold = { ...recoveryLaneCounts };
      assert.equal(await ask(cases[0]), cases[0].expected);
      assert.equal(recoveryLaneCounts.inline - cold.inline, 1);
      assert.equal(recoveryLaneCounts.worker, cold.worker);
      assert.equal(await recoveryLaneReady(), true);
      const before = { ...recoveryLaneCounts };
      assert.deepEqual(await Promise.all(cases.map(ask)), expected);
      // The worker answered them: none fell back (its slots were free, it had loaded).
      assert.equal(recoveryLaneCounts.worker - before.worker, cases.length);
      assert.equal(recoveryLaneCounts.inline, before.inline);
      // One at a time (each waits for the worker to wake), then more at once than it has slots.
      for (const c of cases.slice(0, 5)) assert.equal(await ask(c), c.expected);
      const many = Array.from({ length: SLOTS * 2 + 7 }, (_, i) => cases[i % cases.length]);
      const full = { ...recoveryLaneCounts };
      assert.deepEqual(await Promise.all(many.map(ask)), many.map((c) => c.expected));
      // Each answered once, by the worker or inline. The lane holds SLOTS at once, so the rest
      // were answered inline: all of them, unless the worker answered a check between this
      // thread's two looks at its slot (preempted there under load), which frees the slot at
      // once for the next; so only "some" is certain, not how many.
      const byWorker = recoveryLaneCounts.worker - full.worker;
      const inline = recoveryLaneCounts.inline - full.inline;
      assert.equal(byWorker + inline, many.length);
      assert.ok(inline > 0, "the lane full: the rest inline");
      assert.ok(byWorker >= SLOTS, "the lane took what it could hold");
      // Stopped with checks in flight: each is answered still (by the worker or inline).
      const inFlight = cases.map(ask);
      stopRecoveryLane();
      assert.deepEqual(await Promise.all(inFlight), expected);
      // And the next check starts a new lane (answered inline until it has loaded).
      assert.deepEqual(await Promise.all(cases.map(ask)), expected);
      assert.equal(await recoveryLaneReady(), true);
      const again = { ...recoveryLaneCounts };
      assert.deepEqual(await Promise.all(cases.map(ask)), expected);
      assert.equal(recoveryLaneCounts.worker - again.worker, cases.length);
    } finally {
      stopRecoveryLane();
    }
  },
});
