/**
 * The channel id and the voucher digest built directly are viem's hashTypedData of the same
 * structs; values viem's encoder refuses throw here too.
 */
import assert from "node:assert/strict";
import { getAddress, hashTypedData, type Hex, toHex } from "viem";
import { channelIdOf, voucherDigest } from "../../src/chain/channels.digest.ts";
import {
  BATCH_SETTLEMENT_DOMAIN,
  CHANNEL_CONFIG_TYPES,
  type ChannelConfig,
  VOUCHER_TYPES,
} from "../../src/chain/channels.defs.ts";

const rand = (n: number) => toHex(crypto.getRandomValues(new Uint8Array(n)));

Deno.test("channel ids and voucher digests are viem's hashTypedData; out-of-range values throw", () => {
  for (let i = 0; i < 50; i++) {
    const domain = {
      ...BATCH_SETTLEMENT_DOMAIN,
      chainId: i % 2 ? 31337 : 5042002,
      verifyingContract: getAddress(rand(20)),
    };
    const config: ChannelConfig = {
      payer: rand(20),
      payerAuthorizer: i % 3 ? `0x${"0".repeat(40)}` : getAddress(rand(20)),
      receiver: rand(20),
      receiverAuthorizer: rand(20),
      token: getAddress(rand(20)),
      withdrawDelay: i === 0 ? 2 ** 40 - 1 : 900 + i,
      salt: i === 1 ? `0x${"0".repeat(64)}` : rand(32),
    };
    const id = channelIdOf(domain, config);
    assert.equal(
      id,
      hashTypedData({
        domain,
        types: CHANNEL_CONFIG_TYPES,
        primaryType: "ChannelConfig",
        message: config,
      }),
    );
    const max = i === 0 ? 2n ** 128n - 1n : BigInt(i) * 10_000n;
    assert.equal(
      toHex(voucherDigest(domain, id, max)),
      hashTypedData({
        domain,
        types: VOUCHER_TYPES,
        primaryType: "Voucher",
        message: { channelId: id, maxClaimableAmount: max },
      }),
    );
  }
  const domain = {
    ...BATCH_SETTLEMENT_DOMAIN,
    chainId: 31337,
    verifyingContract: getAddress(rand(20)),
  };
  const ok: ChannelConfig = {
    payer: rand(20),
    payerAuthorizer: rand(20),
    receiver: rand(20),
    receiverAuthorizer: rand(20),
    token: rand(20),
    withdrawDelay: 900,
    salt: rand(32),
  };
  assert.throws(() => channelIdOf(domain, { ...ok, withdrawDelay: 2 ** 40 }), RangeError);
  assert.throws(() => channelIdOf(domain, { ...ok, withdrawDelay: -1 }), RangeError);
  assert.throws(() => channelIdOf(domain, { ...ok, payer: "0x1234" as Hex }), TypeError);
  assert.throws(() => channelIdOf(domain, { ...ok, salt: rand(31) }), TypeError);
  const id = channelIdOf(domain, ok);
  assert.throws(() => voucherDigest(domain, id, 2n ** 128n), RangeError);
  assert.throws(() => voucherDigest(domain, id, -1n), RangeError);
  assert.throws(() => voucherDigest(domain, "0x12", 1n), TypeError);
});
