/**
 * BatchPayout from the committed artifact on a real anvil: a permit relayed by the operator, a
 * chunk of 200 fresh recipients (gas per recipient measured), each transfer on its own (a
 * recipient the token refuses, a payer running dry, a recipient contract that rejects tokens or
 * burns all its gas, a token that returns false), a chunk id paying once, operator only.
 */
import assert from "node:assert/strict";
import {
  type Abi,
  type Address,
  getAddress,
  type Hash,
  type Hex,
  keccak256,
  parseEventLogs,
  parseSignature,
  toHex,
  type TransactionReceipt,
} from "viem";
import { BatchPayout, TestUSDC } from "../../src/chain/contracts/artifacts/index.ts";
import { compileAll } from "../../src/chain/contracts/compile.ts";
import { ANVIL_KEYS, startAnvil } from "../helpers/anvil.ts";
import { waitFor } from "../helpers/poll.ts";
import { anvilClients, PERMIT_TYPES, reverts } from "../helpers/contract-kit.ts";

const USDC = 1_000_000n;
const FIXTURES = new URL("../fixtures/contracts/", import.meta.url).pathname;

Deno.test("contracts: BatchPayout on anvil", async (t) => {
  const fixtures = await compileAll(FIXTURES);
  const fixture = (name: string) => {
    const c = fixtures.contracts.find((x) => x.contractName === name)!;
    return { abi: c.abi as Abi, bytecode: c.bytecode };
  };
  const anvil = await startAnvil({ chainId: 31337 });
  try {
    const { pub, wallet } = anvilClients(anvil);
    const operator = wallet(ANVIL_KEYS[0]);
    const payer = wallet(ANVIL_KEYS[1]);
    const other = wallet(ANVIL_KEYS[2]);
    const payerAddr = payer.account.address;
    const mined = async (hash: Promise<Hash> | Hash): Promise<TransactionReceipt> => {
      const h = await hash;
      const receipt = await waitFor(() => pub.getTransactionReceipt({ hash: h }), {
        timeoutMs: 20_000,
        what: `receipt of ${h}`,
      });
      assert.equal(receipt.status, "success", `transaction ${h} reverted`);
      return receipt;
    };
    const deploy = async (abi: Abi, bytecode: Hex, args: unknown[] = []) =>
      getAddress(
        (await mined(operator.deployContract({ abi, bytecode, args }))).contractAddress!,
      );
    const usdc = await deploy(TestUSDC.abi, TestUSDC.bytecode);
    const batch = await deploy(BatchPayout.abi, BatchPayout.bytecode, [
      usdc,
      operator.account.address,
    ]);
    const balanceOf = (token: Address, who: Address) =>
      pub.readContract({
        address: token,
        abi: TestUSDC.abi,
        functionName: "balanceOf",
        args: [who],
      });
    const recipients = (n: number, seed: number): Address[] =>
      Array.from(
        { length: n },
        (_, i) => getAddress(`0x${(seed * 100_000 + i + 1).toString(16).padStart(40, "0")}`),
      );
    const pay = (
      chunk: string,
      to: Address[],
      amounts: bigint[],
      opts: { from?: typeof operator; payerAddress?: Address; firstIndex?: bigint } = {},
    ) =>
      (opts.from ?? operator).writeContract({
        address: batch,
        abi: BatchPayout.abi,
        functionName: "pay",
        args: [
          keccak256(toHex(chunk)),
          opts.payerAddress ?? payerAddr,
          to,
          amounts,
          opts.firstIndex ?? 0n,
        ],
        // Large chunks get an explicit limit; small ones are simulated first (reverts surface).
        gas: to.length > 50 ? 25_000_000n : undefined,
      });
    const results = (receipt: TransactionReceipt) =>
      parseEventLogs({ abi: BatchPayout.abi, logs: receipt.logs, eventName: "Payout" })
        .map((l) => ({
          index: Number(l.args.index),
          recipient: l.args.recipient,
          amount: l.args.amount,
          ok: l.args.ok,
        }));

    await mined(operator.writeContract({
      address: usdc,
      abi: TestUSDC.abi,
      functionName: "mint",
      args: [payerAddr, 10_000n * USDC],
    }));

    await t.step("the operator relays the payer's permit; nobody else may", async () => {
      const deadline = BigInt(Math.floor(Date.now() / 1000) + 3600);
      const signature = await payer.signTypedData({
        domain: { name: "USD Coin", version: "2", chainId: anvil.chainId, verifyingContract: usdc },
        types: PERMIT_TYPES,
        primaryType: "Permit",
        message: {
          owner: payerAddr,
          spender: batch,
          value: 2n ** 256n - 1n,
          nonce: 0n,
          deadline,
        },
      });
      const { v, r, s } = parseSignature(signature);
      const args = [payerAddr, 2n ** 256n - 1n, deadline, Number(v), r, s] as const;
      await reverts(
        other.writeContract({ address: batch, abi: BatchPayout.abi, functionName: "permit", args }),
        "NotOperator",
      );
      await mined(
        operator.writeContract({
          address: batch,
          abi: BatchPayout.abi,
          functionName: "permit",
          args,
        }),
      );
      // Relayed twice (a retry after a crash): the used permit is ignored, not a revert.
      await mined(
        operator.writeContract({
          address: batch,
          abi: BatchPayout.abi,
          functionName: "permit",
          args,
        }),
      );
      const allowance = await pub.readContract({
        address: usdc,
        abi: TestUSDC.abi,
        functionName: "allowance",
        args: [payerAddr, batch],
      });
      assert.equal(allowance, 2n ** 256n - 1n);
    });

    await t.step("200 fresh recipients in one transaction; gas per recipient", async () => {
      const one = await mined(pay("gas-1", recipients(1, 1), [USDC]));
      const to = recipients(200, 2);
      const amounts = to.map((_, i) => BigInt(i + 1) * 1000n);
      const receipt = await mined(pay("gas-200", to, amounts, { firstIndex: 7n }));
      const r = results(receipt);
      assert.equal(r.length, 200);
      assert.ok(r.every((x, i) => x.ok && x.index === i + 7 && x.recipient === to[i]));
      for (const i of [0, 99, 199]) assert.equal(await balanceOf(usdc, to[i]), amounts[i]);
      const perRecipient = (receipt.gasUsed - one.gasUsed) / 199n;
      // Fits a 30M-gas block with room to spare at 200 per chunk.
      const maxPerBlock = 30_000_000n / perRecipient;
      console.log(
        `BatchPayout gas: 1 recipient ${one.gasUsed}, 200 recipients ${receipt.gasUsed}, ` +
          `${perRecipient} per extra recipient, about ${maxPerBlock} recipients per 30M block`,
      );
      assert.ok(perRecipient < 40_000n, `gas per recipient ${perRecipient}`);
      assert.ok(receipt.gasUsed < 10_000_000n);
    });

    await t.step("a chunk id pays once; operator only; lengths must match", async () => {
      const to = recipients(2, 3);
      await mined(pay("once", to, [USDC, USDC]));
      await reverts(pay("once", to, [USDC, USDC]), "ChunkAlreadyPaid");
      await reverts(pay("other", to, [USDC, USDC], { from: other }), "NotOperator");
      await reverts(pay("mismatch", to, [USDC]), "LengthMismatch");
      assert.equal(await balanceOf(usdc, to[0]), USDC);
    });

    await t.step("the zero address and an empty payer fail alone", async () => {
      const [a, b] = recipients(2, 4);
      const zero = "0x0000000000000000000000000000000000000000" as Address;
      const before = await balanceOf(usdc, payerAddr);
      const receipt = await mined(pay("mixed", [a, zero, b], [USDC, USDC, 2n * USDC]));
      assert.deepEqual(results(receipt).map((x) => x.ok), [true, false, true]);
      assert.equal(await balanceOf(usdc, payerAddr), before - 3n * USDC);
      // A payer without enough left: the transfers it can cover succeed, in order.
      const poor = recipients(3, 5);
      const rest = await balanceOf(usdc, payerAddr);
      const r2 = await mined(pay("dry", poor, [rest - USDC, 2n * USDC, USDC]));
      assert.deepEqual(results(r2).map((x) => x.ok), [true, false, true]);
      assert.equal(await balanceOf(usdc, payerAddr), 0n);
    });

    await t.step("a contract that rejects tokens, or burns its gas, fails alone", async () => {
      const hook = fixture("HookToken");
      const token = await deploy(hook.abi, hook.bytecode);
      const rejecting = await deploy(
        fixture("RejectingReceiver").abi,
        fixture("RejectingReceiver").bytecode,
      );
      const burner = await deploy(fixture("GasBurner").abi, fixture("GasBurner").bytecode);
      const hookBatch = await deploy(BatchPayout.abi, BatchPayout.bytecode, [
        token,
        operator.account.address,
      ]);
      await mined(operator.writeContract({
        address: token,
        abi: hook.abi,
        functionName: "mint",
        args: [payerAddr, 100n * USDC],
      }));
      await mined(payer.writeContract({
        address: token,
        abi: hook.abi,
        functionName: "approve",
        args: [hookBatch, 100n * USDC],
      }));
      const [a, b] = recipients(2, 6);
      const receipt = await mined(operator.writeContract({
        address: hookBatch,
        abi: BatchPayout.abi,
        functionName: "pay",
        args: [keccak256(toHex("hook")), payerAddr, [a, rejecting, burner, b], [
          USDC,
          USDC,
          USDC,
          USDC,
        ], 0n],
        gas: 5_000_000n,
      }));
      assert.deepEqual(results(receipt).map((x) => x.ok), [true, false, false, true]);
      assert.equal(await balanceOf(token, a), USDC);
      assert.equal(await balanceOf(token, b), USDC);
      assert.equal(await balanceOf(token, rejecting), 0n);
      assert.equal(await balanceOf(token, burner), 0n);
      assert.equal(await balanceOf(token, payerAddr), 98n * USDC);
    });

    await t.step("a token that returns false counts as failed", async () => {
      const f = fixture("FalseToken");
      const token = await deploy(f.abi, f.bytecode);
      const falseBatch = await deploy(BatchPayout.abi, BatchPayout.bytecode, [
        token,
        operator.account.address,
      ]);
      const receipt = await mined(operator.writeContract({
        address: falseBatch,
        abi: BatchPayout.abi,
        functionName: "pay",
        args: [keccak256(toHex("false")), payerAddr, recipients(1, 7), [USDC], 0n],
        gas: 1_000_000n,
      }));
      assert.deepEqual(results(receipt).map((x) => x.ok), [false]);
    });
  } finally {
    await anvil.stop();
  }
});
