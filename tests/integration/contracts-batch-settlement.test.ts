/**
 * X402BatchSettlement and its ERC-3009 collector from the committed artifacts, placed on a bare
 * anvil at the addresses the standard clients expect (by the service's own placement), driven by
 * the unmodified `@x402/evm` batch-settlement client (payloads, vouchers) and facilitator
 * (verify; settle of deposit, claim, settle and refund), then directly: the payer's timed
 * withdrawal, cooperative refunds, and every refusal the binding names. Gas per claimed channel
 * is printed.
 */
import assert from "node:assert/strict";
import {
  type Address,
  getAddress,
  type Hash,
  hashTypedData,
  type Hex,
  publicActions,
  type TransactionReceipt,
  zeroAddress,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import {
  buildChannelConfig,
  computeChannelId,
  createBatchSettlementEIP3009DepositPayload,
  signVoucher,
} from "@x402/evm/batch-settlement/client";
import { BatchSettlementEvmScheme as Facilitator } from "@x402/evm/batch-settlement/facilitator";
import type { FacilitatorEvmSigner } from "@x402/evm";
import {
  TestUSDC,
  X402BatchSettlement,
  X402Erc3009Collector,
} from "../../src/chain/contracts/artifacts/index.ts";
import { compileAll } from "../../src/chain/contracts/compile.ts";
import {
  BATCH_SETTLEMENT_ADDRESS,
  ERC3009_DEPOSIT_COLLECTOR_ADDRESS,
  placeBatchSettlement,
} from "../../src/chain/channels.ts";
import type { ChainRuntime } from "../../src/chain/runtime.ts";
import { silentLogger } from "../../src/log.ts";
import { ANVIL_KEYS, startAnvil } from "../helpers/anvil.ts";
import { waitFor } from "../helpers/poll.ts";
import { anvilClients, reverts } from "../helpers/contract-kit.ts";

const FIXTURES = new URL("../fixtures/contracts/", import.meta.url).pathname;
const MULTICALL3 = "0xcA11bde05977b3631167028862bE2a173976CA11";
const NETWORK = "eip155:31337";
const SETTLEMENT = getAddress(BATCH_SETTLEMENT_ADDRESS);
const abi = X402BatchSettlement.abi;

Deno.test("contracts: x402 batch settlement on anvil", async (t) => {
  const anvil = await startAnvil({ chainId: 31337 });
  try {
    const { pub, wallet, testClient } = anvilClients(anvil);
    const operator = wallet(ANVIL_KEYS[0]);
    const payer = wallet(ANVIL_KEYS[1]);
    const receiver = privateKeyToAccount(ANVIL_KEYS[2]).address;
    const authorizerWallet = wallet(ANVIL_KEYS[3]);
    const authorizer = authorizerWallet.account;
    const mined = async (hash: Promise<Hash> | Hash): Promise<TransactionReceipt> => {
      const h = await hash;
      const receipt = await waitFor(() => pub.getTransactionReceipt({ hash: h }), {
        timeoutMs: 20_000,
        what: `receipt of ${h}`,
      });
      assert.equal(receipt.status, "success", `transaction ${h} reverted`);
      return receipt;
    };
    const usdc = getAddress(
      (await mined(operator.deployContract({ abi: TestUSDC.abi, bytecode: TestUSDC.bytecode })))
        .contractAddress!,
    );
    // The service's own placement, on a runtime that is a local node.
    const rt = {
      profile: { name: "test", kind: "settlement", envPrefix: "TEST", batchSettlement: {} },
      client: pub,
      node: {},
    } as unknown as ChainRuntime;
    await placeBatchSettlement(rt, silentLogger);
    const fixtures = await compileAll(FIXTURES);
    const agg = fixtures.contracts.find((c) => c.contractName === "TryAggregate")!;
    const aggCode = await pub.request({
      method: "eth_call",
      params: [{ data: agg.bytecode }, "latest"],
    } as never) as Hex;
    await testClient.setCode({ address: MULTICALL3, bytecode: aggCode });

    const balanceOf = (who: Address) =>
      pub.readContract({
        address: usdc,
        abi: TestUSDC.abi,
        functionName: "balanceOf",
        args: [who],
      });
    const mint = async (to: Address, amount: bigint) =>
      await mined(operator.writeContract({
        address: usdc,
        abi: TestUSDC.abi,
        functionName: "mint",
        args: [to, amount],
      }));
    const channel = (id: Hex) =>
      pub.readContract({ address: SETTLEMENT, abi, functionName: "channels", args: [id] });
    await mint(payer.account.address, 1_000_000n);

    // The standard facilitator, with a receipt wait that polls (anvil mines only on demand).
    const client = operator.extend(publicActions);
    const facilitatorSigner: FacilitatorEvmSigner = {
      getAddresses: () => [operator.account.address],
      readContract: (a) => client.readContract(a as never),
      verifyTypedData: (a) => client.verifyTypedData(a as never),
      writeContract: (a) => client.writeContract(a as never),
      sendTransaction: (a) => client.sendTransaction(a as never),
      waitForTransactionReceipt: ({ hash }) =>
        waitFor(() => pub.getTransactionReceipt({ hash }), { timeoutMs: 20_000 }),
      getCode: (a) => client.getCode(a),
    };
    const facilitator = new Facilitator(facilitatorSigner, authorizer);
    const requirements = {
      scheme: "batch-settlement",
      network: NETWORK,
      amount: "1000",
      asset: usdc,
      payTo: receiver,
      maxTimeoutSeconds: 300,
      extra: {
        name: "USD Coin",
        version: "2",
        receiverAuthorizer: authorizer.address,
        withdrawDelay: 900,
      },
    } as const;
    const payerSigner = payer.account;
    const config = buildChannelConfig(
      { signer: payerSigner, storage: undefined as never, salt: `0x${"00".repeat(32)}` },
      requirements,
    );
    const id = computeChannelId(config, NETWORK);
    const envelope = (payload: unknown) => ({
      x402Version: 2,
      accepted: requirements,
      payload: payload as Record<string, unknown>,
    });

    await t.step(
      "placed at the canonical addresses; ids and digests are the standard's",
      async () => {
        assert.notEqual(await pub.getCode({ address: SETTLEMENT }), undefined);
        const collector = getAddress(ERC3009_DEPOSIT_COLLECTOR_ADDRESS);
        assert.equal(
          await pub.readContract({
            address: collector,
            abi: X402Erc3009Collector.abi,
            functionName: "settlement",
          }),
          SETTLEMENT,
        );
        assert.equal(
          await pub.readContract({
            address: SETTLEMENT,
            abi,
            functionName: "getChannelId",
            args: [config],
          }),
          id,
        );
        const domain = {
          name: "x402 Batch Settlement",
          version: "1",
          chainId: 31337,
          verifyingContract: SETTLEMENT,
        };
        assert.equal(
          await pub.readContract({
            address: SETTLEMENT,
            abi,
            functionName: "getVoucherDigest",
            args: [id, 5n],
          }),
          hashTypedData({
            domain,
            types: {
              Voucher: [{ name: "channelId", type: "bytes32" }, {
                name: "maxClaimableAmount",
                type: "uint128",
              }],
            },
            primaryType: "Voucher",
            message: { channelId: id, maxClaimableAmount: 5n },
          }),
        );
        const [name, version, chainId, verifying] = (await pub.readContract({
          address: SETTLEMENT,
          abi,
          functionName: "eip712Domain",
        })).slice(1, 5) as [string, string, bigint, Address];
        assert.deepEqual([name, version, chainId, verifying], [
          "x402 Batch Settlement",
          "1",
          31337n,
          SETTLEMENT,
        ]);
        // Placing again changes nothing (a restarted node keeps its channels).
        const before = await pub.getCode({ address: SETTLEMENT });
        await placeBatchSettlement(rt, silentLogger);
        assert.equal(await pub.getCode({ address: SETTLEMENT }), before);
      },
    );

    await t.step("the standard facilitator verifies and settles a deposit", async () => {
      const deposit = await createBatchSettlementEIP3009DepositPayload(
        payerSigner,
        2,
        requirements,
        config,
        "100000",
        "1000",
      );
      const v = await facilitator.verify(envelope(deposit.payload), requirements);
      assert.equal(v.isValid, true, JSON.stringify(v));
      const s = await facilitator.settle(envelope(deposit.payload), requirements);
      assert.equal(s.success, true, JSON.stringify(s));
      assert.deepEqual(await channel(id), [100_000n, 0n]);
      assert.equal(await balanceOf(payer.account.address), 900_000n);
      // The same authorization again: the token refuses it (the nonce is spent).
      const again = await facilitator.settle(envelope(deposit.payload), requirements);
      assert.equal(again.success, false);
      assert.deepEqual(await channel(id), [100_000n, 0n]);
    });

    const voucher = (max: bigint, signer = payerSigner) =>
      signVoucher(signer, id, max.toString(), NETWORK);
    const claimRow = async (max: bigint, total = max) => ({
      voucher: { channel: config, maxClaimableAmount: max.toString() },
      signature: (await voucher(max)).signature,
      totalClaimed: total.toString(),
    });

    await t.step("vouchers: verified against balance, claims and the payer's key", async () => {
      const ok = await facilitator.verify(
        envelope({ type: "voucher", channelConfig: config, voucher: await voucher(3000n) }),
        requirements,
      );
      assert.equal(ok.isValid, true, JSON.stringify(ok));
      assert.equal((ok.extra as Record<string, unknown>).balance, "100000");
      const over = await facilitator.verify(
        envelope({ type: "voucher", channelConfig: config, voucher: await voucher(100_001n) }),
        requirements,
      );
      assert.equal(over.invalidReason, "invalid_batch_settlement_evm_cumulative_exceeds_balance");
      const forged = await facilitator.verify(
        envelope({
          type: "voucher",
          channelConfig: config,
          voucher: await voucher(3000n, authorizer),
        }),
        requirements,
      );
      assert.equal(forged.invalidReason, "invalid_batch_settlement_evm_voucher_signature");
    });

    await t.step(
      "a claim (receiver authorizer's signature) and a settle pay the receiver",
      async () => {
        const claimed = await facilitator.settle(
          envelope({ type: "claim", claims: [await claimRow(3000n)] }),
          requirements,
        );
        assert.equal(claimed.success, true, JSON.stringify(claimed));
        assert.deepEqual(await channel(id), [100_000n, 3000n]);
        assert.deepEqual(
          await pub.readContract({
            address: SETTLEMENT,
            abi,
            functionName: "receivers",
            args: [receiver, usdc],
          }),
          [3000n, 0n],
        );
        // The same claim again changes nothing (claims are cumulative).
        const again = await facilitator.settle(
          envelope({ type: "claim", claims: [await claimRow(3000n)] }),
          requirements,
        );
        assert.equal(again.success, true);
        assert.deepEqual(await channel(id), [100_000n, 3000n]);
        const settled = await facilitator.settle(
          envelope({ type: "settle", receiver, token: usdc }),
          requirements,
        );
        assert.equal(settled.success, true, JSON.stringify(settled));
        assert.equal(settled.amount, "3000");
        assert.equal(await balanceOf(receiver), 3000n);
      },
    );

    await t.step("a cooperative refund claims what is owed and returns the rest", async () => {
      const row = await claimRow(5000n);
      const refunded = await facilitator.settle(
        envelope({
          type: "refund",
          channelConfig: config,
          voucher: await voucher(5000n),
          amount: "10000",
          refundNonce: "0",
          claims: [row],
        }),
        requirements,
      );
      assert.equal(refunded.success, true, JSON.stringify(refunded));
      assert.equal(refunded.amount, "10000");
      assert.deepEqual(await channel(id), [90_000n, 5000n]);
      assert.equal(await balanceOf(payer.account.address), 910_000n);
      assert.equal(
        await pub.readContract({
          address: SETTLEMENT,
          abi,
          functionName: "refundNonce",
          args: [id],
        }),
        1n,
      );
    });

    await t.step("refusals: roles, signatures, nonces, bounds", async () => {
      const stranger = wallet(ANVIL_KEYS[2]);
      const other = wallet(ANVIL_KEYS[0]);
      const row = (r: Awaited<ReturnType<typeof claimRow>>) => ({
        voucher: { channel: config, maxClaimableAmount: BigInt(r.voucher.maxClaimableAmount) },
        signature: r.signature as Hex,
        totalClaimed: BigInt(r.totalClaimed),
      });
      // Only the receiver side claims without a signature.
      await reverts(
        other.writeContract({
          address: SETTLEMENT,
          abi,
          functionName: "claim",
          args: [[row(await claimRow(6000n))]],
        }),
        "NotReceiverSide",
      );
      await reverts(
        authorizerWallet.writeContract({
          address: SETTLEMENT,
          abi,
          functionName: "claim",
          args: [[]],
        }),
        "EmptyBatch",
      );
      // Above the voucher, above the balance, or a voucher the payer did not sign.
      await reverts(
        authorizerWallet.writeContract({
          address: SETTLEMENT,
          abi,
          functionName: "claim",
          args: [[row(await claimRow(6000n, 6001n))]],
        }),
        "ClaimExceedsVoucher",
      );
      await reverts(
        authorizerWallet.writeContract({
          address: SETTLEMENT,
          abi,
          functionName: "claim",
          args: [[row(await claimRow(95_000n))]],
        }),
        "ClaimExceedsBalance",
      );
      const forged = {
        ...row(await claimRow(6000n)),
        signature: (await voucher(6000n, authorizer)).signature,
      };
      await reverts(
        authorizerWallet.writeContract({
          address: SETTLEMENT,
          abi,
          functionName: "claim",
          args: [[forged]],
        }),
        "InvalidVoucherSignature",
      );
      // A relayed claim needs the receiver authorizer's signature over exactly these rows.
      const badBatchSig = (await voucher(6000n)).signature;
      await reverts(
        other.writeContract({
          address: SETTLEMENT,
          abi,
          functionName: "claimWithSignature",
          args: [[row(await claimRow(6000n))], badBatchSig],
        }),
        "InvalidSignature",
      );
      // A signed refund at a stale nonce; a direct refund by anyone but the receiver side.
      await reverts(
        other.writeContract({
          address: SETTLEMENT,
          abi,
          functionName: "refundWithSignature",
          args: [config, 1n, 0n, badBatchSig],
        }),
        "InvalidRefundNonce",
      );
      await reverts(
        other.writeContract({
          address: SETTLEMENT,
          abi,
          functionName: "refund",
          args: [config, 1n],
        }),
        "NotReceiverSide",
      );
      // Only the settlement contract may make the collector pull a payer's authorization.
      await reverts(
        other.writeContract({
          address: getAddress(ERC3009_DEPOSIT_COLLECTOR_ADDRESS),
          abi: X402Erc3009Collector.abi,
          functionName: "collect",
          args: [payer.account.address, usdc, 1n, id, "0x"],
        }),
        "NotSettlement",
      );
      // A withdrawal delay out of the binding's bounds; a stranger's withdrawal.
      await reverts(
        other.writeContract({
          address: SETTLEMENT,
          abi,
          functionName: "deposit",
          args: [
            { ...config, withdrawDelay: 60 },
            1n,
            getAddress(ERC3009_DEPOSIT_COLLECTOR_ADDRESS),
            "0x",
          ],
        }),
        "WithdrawDelayOutOfRange",
      );
      await reverts(
        stranger.writeContract({
          address: SETTLEMENT,
          abi,
          functionName: "initiateWithdraw",
          args: [config, 1n],
        }),
        "NotPayerSide",
      );
      assert.deepEqual(await channel(id), [90_000n, 5000n]);
    });

    await t.step(
      "the payer's timed withdrawal: a grace period to claim, then the rest",
      async () => {
        const available = 85_000n;
        await reverts(
          payer.writeContract({
            address: SETTLEMENT,
            abi,
            functionName: "initiateWithdraw",
            args: [config, available + 1n],
          }),
          "WithdrawExceedsAvailable",
        );
        await mined(payer.writeContract({
          address: SETTLEMENT,
          abi,
          functionName: "initiateWithdraw",
          args: [config, available],
        }));
        const [pendingAmount, initiatedAt] = await pub.readContract({
          address: SETTLEMENT,
          abi,
          functionName: "pendingWithdrawals",
          args: [id],
        });
        assert.equal(pendingAmount, available);
        assert.ok(initiatedAt > 0);
        await reverts(
          payer.writeContract({
            address: SETTLEMENT,
            abi,
            functionName: "finalizeWithdraw",
            args: [config],
          }),
          "WithdrawNotReady",
        );
        // During the grace period the receiver side claims an outstanding voucher.
        const r = await claimRow(20_000n);
        await mined(authorizerWallet.writeContract({
          address: SETTLEMENT,
          abi,
          functionName: "claim",
          args: [[{
            voucher: { channel: config, maxClaimableAmount: 20_000n },
            signature: r.signature as Hex,
            totalClaimed: 20_000n,
          }]],
        }));
        // A cooperative refund meanwhile reduces the pending withdrawal by what it paid.
        await mined(authorizerWallet.writeContract({
          address: SETTLEMENT,
          abi,
          functionName: "refund",
          args: [config, 1000n],
        }));
        const [reduced] = await pub.readContract({
          address: SETTLEMENT,
          abi,
          functionName: "pendingWithdrawals",
          args: [id],
        });
        assert.equal(reduced, available - 1000n);
        await testClient.increaseTime({ seconds: 900 });
        await testClient.mine({ blocks: 1 });
        const before = await balanceOf(payer.account.address);
        await mined(
          payer.writeContract({
            address: SETTLEMENT,
            abi,
            functionName: "finalizeWithdraw",
            args: [config],
          }),
        );
        // Capped at what was unclaimed when it was finalized: 89,000 - 20,000 claimed.
        assert.equal(await balanceOf(payer.account.address), before + 69_000n);
        assert.deepEqual(await channel(id), [20_000n, 20_000n]);
        // Claims above what is left are refused; the claimed part is still the receiver's.
        await reverts(
          authorizerWallet.writeContract({
            address: SETTLEMENT,
            abi,
            functionName: "claim",
            args: [[{
              voucher: { channel: config, maxClaimableAmount: 30_000n },
              signature: (await voucher(30_000n)).signature,
              totalClaimed: 30_000n,
            }]],
          }),
          "ClaimExceedsBalance",
        );
        await mined(
          operator.writeContract({
            address: SETTLEMENT,
            abi,
            functionName: "settle",
            args: [receiver, usdc],
          }),
        );
        assert.equal(await balanceOf(receiver), 20_000n);
        assert.equal(await balanceOf(SETTLEMENT), 0n);
      },
    );

    await t.step("one claim covers many channels: gas per channel", async () => {
      const n = 20;
      const rows = [];
      for (let i = 0; i < n; i++) {
        const key = `0x${(0xbeef00 + i).toString(16).padStart(64, "0")}` as Hex;
        const buyer = privateKeyToAccount(key);
        await mint(buyer.address, 10_000n);
        const cfg = {
          ...config,
          payer: buyer.address,
          payerAuthorizer: i % 2 ? buyer.address : zeroAddress,
        };
        const d = await createBatchSettlementEIP3009DepositPayload(
          buyer,
          2,
          // The chain's clock is 900 s ahead of ours since the withdrawal above.
          { ...requirements, maxTimeoutSeconds: 3600 },
          cfg,
          "10000",
          "1000",
        );
        const s = await facilitator.settle(envelope(d.payload), requirements);
        assert.equal(s.success, true, JSON.stringify(s));
        const cid = computeChannelId(cfg, NETWORK);
        rows.push({
          voucher: { channel: cfg, maxClaimableAmount: "7000" },
          signature: (await signVoucher(buyer, cid, "7000", NETWORK)).signature,
          totalClaimed: "7000",
        });
      }
      const one = await facilitator.settle(
        envelope({ type: "claim", claims: rows.slice(0, 1) }),
        requirements,
      );
      const many = await facilitator.settle(
        envelope({ type: "claim", claims: rows.slice(1) }),
        requirements,
      );
      assert.equal(one.success && many.success, true);
      const gas = async (h: string) =>
        (await pub.getTransactionReceipt({ hash: h as Hash })).gasUsed;
      const g1 = await gas(one.transaction);
      const gn = await gas(many.transaction);
      const perChannel = (gn - g1) / BigInt(n - 2);
      console.log(
        `X402BatchSettlement claim gas: 1 channel ${g1}, ${n - 1} channels ${gn}, ` +
          `${perChannel} per extra channel (payerAuthorizer ECDSA and payer-signed mixed)`,
      );
      assert.ok(perChannel < 40_000n, `gas per claimed channel ${perChannel}`);
      const settled = await facilitator.settle(
        envelope({ type: "settle", receiver, token: usdc }),
        requirements,
      );
      assert.equal(settled.amount, String(7000 * n));
    });
  } finally {
    await anvil.stop();
  }
});
