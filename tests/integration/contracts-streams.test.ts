/**
 * StreamVault from the committed artifacts on a real anvil: accrual (rate × elapsed, capped at
 * the deposit) against chain time moved with evm_increaseTime + evm_mine, withdraw, stop's exact
 * split, completion, and a non-sender stop reverting.
 */
import assert from "node:assert/strict";
import {
  type Address,
  getAddress,
  type Hash,
  type Hex,
  keccak256,
  toHex,
  type TransactionReceipt,
} from "viem";
import { StreamVault, TestUSDC } from "../../src/chain/contracts/artifacts/index.ts";
import { ANVIL_KEYS, startAnvil } from "../helpers/anvil.ts";
import { waitFor } from "../helpers/poll.ts";
import { anvilClients, reverts } from "../helpers/contract-kit.ts";

const USDC = 1_000_000n;

Deno.test("contracts: StreamVault on anvil", async (t) => {
  const anvil = await startAnvil({ chainId: 31337 });
  try {
    const { pub, testClient, wallet } = anvilClients(anvil);
    const operator = wallet(ANVIL_KEYS[0]);
    const sender = wallet(ANVIL_KEYS[1]);
    const receiver = wallet(ANVIL_KEYS[2]);
    const other = wallet(ANVIL_KEYS[3]);
    const senderAddr = sender.account.address;
    const receiverAddr = receiver.account.address;

    const gas: Record<string, bigint> = {};
    const mined = async (
      hash: Promise<Hash> | Hash,
      what?: string,
    ): Promise<TransactionReceipt> => {
      const h = await hash;
      const receipt = await waitFor(() => pub.getTransactionReceipt({ hash: h }), {
        timeoutMs: 10_000,
        what: `receipt of ${h}`,
      });
      assert.equal(receipt.status, "success", `transaction ${h} reverted`);
      if (what) gas[what] = receipt.gasUsed;
      return receipt;
    };
    const usdc = getAddress(
      (await mined(operator.deployContract({ abi: TestUSDC.abi, bytecode: TestUSDC.bytecode })))
        .contractAddress!,
    );
    const vault = getAddress(
      (await mined(
        operator.deployContract({
          abi: StreamVault.abi,
          bytecode: StreamVault.bytecode,
          args: [usdc],
        }),
        "deploy",
      )).contractAddress!,
    );
    const balanceOf = (who: Address) =>
      pub.readContract({
        address: usdc,
        abi: TestUSDC.abi,
        functionName: "balanceOf",
        args: [who],
      });
    await mined(operator.writeContract({
      address: usdc,
      abi: TestUSDC.abi,
      functionName: "mint",
      args: [senderAddr, 1_000n * USDC],
    }));
    await mined(sender.writeContract({
      address: usdc,
      abi: TestUSDC.abi,
      functionName: "approve",
      args: [vault, 1_000n * USDC],
    }));

    const accrued = (id: Hex) =>
      pub.readContract({
        address: vault,
        abi: StreamVault.abi,
        functionName: "accrued",
        args: [id],
      });
    const withdrawable = (id: Hex) =>
      pub.readContract({
        address: vault,
        abi: StreamVault.abi,
        functionName: "withdrawable",
        args: [id],
      });
    const getStream = (id: Hex) =>
      pub.readContract({
        address: vault,
        abi: StreamVault.abi,
        functionName: "getStream",
        args: [id],
      });
    /** Moves chain time by `seconds` and mines a block at the new time. */
    const travel = async (seconds: number) => {
      await testClient.increaseTime({ seconds });
      await testClient.mine({ blocks: 1 });
    };
    const blockTime = async () => (await pub.getBlock()).timestamp;
    const id = (s: string) => keccak256(toHex(s));
    const create = async (ref: Hex, rate: bigint, deposit: bigint, what?: string) => {
      const r = await mined(
        sender.writeContract({
          address: vault,
          abi: StreamVault.abi,
          functionName: "create",
          args: [ref, receiverAddr, rate, deposit],
        }),
        what,
      );
      return (await pub.getBlock({ blockNumber: r.blockNumber })).timestamp;
    };

    await t.step("accrual = rate × elapsed, capped at the deposit", async () => {
      const ref = id("accrual");
      const rate = 1_000n; // 0.001 USDC/s
      const deposit = 10n * USDC; // 10,000 s
      const start = await create(ref, rate, deposit, "create");
      for (const dt of [0, 1, 37, 1_000, 8_961]) {
        if (dt) await travel(dt);
        const now = await blockTime();
        const expected = (now - start) * rate;
        assert.equal(await accrued(ref), expected < deposit ? expected : deposit);
      }
      await travel(5_000);
      assert.equal(await accrued(ref), deposit);
    });

    await t.step(
      "withdraw pays accrued minus withdrawn; completion once fully streamed",
      async () => {
        const ref = id("withdraw");
        const rate = 7n;
        const deposit = 1_000n;
        const start = await create(ref, rate, deposit);
        await travel(50);
        const before = await balanceOf(receiverAddr);
        // Anyone may call withdraw; the receiver is always the one paid.
        const r = await mined(
          other.writeContract({
            address: vault,
            abi: StreamVault.abi,
            functionName: "withdraw",
            args: [ref],
          }),
          "withdraw",
        );
        const at = (await pub.getBlock({ blockNumber: r.blockNumber })).timestamp;
        const paid = (at - start) * rate;
        assert.equal(await balanceOf(receiverAddr) - before, paid);
        assert.equal(await withdrawable(ref), 0n);
        await travel(1_000);
        await mined(
          receiver.writeContract({
            address: vault,
            abi: StreamVault.abi,
            functionName: "withdraw",
            args: [ref],
          }),
          "withdraw (completing)",
        );
        assert.equal(await balanceOf(receiverAddr) - before, deposit);
        const s = await getStream(ref);
        assert.equal(s.status, 3); // Completed
        assert.equal(s.withdrawn, deposit);
        await reverts(
          receiver.writeContract({
            address: vault,
            abi: StreamVault.abi,
            functionName: "withdraw",
            args: [ref],
          }),
          "NotActive",
        );
      },
    );

    await t.step(
      "stop: receiver + refund = deposit exactly; a non-sender stop reverts",
      async () => {
        const ref = id("stop");
        const rate = 333n;
        const deposit = 1_000_001n;
        const start = await create(ref, rate, deposit);
        await travel(100);
        await mined(
          receiver.writeContract({
            address: vault,
            abi: StreamVault.abi,
            functionName: "withdraw",
            args: [ref],
          }),
        );
        await travel(200);
        await reverts(
          receiver.writeContract({
            address: vault,
            abi: StreamVault.abi,
            functionName: "stop",
            args: [ref],
          }),
          "NotSender",
        );
        await reverts(
          other.writeContract({
            address: vault,
            abi: StreamVault.abi,
            functionName: "stop",
            args: [ref],
          }),
          "NotSender",
        );
        const [rBefore, sBefore] = [await balanceOf(receiverAddr), await balanceOf(senderAddr)];
        const r = await mined(
          sender.writeContract({
            address: vault,
            abi: StreamVault.abi,
            functionName: "stop",
            args: [ref],
          }),
          "stop",
        );
        const at = (await pub.getBlock({ blockNumber: r.blockNumber })).timestamp;
        const streamed = (at - start) * rate;
        const s = await getStream(ref);
        assert.equal(s.status, 2); // Stopped
        assert.equal(BigInt(s.stopTime), at);
        assert.equal(s.withdrawn, streamed);
        const paidNow = await balanceOf(receiverAddr) - rBefore;
        const refund = await balanceOf(senderAddr) - sBefore;
        assert.equal(refund, deposit - streamed);
        // Everything the receiver got over the stream's life plus the refund is the deposit.
        assert.equal(s.withdrawn + refund, deposit);
        assert.ok(paidNow > 0n);
        // Accrual freezes at the stop time.
        await travel(500);
        assert.equal(await accrued(ref), streamed);
        await reverts(
          sender.writeContract({
            address: vault,
            abi: StreamVault.abi,
            functionName: "stop",
            args: [ref],
          }),
          "NotActive",
        );
        assert.equal(await balanceOf(vault) >= 0n, true);
      },
    );

    await t.step("create refuses a zero rate, a zero deposit and a reused id", async () => {
      await reverts(
        sender.writeContract({
          address: vault,
          abi: StreamVault.abi,
          functionName: "create",
          args: [id("zero"), receiverAddr, 0n, 1n],
        }),
        "RateTooLow",
      );
      await reverts(
        sender.writeContract({
          address: vault,
          abi: StreamVault.abi,
          functionName: "create",
          args: [id("zero"), receiverAddr, 1n, 0n],
        }),
        "ZeroDeposit",
      );
      await reverts(
        sender.writeContract({
          address: vault,
          abi: StreamVault.abi,
          functionName: "create",
          args: [id("stop"), receiverAddr, 1n, 1n],
        }),
        "StreamExists",
      );
      // Nothing stays in the vault beyond live deposits (accrual's stream is fully streamed, unpaid).
      assert.equal(await balanceOf(vault), 10n * USDC);
    });
    console.log("StreamVault gas:", Object.entries(gas).map(([k, v]) => `${k}=${v}`).join(", "));
  } finally {
    await anvil.stop();
  }
});
